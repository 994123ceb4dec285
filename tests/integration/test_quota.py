#!/usr/bin/python3
"""ResourceQuota, LimitRange and the tenant-wide quota against a real ursa-tp-apiserver, with the
kubectl on PATH as a tenant user would run it.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_quota.py
(URSA_TEST=test_a,test_b runs a subset after setup.)"""

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Etcd, check, create_tenant, eq, expect_status, kubectl,  # noqa: E402
                          pod_manifest, run, uniq, wait_until)

S = {}


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("quota")
    create_tenant(S["admin"], S["t"])
    S["kc"] = S["api"].kubeconfig(S["t"], "alice")


def k(*args, input_text=None):
    return kubectl(list(args), S["kc"], input_text=input_text)


def k_ok(*args, input_text=None):
    rc, out, err = k(*args, input_text=input_text)
    check(rc == 0, "kubectl %s: rc %d: %s" % (" ".join(args), rc, err))
    return out


def ns_path(tenant, ns, plural, name=None):
    p = "/api/v1/tenants/%s/namespaces/%s/%s" % (tenant, ns, plural)
    return p + "/" + name if name else p


def pod(name, cpu=None, limit_cpu=None, deadline=None):
    m = pod_manifest(name)
    res = {}
    if cpu:
        res["requests"] = {"cpu": cpu}
    if limit_cpu:
        res["limits"] = {"cpu": limit_cpu}
    if res:
        m["spec"]["containers"][0]["resources"] = res
    if deadline is not None:
        m["spec"]["activeDeadlineSeconds"] = deadline
    return m


def apply_pod(ns, manifest):
    return k("apply", "-n", ns, "-f", "-", input_text=json.dumps(manifest))


def create_ns(name):
    k_ok("create", "namespace", name)


def quota_status(ns, name):
    r = S["admin"].get(ns_path(S["t"], ns, "resourcequotas", name))
    expect_status(r, 200, "get quota")
    return r.json.get("status") or {}


def test_fourth_pod_is_refused_with_kubernetes_message():
    create_ns("team")
    k_ok("create", "quota", "q", "--hard=pods=3,requests.cpu=1", "-n", "team")
    for i in range(1, 4):
        rc, out, err = apply_pod("team", pod("p%d" % i, cpu="100m"))
        check(rc == 0, "pod p%d: %s" % (i, err))
    rc, out, err = apply_pod("team", pod("p4", cpu="100m"))
    check(rc != 0, "the fourth pod was admitted: %s" % out)
    want = ('pods "p4" is forbidden: exceeded quota: q, requested: pods=1, used: pods=3, '
            'limited: pods=3')
    check(want in err, "message: %r" % err)
    check("(Forbidden)" in err, "reason Forbidden: %r" % err)
    r = S["admin"].get(ns_path(S["t"], "team", "pods", "p4"))
    eq(r.status, 404, "refused pod is not stored")


def test_refusal_status_is_403_forbidden_with_several_resources_sorted():
    create_ns("team2")
    k_ok("create", "quota", "q2", "--hard=pods=2,requests.cpu=1", "-n", "team2")
    c = S["api"].user_client(S["t"], "alice")
    expect_status(c.post(ns_path(S["t"], "team2", "pods"), pod("a", cpu="600m")), 201, "pod a")
    r = c.post(ns_path(S["t"], "team2", "pods"), pod("b", cpu="500m"))
    expect_status(r, 403, "pod b", reason="Forbidden")
    eq(r.json["message"], 'pods "b" is forbidden: exceeded quota: q2, requested: requests.cpu=500m, '
       'used: requests.cpu=600m, limited: requests.cpu=1', "message")
    eq(r.json["details"]["name"], "b", "details.name")
    eq(r.json["details"]["kind"], "pods", "details.kind")
    expect_status(c.post(ns_path(S["t"], "team2", "pods"), pod("c", cpu="400m")), 201, "pod c fits")
    r = c.post(ns_path(S["t"], "team2", "pods"), pod("d", cpu="2"))
    expect_status(r, 403, "pod d")
    eq(r.json["message"], 'pods "d" is forbidden: exceeded quota: q2, requested: pods=1,requests.cpu=2, '
       'used: pods=2,requests.cpu=1, limited: pods=2,requests.cpu=1', "message of two resources")


def test_pod_without_cpu_request_must_specify_it():
    rc, out, err = apply_pod("team", pod("nocpu"))
    check(rc != 0, "admitted: %s" % out)
    check('pods "nocpu" is forbidden: failed quota: q: must specify requests.cpu' in err, err)


