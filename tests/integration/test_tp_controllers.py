"""ursa-tp-controller-manager against real etcd + ursa-tp-apiserver: deployments, replicasets,
rollouts (kubectl rollout status/history/undo), garbage collection, namespace and tenant
deletion, a deleted tenant's final backup, leader election."""
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

CM_BIN = os.path.join(H.BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
S = {}


def start_cm(identity):
    log = os.path.join(S["api"].dir, "cm-%s.log" % identity)
    H._logs.append(("controller-manager " + identity, log))
    return H.spawn([CM_BIN, "--kubeconfig", S["api"].admin_kubeconfig(), "--identity", identity,
                    "--final-backup-dir", S["backups"], "--backup-key-file", S["key"],
                    "--log-level", "debug"], log)


def setup():
    H.require_binary(CM_BIN, "ursa-tp-controller-manager")
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    H.create_tenant(S["admin"], "acme")
    S["kc"] = S["api"].kubeconfig("acme", "alice")  # the tenant's administrator
    S["backups"] = os.path.join(S["api"].dir, "final-backups")
    os.makedirs(S["backups"])
    S["key"] = os.path.join(S["api"].dir, "backup.key")
    with open(S["key"], "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode() + "\n")
    S["cm"] = start_cm("cm-a")


def rs_list(tenant="acme", ns="default"):
    r = S["admin"].get("/apis/apps/v1/tenants/%s/namespaces/%s/replicasets" % (tenant, ns))
    return r.json.get("items") or []


def pods(tenant="acme", ns="default", sel=None):
    p = pods_path(tenant, ns) + (q(labelSelector=sel) if sel else "")
    return [i for i in (S["admin"].get(p).json.get("items") or [])
            if not i["metadata"].get("deletionTimestamp")]


def make_ready(tenant="acme", ns="default", sel=None):
    """Simulates a kubelet: every pod Running and Ready."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    for p in pods(tenant, ns, sel):
        st = p.get("status") or {}
        if st.get("phase") == "Running":
            continue
        st["phase"] = "Running"
        st["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": now}]
        p["status"] = st
        S["admin"].put(pods_path(tenant, ns, p["metadata"]["name"]) + "/status", p)


def kc(*args, ok=True):
    rc, out, err = kubectl(list(args), S["kc"])
    if ok:
        check(rc == 0, "kubectl %s: rc=%s out=%s err=%s" % (" ".join(args), rc, out, err))
    return out


def test_deployment_creates_rs_and_pods():
    kc("create", "deployment", "web", "--image=nginx:1.25", "--replicas=6")
    wait_until(lambda: len(pods(sel="app=web")) == 6, 30, "six pods")
    rss = rs_list()
    eq(len(rss), 1, "replicasets")
    rs = rss[0]
    h = rs["metadata"]["labels"]["pod-template-hash"]
    eq(rs["metadata"]["name"], "web-" + h, "rs name")
    eq(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1", "rs revision")
    for p in pods(sel="app=web"):
        eq(p["metadata"]["labels"].get("pod-template-hash"), h, "pod hash label")
        eq(p["metadata"]["ownerReferences"][0]["uid"], rs["metadata"]["uid"], "pod owner")
        check(p["metadata"]["name"].startswith("web-%s-" % h), "pod name " + p["metadata"]["name"])
    make_ready(sel="app=web")
    d = wait_until(lambda: (lambda d: d if d.get("status", {}).get("availableReplicas") == 6 else None)(
        S["admin"].get(deployments_path("acme", "default", "web")).json), 30, "deployment available")
    eq(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "1", "deploy revision")
    conds = {c["type"]: c for c in d["status"]["conditions"]}
    eq(conds["Available"]["reason"], "MinimumReplicasAvailable", "Available reason")
    out = kc("rollout", "status", "deployment/web", "--timeout=30s")
    check("successfully rolled out" in out, out)


def test_scale():
    kc("scale", "deployment", "web", "--replicas=3")
    wait_until(lambda: len(pods(sel="app=web")) == 3, 30, "scaled down to 3")
    kc("scale", "deployment", "web", "--replicas=5")
    wait_until(lambda: len(pods(sel="app=web")) == 5, 30, "scaled up to 5")
    make_ready(sel="app=web")


def test_set_image_rollout_history_undo():
    kc("annotate", "deployment", "web", "kubernetes.io/change-cause=image 1.26")
    kc("set", "image", "deployment/web", "nginx=nginx:1.26")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        make_ready(sel="app=web")
        d = S["admin"].get(deployments_path("acme", "default", "web")).json
        st = d.get("status", {})
        if (st.get("updatedReplicas") == 5 and st.get("replicas") == 5 and st.get("availableReplicas") == 5
                and st.get("observedGeneration") == d["metadata"]["generation"]):
            break
        time.sleep(0.3)
    out = kc("rollout", "status", "deployment/web", "--timeout=30s")
    check("successfully rolled out" in out, out)
    rss = {r["metadata"]["annotations"]["deployment.kubernetes.io/revision"]: r for r in rs_list()}
    eq(sorted(rss), ["1", "2"], "revisions")
    eq(rss["1"]["spec"]["replicas"], 0, "old rs scaled down")
    eq(rss["2"]["spec"]["replicas"], 5, "new rs")
    imgs = {p["spec"]["containers"][0]["image"] for p in pods(sel="app=web")}
    eq(imgs, {"nginx:1.26"}, "pod images after rollout")
    hist = kc("rollout", "history", "deployment/web")
    check("image 1.26" in hist and "1 " in hist and "2 " in hist, hist)
    kc("rollout", "undo", "deployment/web")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        make_ready(sel="app=web")
        imgs = {p["spec"]["containers"][0]["image"] for p in pods(sel="app=web")}
        if imgs == {"nginx:1.25"} and len(pods(sel="app=web")) == 5:
            break
        time.sleep(0.3)
    eq(imgs, {"nginx:1.25"}, "pod images after undo")
    rss = rs_list()
    eq(len(rss), 2, "undo reuses the old replicaset")
    d = S["admin"].get(deployments_path("acme", "default", "web")).json
    eq(d["metadata"]["annotations"]["deployment.kubernetes.io/revision"], "3", "revision after undo")


def test_delete_deployment_background():
    kc("delete", "deployment", "web")
    wait_until(lambda: not rs_list() and not pods(sel="app=web"), 30, "rs and pods gone")


def test_delete_foreground_and_orphan():
    kc("create", "deployment", "fg", "--image=nginx:1.25", "--replicas=2")
    wait_until(lambda: len(pods(sel="app=fg")) == 2, 30, "fg pods")
    kc("delete", "deployment", "fg", "--cascade=foreground", "--wait=false")
    wait_until(lambda: S["admin"].get(deployments_path("acme", "default", "fg")).status == 404
               and not pods(sel="app=fg"), 30, "foreground deletion done")
    kc("create", "deployment", "or", "--image=nginx:1.25", "--replicas=2")
    wait_until(lambda: len(pods(sel="app=or")) == 2, 30, "or pods")
    kc("delete", "deployment", "or", "--cascade=orphan")
    wait_until(lambda: S["admin"].get(deployments_path("acme", "default", "or")).status == 404, 30, "or gone")
    time.sleep(2)
    rss = [r for r in rs_list() if r["metadata"]["name"].startswith("or-")]
    eq(len(rss), 1, "orphaned rs kept")
    check(not rss[0]["metadata"].get("ownerReferences"), "orphan has no owner: %r" % rss[0]["metadata"])
    eq(len(pods(sel="app=or")), 2, "orphaned pods kept")


def test_delete_namespace():
    S["admin"].post("/api/v1/tenants/acme/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "tmp"}})
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/tmp/serviceaccounts/default").status
               == 200, 20, "default service account")
    kc("-n", "tmp", "create", "deployment", "x", "--image=nginx:1.25", "--replicas=2")
    kc("-n", "tmp", "create", "configmap", "cm", "--from-literal=a=b")
    wait_until(lambda: len(pods(ns="tmp")) == 2, 30, "pods in tmp")
    kc("delete", "namespace", "tmp", "--wait=false")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/tmp").status == 404
               and not pods(ns="tmp") and not rs_list(ns="tmp")
               and not (S["admin"].get("/api/v1/tenants/acme/namespaces/tmp/configmaps").json.get("items")),
               40, "namespace tmp and its contents gone")


def test_delete_tenant():
    H.create_tenant(S["admin"], "doomed")
    S["admin"].post(deployments_path("doomed"), deployment_manifest("d", 2))
    wait_until(lambda: len(pods("doomed")) == 2, 30, "doomed pods")
    S["admin"].delete("/api/v1/tenants/doomed")

    def empty():
        if S["admin"].get("/api/v1/tenants/doomed").status != 404:
            return False
        for p in ("/api/v1/tenants/all/pods", "/api/v1/tenants/all/namespaces",
                  "/apis/apps/v1/tenants/all/replicasets", "/apis/apps/v1/tenants/all/deployments",
                  "/api/v1/tenants/all/serviceaccounts", "/api/v1/tenants/all/events"):
            for i in S["admin"].get(p).json.get("items") or []:
                if i["metadata"].get("tenant") == "doomed":
                    return False
        return True
    wait_until(empty, 60, "nothing of tenant doomed left")
    keys = [k for k in S["etcd"].keys("/registry/") if "/doomed/" in k or k.endswith("/doomed")]
    eq(keys, [], "etcd keys of tenant doomed")


def finalizers(tenant):
    r = S["admin"].get("/api/v1/tenants/" + tenant)
    return r.json["metadata"].get("finalizers") or [] if r.status == 200 else None


def test_final_backup():
    admin = S["admin"]
    r = admin.post("/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {
        "name": "keep", "annotations": {"ursa.io/final-backup": "true"}}})
    expect_status(r, 201, "create tenant keep")
    # given by the API server at once, so that no delete can come before it
    eq(r.json["metadata"].get("finalizers"), ["ursa.io/final-backup"], "keep's finalizers as created")
    wait_ok(admin, "/api/v1/tenants/keep/namespaces/default")
    expect_status(admin.post("/api/v1/tenants/keep/namespaces/default/configmaps", {
        "metadata": {"name": "settings"}, "data": {"color": "blue"}}), 201, "configmap")
    expect_status(admin.post("/api/v1/tenants/keep/namespaces/default/secrets", {
        "metadata": {"name": "db"}, "stringData": {"password": "final-plaintext-77"}}), 201, "secret")
    # a tenant that stops asking loses the finalizer
    H.create_tenant(admin, "plain")
    admin.patch("/api/v1/tenants/plain", {"metadata": {"annotations": {"ursa.io/final-backup": "true"}}})
    wait_until(lambda: "ursa.io/final-backup" in (finalizers("plain") or []), 20, "plain holds the finalizer")
    admin.patch("/api/v1/tenants/plain", {"metadata": {"annotations": {"ursa.io/final-backup": None}}})
    wait_until(lambda: finalizers("plain") == [], 20, "plain's finalizer taken away")

    expect_status(admin.delete("/api/v1/tenants/keep"), 200, "delete tenant keep")
    wait_until(lambda: admin.get("/api/v1/tenants/keep").status == 404, 60, "keep deleted after its backup")
    files = [f for f in os.listdir(S["backups"]) if f.startswith("keep-") and f.endswith(".backup")]
    eq(len(files), 1, "final backups of keep: %r" % files)
    with open(os.path.join(S["backups"], files[0])) as f:
        text = f.read()
    lines = [json.loads(line) for line in text.splitlines()]
    eq((lines[0]["kind"], lines[0]["tenant"]), ("TenantBackup", "keep"), "header")
    eq(lines[-1], {"end": True, "objects": len(lines) - 2}, "trailer")
    got = {(i["resource"], i["path"]) for i in lines[1:-1]}
    for want in (("tenants", "keep"), ("configmaps", "default/settings"), ("secrets", "default/db"),
                 ("namespaces", "default"), ("clusterrolebindings", "ursa:tenant-admins")):
        check(want in got, "the final backup holds %s %s" % want)
    check("final-plaintext-77" not in text and base64.b64encode(b"final-plaintext-77").decode() not in text,
          "the secret's value is not in the file")
    # and then the tenant was emptied as any deleted tenant
    wait_until(lambda: not [k for k in S["etcd"].keys("/registry/") if "/keep/" in k or k.endswith("/keep")], 60,
               "nothing of tenant keep left")


def test_leader_election():
    cm_b = start_cm("cm-b")
    time.sleep(3)
    lease = S["admin"].get("/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/"
                           "ursa-tp-controller-manager").json
    eq(lease["spec"]["holderIdentity"], "cm-a", "leader")
    H.terminate(S["cm"])
    wait_until(lambda: S["admin"].get("/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/"
                                      "leases/ursa-tp-controller-manager").json["spec"].get("holderIdentity")
               == "cm-b", 40, "standby takes over")
    kc("create", "deployment", "after", "--image=nginx:1.25", "--replicas=2")
    wait_until(lambda: len(pods(sel="app=after")) == 2, 30, "new leader works")
    H.terminate(cm_b)


run(globals())
