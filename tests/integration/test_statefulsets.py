"""StatefulSets (apps/v1), ControllerRevisions and PersistentVolumeClaims against real etcd +
ursa-tp-apiserver + ursa-tp-controller-manager.

No kubelet (and no scheduler) runs here: the test plays the kubelet by setting a pod's phase to
Running and its Ready condition to True through the pods/status subresource as the partition's
admin. No storage provider runs either, so claims stay Pending (which is what is checked)."""
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

S = {}
STS = "/apis/apps/v1/tenants/acme/namespaces/default/statefulsets"
REVS = "/apis/apps/v1/tenants/acme/namespaces/default/controllerrevisions"
PVCS = "/api/v1/tenants/acme/namespaces/default/persistentvolumeclaims"
PVS = "/api/v1/tenants/acme/persistentvolumes"


def setup():
    S.update(H.start_tp_with_controllers(identity="cm-a"))


def kc(*args, ok=True, input_text=None):
    rc, out, err = kubectl(list(args), S["kc"], input_text=input_text)
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return out if ok else (rc, out, err)


def sts(name):
    r = S["admin"].get(STS + "/" + name)
    return r.json if r.status == 200 else None


def set_pods(app):
    items = S["admin"].get(pods_path("acme") + q(labelSelector="app=" + app)).json.get("items") or []
    return {p["metadata"]["name"]: p for p in items if not p["metadata"].get("deletionTimestamp")}


def make_ready(name):
    """Plays the kubelet for one pod: Running and Ready."""
    for _ in range(5):
        p = S["admin"].get(pods_path("acme", "default", name)).json
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        p["status"] = {"phase": "Running", "podIP": "10.0.0.1",
                       "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}]}
        r = S["admin"].put(pods_path("acme", "default", name) + "/status", p)
        if r.status == 200:
            return
    raise AssertionError("pod status not written: %r" % r)


def manifest(name, replicas=3, image="nginx:1.25", policy=None, claims=True):
    spec = {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                         "spec": {"containers": [{"name": "c", "image": image}]}}}
    if policy:
        spec["podManagementPolicy"] = policy
    if claims:
        spec["volumeClaimTemplates"] = [{"metadata": {"name": "data"},
                                         "spec": {"accessModes": ["ReadWriteOnce"],
                                                  "resources": {"requests": {"storage": "1Gi"}}}}]
    return {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name}, "spec": spec}


def bring_up_in_order(app, n, start=0):
    """Walks an OrderedReady set up: each pod appears only after the previous one is Ready."""
    for i in range(start, n):
        name = "%s-%d" % (app, i)
        wait_until(lambda: name in set_pods(app), 20, "pod %s" % name)
        time.sleep(0.7)
        later = [p for p in set_pods(app) if int(p.rsplit("-", 1)[1]) > i]
        eq(later, [], "no pod after %s before it is Ready" % name)
        make_ready(name)


def test_pvc_and_pv_kinds():
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "solo"},
           "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}
    kc("apply", "-f", "-", input_text=json.dumps(pvc))
    got = S["admin"].get(PVCS + "/solo").json
    eq(got["status"]["phase"], "Pending", "claim phase")
    eq(got["spec"]["volumeMode"], "Filesystem", "volumeMode default")
    out = kc("get", "pvc")
    eq(out.splitlines()[0].split(), ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS", "MODES", "STORAGECLASS",
                                     "AGE"], "pvc columns")
    eq(out.splitlines()[1].split()[:3], ["solo", "Pending", "<unset>"], "pvc row")
    bad = json.loads(json.dumps(pvc))
    bad["metadata"]["name"] = "bad"
    bad["spec"]["accessModes"] = ["ReadWriteSometimes"]
    bad["spec"]["resources"]["requests"]["storage"] = "lots"
    r = S["admin"].post(PVCS, bad)
    expect_status(r, 422, "bad claim")
    fields = sorted(c["field"] for c in r.json["details"]["causes"])
    eq(fields, ["spec.accessModes[0]", "spec.resources[storage]"], "bad claim fields")
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "vol1"},
          "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}, "hostPath": {"path": "/x"}}}
    kc("create", "-f", "-", input_text=json.dumps(pv))
    got = S["admin"].get(PVS + "/vol1").json
    eq((got["status"]["phase"], got["spec"]["persistentVolumeReclaimPolicy"]), ("Available", "Retain"), "pv")
    check("vol1" in kc("get", "pv"), "kubectl get pv")
    del pv["spec"]["capacity"]
    pv["metadata"]["name"] = "vol2"
    expect_status(S["admin"].post(PVS, pv), 422, "pv without capacity")