def test_describe_quota_shows_used_and_hard():
    def described():
        out = k_ok("describe", "quota", "q", "-n", "team")
        return re.search(r"pods\s+3\s+3", out) and re.search(r"requests\.cpu\s+300m\s+1", out) and out
    out = wait_until(described, 15, "kubectl describe quota shows pods 3/3")
    check("Resource" in out and "Used" in out and "Hard" in out, out)
    st = quota_status("team", "q")
    eq(st["hard"], {"pods": "3", "requests.cpu": "1"}, "status.hard")
    eq(st["used"], {"pods": "3", "requests.cpu": "300m"}, "status.used")
    out = k_ok("get", "quota", "-n", "team")
    check(re.search(r"q\s+\S+\s+pods: 3/3, requests\.cpu: 300m/1", out), "kubectl get quota: %r" % out)


def test_usage_falls_when_a_pod_is_deleted():
    k_ok("delete", "pod", "p1", "-n", "team", "--wait=false")
    wait_until(lambda: quota_status("team", "q").get("used", {}).get("pods") == "2", 15,
               "status.used.pods is 2 after a delete")
    rc, out, err = apply_pod("team", pod("p4", cpu="100m"))
    check(rc == 0, "p4 after the delete: %s" % err)


def test_terminal_pods_do_not_count():
    create_ns("term")
    k_ok("create", "quota", "q", "--hard=pods=1", "-n", "term")
    c = S["admin"]
    expect_status(c.post(ns_path(S["t"], "term", "pods"), pod("done")), 201, "pod done")
    expect_status(c.post(ns_path(S["t"], "term", "pods"), pod("more")), 403, "second pod")
    r = c.patch(ns_path(S["t"], "term", "pods", "done") + "/status", {"status": {"phase": "Succeeded"}})
    expect_status(r, 200, "pod done Succeeded")
    wait_until(lambda: c.post(ns_path(S["t"], "term", "pods"), pod("more")).status == 201, 15,
               "a pod fits once the other is terminal")


def test_scopes():
    create_ns("scoped")
    k_ok("create", "quota", "be", "--hard=pods=1", "--scopes=BestEffort", "-n", "scoped")
    c = S["admin"]
    expect_status(c.post(ns_path(S["t"], "scoped", "pods"), pod("be1")), 201, "best-effort pod")
    r = c.post(ns_path(S["t"], "scoped", "pods"), pod("be2"))
    expect_status(r, 403, "second best-effort pod")
    eq(r.json["message"], 'pods "be2" is forbidden: exceeded quota: be, requested: pods=1, used: pods=1, '
       'limited: pods=1', "message")
    expect_status(c.post(ns_path(S["t"], "scoped", "pods"), pod("burst", cpu="100m")), 201,
                  "a pod with requests is not BestEffort")
    k_ok("create", "quota", "term", "--hard=pods=0", "--scopes=Terminating", "-n", "scoped")
    r = c.post(ns_path(S["t"], "scoped", "pods"), pod("dl", cpu="100m", deadline=60))
    expect_status(r, 403, "a terminating pod under pods=0")
    check("exceeded quota: term" in r.json["message"], r.json["message"])


def test_invalid_quota_is_422_and_not_stored():
    c = S["admin"]
    body = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": "bad"},
            "spec": {"hard": {"pods": "abc", "requests.cpu": "1"}}}
    r = c.post(ns_path(S["t"], "default", "resourcequotas"), body)
    expect_status(r, 422, "quota with pods: abc", reason="Invalid")
    fields = [x.get("field") for x in r.json["details"]["causes"]]
    eq(fields, ["spec.hard[pods]"], "causes")
    eq(c.get(ns_path(S["t"], "default", "resourcequotas", "bad")).status, 404, "bad quota not stored")
    body["spec"] = {"hard": {"bananas": "1"}}
    r = c.post(ns_path(S["t"], "default", "resourcequotas"), body)
    expect_status(r, 422, "unknown key")
    eq(r.json["details"]["causes"][0]["field"], "spec.hard[bananas]", "cause field")
    body["spec"] = {"hard": {"pods": "1"}, "scopes": ["Sometimes"]}
    r = c.post(ns_path(S["t"], "default", "resourcequotas"), body)
    expect_status(r, 422, "unknown scope")
    eq(r.json["details"]["causes"][0]["field"], "spec.scopes[0]", "cause field")
    body["spec"] = {"hard": {"services": "1"}, "scopes": ["BestEffort"]}
    expect_status(c.post(ns_path(S["t"], "default", "resourcequotas"), body), 422, "count with scopes")


