"""`kubectl get all` as a tenant administrator against real etcd + ursa-tp-apiserver + the TP
controller manager: every kind of the `all` category is served (a tenant's daemonsets always
empty and not writable), and autoscaling/v2 HorizontalPodAutoscalers are stored and printed."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

CM_BIN = os.path.join(H.BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
S = {}

STS = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
       "spec": {"serviceName": "db", "replicas": 1, "selector": {"matchLabels": {"app": "db"}},
                "template": {"metadata": {"labels": {"app": "db"}},
                             "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}}}}
DS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
      "spec": {"selector": {"matchLabels": {"app": "agent"}},
               "template": {"metadata": {"labels": {"app": "agent"}},
                            "spec": {"containers": [{"name": "a", "image": "busybox"}]}}}}


def hpa(name, min_r, max_r, kind="Deployment", target="web"):
    spec = {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": kind, "name": target}, "maxReplicas": max_r}
    if min_r is not None:
        spec["minReplicas"] = min_r
    return {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
            "spec": spec}


def setup():
    H.require_binary(CM_BIN, "ursa-tp-controller-manager")
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    H.create_tenant(S["admin"], "acme")
    S["kc"] = S["api"].kubeconfig("acme", "alice")  # the tenant's administrator
    log = os.path.join(S["api"].dir, "cm.log")
    H._logs.append(("controller-manager", log))
    S["cm"] = H.spawn([CM_BIN, "--kubeconfig", S["api"].admin_kubeconfig(), "--identity", "cm-a"], log)


def kc(*args, ok=True, input_text=None):
    rc, out, err = kubectl(list(args), S["kc"], input_text=input_text)
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return rc, out, err


def rows(out):
    return [line.split()[0] for line in out.splitlines() if line.strip() and not line.startswith("NAME")]


def test_get_all():
    kc("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    kc("create", "job", "once", "--image=busybox")
    kc("create", "service", "clusterip", "web", "--tcp=80:80")
    kc("create", "-f", "-", input_text=json.dumps(STS))
    wait_until(lambda: len(S["admin"].get(pods_path("acme")).json.get("items") or []) >= 4, 40,
               "pods of the deployment, the job and the statefulset")
    _, out, err = kc("get", "all")
    names = rows(out)
    for prefix in ("pod/web-", "pod/once-", "pod/db-0", "service/web", "deployment.apps/web",
                   "replicaset.apps/web-", "statefulset.apps/db", "job.batch/once"):
        check(any(n.startswith(prefix) for n in names), "get all lists %s: %s" % (prefix, out))
    check("daemonset" not in out, "no daemonsets listed: " + out)
    _, out, _ = kc("get", "all", "-A")
    check(any(line.split()[:2] == ["default", "deployment.apps/web"] for line in out.splitlines()),
          "get all -A lists the deployment with its namespace: " + out)
    _, out, _ = kc("get", "daemonsets", "-A")
    check(rows(out) == [], "a tenant's daemonsets are empty: " + out)


def test_daemonset_forbidden():
    rc, out, err = kc("create", "-f", "-", ok=False, input_text=json.dumps(DS))
    check(rc != 0 and "Forbidden" in err, "tenant DaemonSet create is 403: rc=%s err=%s" % (rc, err))
    r = S["admin"].post("/apis/apps/v1/tenants/acme/namespaces/default/daemonsets", DS)
    check(r.status in (200, 201), "a system admin may write one: %s" % r.status)  # admin bypass still works
    S["admin"].delete("/apis/apps/v1/tenants/acme/namespaces/default/daemonsets/agent")


def test_hpa():
    kc("create", "-f", "-", input_text=json.dumps(hpa("web", 2, 5)))
    _, out, _ = kc("get", "hpa")
    lines = out.splitlines()
    eq(lines[0].split(), ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"], "hpa header")
    cols = lines[1].split()
    eq(cols[:2], ["web", "Deployment/web"], "hpa row")
    eq(cols[-4:-1], ["2", "5", "0"], "min/max/replicas")
    check("cpu: <unknown>/80%" in lines[1], "default cpu target: " + lines[1])
    got = S["admin"].get("/apis/autoscaling/v2/tenants/acme/namespaces/default/horizontalpodautoscalers/web").json
    eq(got["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"], 80, "default metric")
    _, out, _ = kc("get", "all")
    check("horizontalpodautoscaler.autoscaling/web" in out, "get all lists the hpa: " + out)
    for bad, field in ((hpa("bad1", 3, 2), "spec.maxReplicas"), (hpa("bad2", 0, 2), "spec.minReplicas"),
                       (hpa("bad3", None, 2, kind=""), "spec.scaleTargetRef.kind")):
        r = S["admin"].post("/apis/autoscaling/v2/tenants/acme/namespaces/default/horizontalpodautoscalers", bad)
        expect_status(r, 422, "invalid hpa " + bad["metadata"]["name"], "Invalid")
        check(field in json.dumps(r.json), "%s names %s: %s" % (bad["metadata"]["name"], field, r.json))
    rc, _, err = kc("create", "-f", "-", ok=False, input_text=json.dumps(hpa("bad4", 4, 1)))
    check(rc != 0 and "is invalid" in err, "kubectl create of a bad hpa fails: " + err)


def test_namespace_deletion_takes_hpas():
    kc("create", "namespace", "scratch")
    kc("create", "-n", "scratch", "-f", "-", input_text=json.dumps(hpa("h", 1, 2)))
    def hpa_keys():
        return [k for k in S["etcd"].keys("/registry/") if "horizontalpodautoscalers" in k and "/scratch/" in k]
    eq(len(hpa_keys()), 1, "the hpa's etcd key before deletion")
    kc("delete", "namespace", "scratch", "--wait=false")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/scratch").status == 404, 40,
               "namespace scratch gone with its hpa")
    eq(hpa_keys(), [], "etcd keys of the deleted namespace's hpas")


run(globals())