def test_validation():
    m = manifest("bad")
    m["spec"]["template"]["metadata"]["labels"] = {"app": "other"}
    r = S["admin"].post(STS, m)
    expect_status(r, 422, "selector not matching template labels")
    m = manifest("bad")
    m["spec"]["podManagementPolicy"] = "Whenever"
    expect_status(S["admin"].post(STS, m), 422, "bad podManagementPolicy")


def test_ordered_bring_up_claims_and_columns():
    kc("apply", "-f", "-", input_text=json.dumps(manifest("db")))
    spec = sts("db")["spec"]
    eq((spec["podManagementPolicy"], spec["updateStrategy"], spec["revisionHistoryLimit"]),
       ("OrderedReady", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}, 10), "defaults")
    bring_up_in_order("db", 3)
    wait_until(lambda: (sts("db").get("status") or {}).get("readyReplicas") == 3, 20, "3 ready")
    pods = set_pods("db")
    eq(sorted(pods), ["db-0", "db-1", "db-2"], "pod names")
    p1 = pods["db-1"]
    eq((p1["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        p1["metadata"]["labels"]["apps.kubernetes.io/pod-index"], p1["spec"]["hostname"], p1["spec"]["subdomain"]),
       ("db-1", "1", "db-1", "db"), "pod identity")
    vols = {v["name"]: v for v in p1["spec"].get("volumes") or []}
    eq(vols["data"]["persistentVolumeClaim"]["claimName"], "data-db-1", "pod volume")
    ref = p1["metadata"]["ownerReferences"][0]
    eq((ref["kind"], ref["name"], ref["controller"]), ("StatefulSet", "db", True), "owner")
    claims = {c["metadata"]["name"]: c for c in S["admin"].get(PVCS).json["items"]}
    for i in range(3):
        c = claims["data-db-%d" % i]
        eq((c["status"]["phase"], c["metadata"]["labels"]["app"]), ("Pending", "db"), "claim %d" % i)
    st = sts("db")["status"]
    check(st["currentRevision"] and st["currentRevision"] == st["updateRevision"], "revisions %r" % st)
    eq(p1["metadata"]["labels"]["controller-revision-hash"], st["updateRevision"], "pod revision label")
    out = kc("get", "statefulsets")
    eq(out.splitlines()[0].split(), ["NAME", "READY", "AGE"], "columns")
    eq(out.splitlines()[1].split()[:2], ["db", "3/3"], "row")
    out = kc("get", "sts", "-o", "wide")
    eq(out.splitlines()[0].split(), ["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"], "wide columns")
    out = kc("rollout", "status", "statefulset/db", "--timeout=20s")
    check("roll out complete" in out, out)


def test_scale_down_from_the_top():
    # a finalizer holds db-2 terminating: db-1 must wait for it (one at a time, from the top)
    path2 = pods_path("acme", "default", "db-2")
    r = S["admin"].patch(path2, {"metadata": {"finalizers": ["test.ursa/hold"]}}, "application/merge-patch+json")
    eq(r.status, 200, "finalizer on db-2")
    kc("scale", "statefulset", "db", "--replicas=1")
    wait_until(lambda: S["admin"].get(path2).json["metadata"].get("deletionTimestamp"), 20, "db-2 terminating")
    time.sleep(1.5)
    eq(sorted(set_pods("db")), ["db-0", "db-1"], "db-1 kept while db-2 terminates")
    r = S["admin"].patch(path2, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    eq(r.status, 200, "finalizer removed")
    wait_until(lambda: sorted(set_pods("db")) == ["db-0"], 20, "scaled to 1")
    claims = [c["metadata"]["name"] for c in S["admin"].get(PVCS).json["items"]]
    check("data-db-1" in claims and "data-db-2" in claims, "claims kept: %r" % claims)
    kc("scale", "statefulset", "db", "--replicas=3")
    bring_up_in_order("db", 3, start=1)
    wait_until(lambda: (sts("db").get("status") or {}).get("readyReplicas") == 3, 20, "3 ready again")


def test_rolling_update_and_undo():
    rev1 = sts("db")["status"]["updateRevision"]
    kc("set", "image", "statefulset/db", "c=nginx:1.26")
    wait_until(lambda: sts("db")["status"].get("updateRevision") not in (None, rev1), 20, "new revision")
    rev2 = sts("db")["status"]["updateRevision"]
    order = []
    for name in ("db-2", "db-1", "db-0"):
        def replaced():
            p = set_pods("db").get(name)
            return p if p and p["metadata"]["labels"]["controller-revision-hash"] == rev2 else None
        p = wait_until(replaced, 20, "%s at the new revision" % name)
        eq(p["spec"]["containers"][0]["image"], "nginx:1.26", "image of %s" % name)
        others = [n for n, q_ in set_pods("db").items()
                  if n != name and q_["metadata"]["labels"]["controller-revision-hash"] == rev2]
        eq(sorted(others), sorted(order), "one pod at a time, from the top")
        order.append(name)
        make_ready(name)
    st = wait_until(lambda: (lambda s: s if s.get("currentRevision") == rev2 and s.get("updatedReplicas") == 3
                             else None)(sts("db")["status"]), 20, "update complete")
    hist = kc("rollout", "history", "statefulset/db")
    check("1" in hist.split() and "2" in hist.split(), hist)
    revs = S["admin"].get(REVS).json["items"]
    eq(sorted(r["revision"] for r in revs), [1, 2], "two revisions")
    out = kc("rollout", "undo", "statefulset/db")
    check("rolled back" in out, out)
    eq(sts("db")["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:1.25", "template restored")
    wait_until(lambda: sts("db")["status"].get("updateRevision") == rev1, 20, "update revision back to rev1")
    for name in ("db-2", "db-1", "db-0"):
        wait_until(lambda: (set_pods("db").get(name) or {"metadata": {"labels": {}}})["metadata"]["labels"]
                   .get("controller-revision-hash") == rev1, 20, "%s rolled back" % name)
        make_ready(name)
    wait_until(lambda: sts("db")["status"].get("currentRevision") == rev1, 20, "rollback complete")
    revs = {r["metadata"]["name"]: r["revision"] for r in S["admin"].get(REVS).json["items"]}
    eq(revs[rev1], 3, "the restored revision is the newest")
    kc("rollout", "status", "statefulset/db", "--timeout=20s")


def test_partition_and_on_delete():
    kc("patch", "statefulset", "db", "-p", '{"spec":{"updateStrategy":{"rollingUpdate":{"partition":2}}}}')
    kc("set", "image", "statefulset/db", "c=nginx:1.27")
    wait_until(lambda: set_pods("db").get("db-2", {}).get("spec", {}).get("containers", [{}])[0].get("image")
               == "nginx:1.27", 20, "db-2 updated")
    make_ready("db-2")
    time.sleep(1.5)
    imgs = {n: p["spec"]["containers"][0]["image"] for n, p in set_pods("db").items()}
    eq(imgs, {"db-0": "nginx:1.25", "db-1": "nginx:1.25", "db-2": "nginx:1.27"}, "partition holds 0 and 1")


def test_parallel_policy():
    kc("apply", "-f", "-", input_text=json.dumps(manifest("par", policy="Parallel", claims=False)))
    pods = wait_until(lambda: (lambda p: p if len(p) == 3 else None)(set_pods("par")), 20, "3 pods at once")
    eq(sorted(pods), ["par-0", "par-1", "par-2"], "names")
    for n in pods:
        check(not (pods[n].get("status") or {}).get("conditions"), "none ready yet")
    kc("scale", "statefulset", "par", "--replicas=0")
    wait_until(lambda: not set_pods("par"), 20, "all gone at once")


def test_delete_collects_pods_and_revisions_and_namespace():
    kc("delete", "statefulset", "par")
    kc("delete", "statefulset", "db")
    wait_until(lambda: not set_pods("db"), 30, "pods of db collected")
    wait_until(lambda: not S["admin"].get(REVS).json.get("items"), 30, "revisions collected")
    claims = [c["metadata"]["name"] for c in S["admin"].get(PVCS).json["items"]]
    check("data-db-0" in claims, "claims outlive the set: %r" % claims)
    kc("create", "namespace", "stsns")
    m = manifest("web", replicas=1)
    m["metadata"]["namespace"] = "stsns"
    kc("apply", "-f", "-", input_text=json.dumps(m))
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/stsns/persistentvolumeclaims").json
               .get("items"), 20, "claim in stsns")
    kc("delete", "namespace", "stsns", "--wait=false")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/stsns").status == 404, 60,
               "namespace with a statefulset deleted")


run(globals())