def test_object_counts():
    create_ns("counts")
    k_ok("create", "quota", "objs", "--hard=configmaps=1,count/deployments.apps=0", "-n", "counts")
    k_ok("create", "configmap", "one", "-n", "counts")
    rc, out, err = k("create", "configmap", "two", "-n", "counts")
    check(rc != 0 and 'configmaps "two" is forbidden: exceeded quota: objs, requested: configmaps=1, '
          'used: configmaps=1, limited: configmaps=1' in err, err)
    rc, out, err = k("create", "deployment", "d", "--image=nginx", "-n", "counts")
    check(rc != 0 and "exceeded quota: objs, requested: count/deployments.apps=1" in err, err)


def test_limitrange_defaults_and_maximum():
    create_ns("lr")
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": {"name": "limits"},
          "spec": {"limits": [{"type": "Container", "default": {"cpu": "500m"},
                               "defaultRequest": {"cpu": "200m"}, "max": {"cpu": "1"}}]}}
    k_ok("apply", "-n", "lr", "-f", "-", input_text=json.dumps(lr))
    k_ok("create", "quota", "q", "--hard=requests.cpu=1", "-n", "lr")
    rc, out, err = apply_pod("lr", pod("plain"))
    check(rc == 0, "a pod without requests, defaulted before the quota: %s" % err)
    out = k_ok("get", "pod", "plain", "-n", "lr", "-o", "json")
    res = json.loads(out)["spec"]["containers"][0]["resources"]
    eq(res, {"requests": {"cpu": "200m"}, "limits": {"cpu": "500m"}}, "defaulted resources")
    rc, out, err = apply_pod("lr", pod("big", cpu="1", limit_cpu="2"))
    check(rc != 0 and 'pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2' in err,
          err)
    out = k_ok("get", "limits", "-n", "lr")
    check("limits" in out and "CREATED AT" in out, out)
    bad = dict(lr, metadata={"name": "bad"},
               spec={"limits": [{"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}}]})
    r = S["admin"].post(ns_path(S["t"], "lr", "limitranges"), bad)
    expect_status(r, 422, "min above max")


def test_tenant_quota_across_namespaces():
    a = S["admin"]
    t = uniq("tq")
    create_tenant(a, t)
    r = a.get("/api/v1/tenants/" + t)
    ten = r.json
    ten["spec"]["quota"] = {"hard": {"pods": "3", "requests.cpu": "2"}}
    expect_status(a.put("/api/v1/tenants/" + t, ten), 200, "set the tenant quota")
    bad = a.get("/api/v1/tenants/" + t).json
    bad["spec"]["quota"] = {"hard": {"pods": "many"}}
    del bad["metadata"]["resourceVersion"]  # the server writes status.quota meanwhile: no 409
    r = a.put("/api/v1/tenants/" + t, bad)
    expect_status(r, 422, "tenant quota not a quantity")
    eq(r.json["details"]["causes"][0]["field"], "spec.quota.hard[pods]", "cause field")
    kc = S["api"].kubeconfig(t, "ops")
    c = S["api"].user_client(t, "ops")
    for ns in ("one", "two"):
        rc, out, err = kubectl(["create", "namespace", ns], kc)
        check(rc == 0, err)
    for ns, name in (("one", "a"), ("one", "b"), ("two", "c")):
        expect_status(c.post(ns_path(t, ns, "pods"), pod(name, cpu="100m")), 201, "pod %s/%s" % (ns, name))
    r = c.post(ns_path(t, "two", "pods"), pod("d", cpu="100m"))
    expect_status(r, 403, "the fourth pod of the tenant", reason="Forbidden")
    eq(r.json["message"], 'pods "d" is forbidden: exceeded tenant quota: %s, requested: pods=1, used: pods=3, '
       'limited: pods=3' % t, "message")
    wait_until(lambda: ((a.get("/api/v1/tenants/" + t).json.get("status") or {}).get("quota") or {})
               .get("used") == {"pods": "3", "requests.cpu": "300m"}, 15, "tenant status.quota.used")
    eq(a.get("/api/v1/tenants/" + t).json["status"]["phase"], "Active", "phase kept")
    # the tenant's own users cannot lift it
    u = S["api"].user_client(t, "ops")
    ten = a.get("/api/v1/tenants/" + t).json
    ten["spec"]["quota"] = {"hard": {"pods": "100"}}
    check(u.put("/api/v1/tenants/" + t, ten).status == 403,
          "a tenant user may not change the tenant quota")
    expect_status(c.delete(ns_path(t, "one", "pods", "a")), 200, "delete a")
    wait_until(lambda: c.post(ns_path(t, "two", "pods"), pod("d", cpu="100m")).status == 201, 15,
               "a pod fits after a delete in another namespace")


if __name__ == "__main__":
    run(globals())
