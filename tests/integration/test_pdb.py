"""policy/v1 PodDisruptionBudgets against real etcd, a real ursa-tp-apiserver and
ursa-tp-controller-manager: `kubectl create pdb` and `kubectl get pdb`, validation (422 for
both bounds), the disruption controller's status (currentHealthy, desiredHealthy, expectedPods
from a Deployment's scale, disruptionsAllowed, the DisruptionAllowed condition, disruptedPods),
and the eviction subresource honouring it: 429 with Kubernetes' message and cause when a
disruption would break the budget (raw POST and `kubectl create --raw`, as `kubectl drain`
posts it; drain itself needs nodes from a resource manager, which this test does not run), one
eviction allowed with 3 pods then 429, a not-ready pod evicted while the budget is met, and 500
for a pod with two budgets.

No kubelet runs: a pod's phase and readiness are set through pods/status as the admin, as a
kubelet would report them."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

S = {}
MESSAGE = "Cannot evict pod as it would violate the pod's disruption budget."


def pdb_path(name=None, tenant="acme", ns="default"):
    p = "/apis/policy/v1/tenants/%s/namespaces/%s/poddisruptionbudgets" % (tenant, ns)
    return p + "/" + name if name else p


def setup():
    S.update(H.start_tp_with_controllers())  # kc: the tenant's administrator
    S["alice"] = S["api"].client(H.kubeconfig_token(S["kc"]))


def kc(*args, ok=True):
    rc, out, err = kubectl(list(args), S["kc"])
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return rc, out, err


def report(name, ready, ns="default"):
    """What a kubelet would write: the pod Running, Ready or not."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for _ in range(10):
        cur = S["admin"].get(pods_path("acme", ns, name)).json
        cur["status"] = {"phase": "Running", "podIP": "10.244.9.9",
                         "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                         "lastTransitionTime": now}]}
        r = S["admin"].put(pods_path("acme", ns, name) + "/status", cur)
        if r.status == 200:
            return
    raise AssertionError("pod status not written: %r" % r)


def make_pod(name, labels, ready=True):
    expect_status(S["alice"].post(pods_path("acme"), pod_manifest(name, labels=labels)), 201, "pod " + name)
    report(name, ready)


def evict(name, client=None):
    body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": "default"}}
    return (client or S["alice"]).post(pods_path("acme", "default", name) + "/eviction", body)


def status_is(name, **want):
    def pred():
        r = S["admin"].get(pdb_path(name))
        if r.status != 200:
            return None
        st = r.json.get("status") or {}
        if r.json["metadata"].get("generation") != st.get("observedGeneration"):
            return None
        return st if all(st.get(k) == v for k, v in want.items()) else None
    return wait_until(pred, 30, "status of pdb %s: %r" % (name, want))


def expect_429(r, pdb, desired, current):
    expect_status(r, 429, "eviction refused")
    eq(r.json["reason"], "TooManyRequests", "reason")
    eq(r.json["message"], MESSAGE, "message")
    causes = (r.json.get("details") or {}).get("causes") or []
    eq(causes, [{"type": "DisruptionBudget", "message": "The disruption budget %s needs %d healthy pods and has %d "
                 "currently" % (pdb, desired, current)}], "causes")


# ---- the kind ---------------------------------------------------------------------------------

def test_create_get_validate():
    kc("create", "pdb", "db", "--selector=app=db", "--min-available=2")
    r = S["alice"].get(pdb_path("db"))
    expect_status(r, 200, "pdb made by kubectl")
    eq(r.json["spec"]["minAvailable"], 2, "minAvailable")
    eq(r.json["spec"]["selector"], {"matchLabels": {"app": "db"}}, "selector")
    eq(r.json["metadata"]["generation"], 1, "generation")
    _, out, _ = kc("get", "pdb")
    lines = out.splitlines()
    eq(lines[0].split(), ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"],
       "columns: " + out)
    eq(lines[1].split()[:4], ["db", "2", "N/A", "0"], "row: " + out)
    _, out, _ = kc("get", "poddisruptionbudgets.policy", "db", "-o", "jsonpath={.kind}")
    eq(out, "PodDisruptionBudget", "kind")
    both = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "both"},
            "spec": {"minAvailable": 1, "maxUnavailable": "50%", "selector": {"matchLabels": {"app": "x"}}}}
    r = S["alice"].post(pdb_path(), both)
    expect_status(r, 422, "both bounds")
    check("minAvailable and maxUnavailable cannot be both set" in r.json["message"], r.json["message"])
    eq(r.json["details"]["causes"][0]["field"], "spec.minAvailable", "field")
    bad = dict(both, spec={"maxUnavailable": "150%", "selector": {}})
    expect_status(S["alice"].post(pdb_path(), bad), 422, "over 100%")
    rc, _, err = kc("create", "pdb", "both2", "--selector=app=x", "--min-available=1", "--max-unavailable=1",
                    ok=False)
    check(rc != 0, "kubectl refuses both: " + err)


# ---- the controller and evictions -------------------------------------------------------------

def test_two_ready_pods_min_available_two_is_429():
    make_pod("db-0", {"app": "db"})
    make_pod("db-1", {"app": "db"})
    st = status_is("db", currentHealthy=2, desiredHealthy=2, expectedPods=2, disruptionsAllowed=0)
    cond = st["conditions"][0]
    eq((cond["type"], cond["status"], cond["reason"]), ("DisruptionAllowed", "False", "InsufficientPods"), "cond")
    expect_429(evict("db-0"), "db", 2, 2)
    # as kubectl drain posts it (drain needs the RM's nodes; this is its request)
    body = os.path.join(S["api"].dir, "eviction.json")
    with open(body, "w") as f:
        json.dump({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "db-1"}}, f)
    rc, out, err = kc("create", "--raw", "/api/v1/namespaces/default/pods/db-1/eviction", "-f", body, ok=False)
    check(rc != 0 and "TooManyRequests" in err and MESSAGE in err, "kubectl eviction: rc=%s %s %s" % (rc, out, err))
    eq(S["admin"].get(pods_path("acme", "default", "db-0")).status, 200, "db-0 still there")
    eq(S["admin"].get(pods_path("acme", "default", "db-1")).status, 200, "db-1 still there")


def test_three_pods_one_eviction_then_429():
    make_pod("db-2", {"app": "db"})
    status_is("db", currentHealthy=3, desiredHealthy=2, disruptionsAllowed=1)
    r = evict("db-0")
    expect_status(r, 201, "first eviction allowed")
    eq(r.json["status"], "Success", "status")
    wait_until(lambda: S["admin"].get(pods_path("acme", "default", "db-0")).status == 404, 30, "db-0 deleted")
    # charged at once, before the controller looks again
    expect_429(evict("db-1"), "db", 2, 2)
    st = status_is("db", currentHealthy=2, desiredHealthy=2, disruptionsAllowed=0)
    check("db-0" not in (st.get("disruptedPods") or {}), "disruptedPods released once db-0 is gone: %r" % st)
    # a not-ready pod goes while the budget is met (IfHealthyBudget)
    make_pod("db-3", {"app": "db"}, ready=False)
    status_is("db", currentHealthy=2, desiredHealthy=2, disruptionsAllowed=0, expectedPods=3)
    expect_status(evict("db-3"), 201, "unhealthy pod evicted")
    # a pod no budget selects is evicted as before; an absent one is 404
    make_pod("free", {"app": "other"})
    expect_status(evict("free"), 201, "pod without budget")
    expect_status(evict("nope"), 404, "absent pod")


def test_spec_change_and_two_budgets():
    r = S["alice"].patch(pdb_path("db"), {"spec": {"minAvailable": 1}})
    expect_status(r, 200, "lower minAvailable")
    eq(r.json["metadata"]["generation"], 2, "generation bumped")
    st = status_is("db", currentHealthy=2, desiredHealthy=1, disruptionsAllowed=1)
    eq(st["conditions"][0]["reason"], "SufficientPods", "reason")
    second = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "db-too"},
              "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": "db"}}}}
    expect_status(S["alice"].post(pdb_path(), second), 201, "second budget")
    r = evict("db-1")
    expect_status(r, 500, "two budgets")
    check("more than one PodDisruptionBudget" in r.json["message"], r.json["message"])
    expect_status(S["alice"].delete(pdb_path("db-too")), 200, "delete second")


def test_max_unavailable_reads_deployment_scale():
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
           "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    expect_status(S["alice"].post(deployments_path("acme"), dep), 201, "deployment")
    items = wait_until(lambda: (lambda l: l if len(l) == 3 else None)(
        S["admin"].get(pods_path("acme") + q(labelSelector="app=web")).json.get("items") or []), 30, "3 web pods")
    for p in items[:2]:
        report(p["metadata"]["name"], True)
    kc("create", "pdb", "web", "--selector=app=web", "--max-unavailable=1")
    # expected pods from the Deployment's scale (3), not the 2 healthy ones
    status_is("web", expectedPods=3, desiredHealthy=2, currentHealthy=2, disruptionsAllowed=0)
    expect_429(evict(items[0]["metadata"]["name"]), "web", 2, 2)
    report(items[2]["metadata"]["name"], True)
    status_is("web", expectedPods=3, desiredHealthy=2, currentHealthy=3, disruptionsAllowed=1)
    _, out, _ = kc("get", "pdb", "web")
    eq(out.splitlines()[1].split()[:4], ["web", "N/A", "1", "1"], "row: " + out)


def test_namespace_deletion_takes_budgets():
    S["admin"].post("/api/v1/tenants/acme/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "tmp"}})
    p = {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "t"},
         "spec": {"minAvailable": 1, "selector": {}}}
    expect_status(S["admin"].post(pdb_path(ns="tmp"), p), 201, "pdb in tmp")
    S["admin"].delete("/api/v1/tenants/acme/namespaces/tmp")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/tmp").status == 404, 60, "tmp gone")
    eq([k for k in S["etcd"].keys("/registry/") if "/acme/tmp/" in k], [], "etcd keys of tmp")


run(globals())
