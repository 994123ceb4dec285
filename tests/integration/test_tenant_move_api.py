#!/usr/bin/python3
"""A tenant's move between two tenant partitions, the partitions' side (issue 23,
src/common/apiserver/move.c, changes.c, backup.c's move mode).

Two etcds, an ursa-tp-apiserver on each (A the source, B the target). Tenant acme on A with a
namespace, configmaps, a bare pod bound to a node with a status and a pod a ReplicaSet controls.

Checks: A's backup restored in move mode into B keeps uids, nodeName, status and owners (B's
tenant MovingIn under the move's id, its writes refused); bad requests (400/403/404/409) store
nothing; A's changes (update, create, delete, a pod's status) read with /changes (whole, in pages
of limit 1, waiting for the next one) and applied to B leave B equal to A; the fence refuses A's
writes to acme with 429, Retry-After and X-Ursa-Tenant-Moving (reads go on; system:masters too;
the tenant object too; after a restart of A's server too); the fence's own write reaches B as a
change without undoing MovingIn; activate makes B's acme writable; finish takes the annotation
off; drop ends A's watch of acme's configmaps after the events before the fence and leaves no key
of acme in A's etcd; unfence lifts a fence; every step is idempotent; A and B number their
resourceVersions 1 and 2, and after a move (tenant delta) B resumes a watch or an exact list from
A's caught-up values and answers A's older ones, continue tokens and preconditions with 410/409.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_tenant_move_api.py"""

import json
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

S = {}
T = "acme"
MOVE = "m1"


def setup():
    S["etcd_a"] = h.Etcd(name="etcd-a").start()
    S["etcd_b"] = h.Etcd(name="etcd-b").start()
    S["a"] = h.ApiServer(S["etcd_a"], partition_id="tp-1", partition_number=1).start()
    S["b"] = h.ApiServer(S["etcd_b"], partition_id="tp-2", partition_number=2).start()
    S["A"] = S["a"].admin()
    S["B"] = S["b"].admin()
    A = S["A"]
    h.create_tenant(A, T)
    h.create_tenant(A, "beta")
    h.expect_status(A.post("/api/v1/tenants/%s/namespaces" % T,
                           {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}}), 201, "namespace")
    h.wait_until(lambda: A.get("/api/v1/tenants/%s/namespaces/team" % T).status == 200, 10, "namespace team")
    for name in ("cm1", "cm2"):
        h.expect_status(A.post(cm_path(), cm(name, {"k": name})), 201, "create " + name)
    pod = h.pod_manifest("p1")
    pod["spec"]["nodeName"] = "node-1"
    h.expect_status(A.post(h.pods_path(T, "team"), pod), 201, "create pod p1")
    r = A.patch(h.pods_path(T, "team", "p1") + "/status",
                {"status": {"phase": "Running", "podIP": "10.244.0.7", "hostIP": "10.0.0.1"}})
    h.expect_status(r, 200, "pod p1 status")
    owned = h.pod_manifest("web-x", ownerReferences=[{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                                      "uid": "00000000-0000-0000-0000-000000000001",
                                                      "controller": True}])
    owned["spec"]["nodeName"] = "node-2"
    h.expect_status(A.post(h.pods_path(T, "team"), owned), 201, "create controlled pod web-x")
    # a CRD of the system tenant (as the gateways mirror to every partition) serves acme too: a
    # custom resource of acme's under it is acme's, and moves with it
    for c in (A, S["B"]):
        h.expect_status(c.post("/apis/apiextensions.k8s.io/v1/tenants/system/customresourcedefinitions",
                               SYSTEM_CRD), 201, "system CRD")
    h.wait_until(lambda: A.get(GADGETS).status == 200, 20, "gadgets served to acme")
    h.expect_status(A.post(GADGETS, {"apiVersion": "sys.example.com/v1", "kind": "Gadget",
                                     "metadata": {"name": "g1"}, "spec": {"n": 1}}), 201, "create gadget g1")


SYSTEM_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.sys.example.com"},
    "spec": {"group": "sys.example.com", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "properties": {"spec": {"type": "object",
                                                           "x-kubernetes-preserve-unknown-fields": True}}}}}]}}
GADGETS = "/apis/sys.example.com/v1/tenants/%s/namespaces/team/gadgets" % T


def cm_path(name=None, tenant=T, ns="team"):
    p = "/api/v1/tenants/%s/namespaces/%s/configmaps" % (tenant, ns)
    return p + "/" + name if name else p


def cm(name, data):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def jsonl(resp):
    return [json.loads(line) for line in resp.text.splitlines() if line.strip()]


def backup(client, tenant=T):
    items, cont, rev = [], "", None
    while True:
        r = client.get("/ursa/v1/tenants/%s/backup%s" % (tenant, h.q(limit=3, **({"continue": cont} if cont else {}))))
        h.expect_status(r, 200, "backup page")
        lines = jsonl(r)
        page = lines[-1]
        h.eq(page["kind"], "TenantBackupPage", "a page's last line")
        items += lines[:-1]
        rev = page["revision"]
        cont = page["continue"]
        if not cont:
            return items, rev


def restore(client, items, move=MOVE, tenant=T, **extra):
    body = {"from": tenant, "restore": move, "mode": "move", "items": items}
    body.update(extra)
    return client.post("/ursa/v1/tenants/%s/restore" % tenant, body)


def step(client, s, move=MOVE, tenant=T, **extra):
    return client.post("/ursa/v1/tenants/%s/move" % tenant, dict({"move": move, "step": s}, **extra))


def changes(client, since, tenant=T, **params):
    r = client.get("/ursa/v1/tenants/%s/changes%s" % (tenant, h.q(**dict({"from": since}, **params))), timeout=60)
    h.expect_status(r, 200, "changes from %s" % since)
    lines = jsonl(r)
    page = lines[-1]
    h.eq(page["kind"], "TenantChangesPage", "the changes' last line")
    h.eq(page["items"], len(lines) - 1, "items counted")
    return lines[:-1], page["revision"]


def acme_keys(etcd):
    return [k for k in etcd.keys("/registry/")
            if k == "/registry/tenants/" + T or ("/%s/" % T) in k]


def same_objects(what):
    """Every object of acme on A (backup lines) is on B, equal but for resourceVersion."""
    a_items, _ = backup(S["A"])
    b_items, _ = backup(S["B"])

    def norm(items):
        out = {}
        for it in items:
            o = json.loads(json.dumps(it["object"]))
            o["metadata"].pop("resourceVersion", None)
            if it["resource"] == "tenants":
                o.get("status", {}).pop("phase", None)
                (o["metadata"].get("annotations") or {}).pop("ursa.io/move", None)
                if not o["metadata"].get("annotations"):
                    o["metadata"].pop("annotations", None)
            out[(it["resource"], it["path"])] = o
        return out
    na, nb = norm(a_items), norm(b_items)
    h.eq(sorted(nb), sorted(na), what + ": the same keys")
    for k in na:
        h.eq(nb[k], na[k], what + ": %s" % (k,))


def test_bad_requests_store_nothing():
    B = S["B"]
    items, rev = backup(S["A"])
    S["copy"], S["copy_rev"] = items, rev
    cases = [
        ({"from": "other", "restore": MOVE, "mode": "move", "items": items}, 400),
        ({"from": T, "restore": MOVE, "mode": "move", "items": items, "done": True}, 400),
        ({"from": T, "restore": MOVE, "mode": "sideways", "items": items}, 400),
        ({"from": T, "restore": "Not_A_Label", "mode": "move", "items": items}, 400),
        ({"from": T, "restore": MOVE, "mode": "move", "items": items + [{"resource": "tenants", "path": T,
                                                                          "deleted": True}]}, 400),
        ({"from": T, "restore": MOVE, "mode": "move", "items": items[1:]}, 404),  # no tenant object first
    ]
    for body, code in cases:
        h.expect_status(B.post("/ursa/v1/tenants/%s/restore" % T, body), code, "restore %s" % (body.get("mode"),))
    user = S["b"].user_client(T, "alice")
    h.expect_status(user.post("/ursa/v1/tenants/%s/restore" % T,
                              {"from": T, "restore": MOVE, "mode": "move", "items": items}), 403, "a user's move")
    h.expect_status(user.get("/ursa/v1/tenants/%s/changes?from=1" % T), 403, "a user's changes")
    h.expect_status(user.post("/ursa/v1/tenants/%s/move" % T, {"move": MOVE, "step": "fence"}), 403,
                    "a user's fence")
    h.expect_status(step(B, "fence"), 404, "fence of a tenant B does not hold")
    h.expect_status(step(B, "activate"), 404, "activate of a tenant B does not hold")
    h.expect_status(B.post("/ursa/v1/tenants/%s/move" % T, {"move": MOVE, "step": "jump"}), 400, "unknown step")
    h.expect_status(B.post("/ursa/v1/tenants/%s/move" % T, {"step": "fence"}), 400, "no move id")
    h.expect_status(B.get("/ursa/v1/tenants/%s/changes" % T), 400, "changes without from")
    h.expect_status(B.get("/ursa/v1/tenants/%s/changes?from=x" % T), 400, "changes from x")
    h.expect_status(B.get("/ursa/v1/tenants/%s/changes?from=99999999" % T), 400, "changes from the future")
    h.eq(acme_keys(S["etcd_b"]), [], "nothing of acme stored on B")


def test_size_counts_a_backups_objects():
    items, _ = backup(S["A"])
    h.check(any(i["resource"] == "customresources/sys.example.com/gadgets" and i["path"] == "team/g1"
                for i in items), "acme's gadget (a system CRD's) is in its backup")
    r = S["A"].get("/ursa/v1/tenants/%s/size" % T)
    h.eq(r.status, 200, "size of acme")
    h.eq((r.json["kind"], r.json["objects"]), ("TenantSize", len(items)), "acme's size: its backup's objects")
    h.expect_status(S["A"].get("/ursa/v1/tenants/nobody/size"), 404, "size of a missing tenant", "NotFound")
    h.expect_status(S["a"].user_client(T, "alice").get("/ursa/v1/tenants/%s/size" % T), 403, "a user's size")


def test_copy_keeps_objects():
    A, B = S["A"], S["B"]
    items = S["copy"]
    first, rest = items[:2], items[2:]
    h.eq(first[0]["resource"], "tenants", "the tenant object first")
    r = restore(B, first)
    h.expect_status(r, 200, "first batch")
    h.eq(r.json["kind"], "TenantRestoreResult", "reply kind")
    h.check(r.json["revision"] > 0, "a revision: %r" % r.json)
    h.expect_status(restore(B, rest, move="m-other"), 409, "a batch of another move")
    r = restore(B, rest)
    h.expect_status(r, 200, "second batch")
    h.expect_status(restore(B, first), 200, "the first batch again (a retry)")
    t = B.get("/api/v1/tenants/" + T).json
    h.eq(t["status"]["phase"], "MovingIn", "B's tenant phase")
    h.eq(t["metadata"]["annotations"]["ursa.io/move"], MOVE, "B's tenant annotation")
    for name in ("p1", "web-x"):
        pa = A.get(h.pods_path(T, "team", name)).json
        pb = h.wait_until(lambda: B.get(h.pods_path(T, "team", name)).json
                          if B.get(h.pods_path(T, "team", name)).status == 200 else None, 10, "pod on B")
        for path in (("metadata", "uid"), ("metadata", "creationTimestamp"), ("metadata", "ownerReferences"),
                     ("spec", "nodeName"), ("status",)):
            va, vb = pa, pb
            for p in path:
                va, vb = (va or {}).get(p), (vb or {}).get(p)
            h.eq(vb, va, "pod %s %s" % (name, ".".join(path)))
    # what A changed since the copy (its aggregated roles' rules, written a moment after the
    # tenant) comes with the changes (test_follow_changes)
    r = B.post(cm_path(), cm("early", {}))
    h.expect_status(r, 429, "a write on B while acme moves in", "TooManyRequests")
    h.eq(r.header("X-Ursa-Tenant-Moving"), T, "the moving header")


def apply_changes(lines):
    r = restore(S["B"], lines)
    h.expect_status(r, 200, "applying %d changes" % len(lines))
    return r.json


def test_follow_changes():
    A = S["A"]
    since = S["copy_rev"]
    h.expect_status(A.put(cm_path("cm1"), cm("cm1", {"k": "changed"})), 200, "update cm1")
    h.expect_status(A.post(cm_path(), cm("cm3", {"k": "new"})), 201, "create cm3")
    h.expect_status(A.delete(cm_path("cm2")), 200, "delete cm2")
    h.expect_status(A.patch(h.pods_path(T, "team", "p1") + "/status", {"status": {"podIP": "10.244.0.8"}}), 200,
                    "pod status")
    h.expect_status(A.post(cm_path(tenant="beta", ns="default"), cm("other", {})), 201, "beta's configmap")
    lines, rev = changes(A, since)
    kinds = [(l["resource"], l["path"], "deleted" if l.get("deleted") else "put") for l in lines]
    for want in (("configmaps", "team/cm1", "put"), ("configmaps", "team/cm3", "put"),
                 ("configmaps", "team/cm2", "deleted"), ("pods", "team/p1", "put")):
        h.check(want in kinds, "%s among the changes: %s" % (want, kinds))
    h.check(all(l["path"] != "default/other" for l in lines), "beta's change not among acme's")
    h.check(rev >= S["etcd_a"].revision() - 1, "the page reaches etcd's revision: %s" % rev)
    # in pages of one change: the same changes, every page ending at a revision boundary
    paged, at = [], since
    for _ in range(50):
        part, nxt = changes(A, at, limit=1)
        paged += part
        h.check(nxt >= at, "a page never goes back")
        if nxt >= rev:
            break
        at = nxt
    h.eq(paged, lines, "paged changes")
    apply_changes(lines)
    same_objects("after following")
    # nothing new: from rev with no wait answers at once; with wait, the next change
    none, rev2 = changes(A, rev)
    h.eq((none, rev2), ([], rev), "nothing after the last page")
    got = {}

    def waiter():
        got["r"] = changes(A, rev, wait=10)
    th = threading.Thread(target=waiter)
    th.start()
    time.sleep(0.5)
    h.expect_status(A.post(cm_path(), cm("cm4", {"k": "late"})), 201, "create cm4")
    th.join(15)
    h.check("r" in got, "the waiting changes call answered")
    late, rev3 = got["r"]
    h.eq([l["path"] for l in late], ["team/cm4"], "the change waited for")
    h.check(rev3 > rev, "its revision moved")
    apply_changes(late)
    S["follow_rev"] = rev3
    same_objects("after the late change")


def test_fence():
    A = S["A"]
    S["watch"] = A.watch(cm_path() + "?watch=1&resourceVersion=0", timeout=120)
    h.eq(S["watch"].status, 200, "watch of acme's configmaps on A")
    h.expect_status(step(A, "unfence"), 200, "unfence of an Active tenant (nothing to do)")
    r = step(A, "fence")
    h.expect_status(r, 200, "fence")
    h.eq((r.json["kind"], r.json["step"]), ("TenantMoveStep", "fence"), "fence reply")
    fence = r.json["revision"]
    S["fence_rev"] = fence
    r2 = step(A, "fence")
    h.expect_status(r2, 200, "fence again")
    h.eq(r2.json["revision"], fence, "the same fence revision")
    h.expect_status(step(A, "fence", move="m9"), 409, "a fence of another move")
    for what, resp in (
            ("create", A.post(cm_path(), cm("late", {}))),
            ("update", A.put(cm_path("cm1"), cm("cm1", {"k": "x"}))),
            ("patch", A.patch(cm_path("cm1"), {"data": {"k": "y"}})),
            ("delete", A.delete(cm_path("cm1"))),
            ("deletecollection", A.delete(cm_path())),
            ("pod status", A.patch(h.pods_path(T, "team", "p1") + "/status", {"status": {"podIP": "1.2.3.4"}})),
            ("tenant object", A.patch("/api/v1/tenants/" + T, {"metadata": {"labels": {"x": "y"}}})),
            ("namespace", A.post("/api/v1/tenants/%s/namespaces" % T,
                                 {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n2"}}))):
        h.expect_status(resp, 429, "%s on A while fenced" % what, "TooManyRequests")
        h.eq(resp.header("Retry-After"), "1", what + ": Retry-After")
        h.eq(resp.header("X-Ursa-Tenant-Moving"), T, what + ": X-Ursa-Tenant-Moving")
        h.check("is moving between partitions" in resp.json["message"], what + ": message %r" % resp.json)
    h.expect_status(A.get(cm_path("cm1")), 200, "reads go on")
    h.expect_status(A.get(cm_path()), 200, "lists go on")
    h.expect_status(A.post(cm_path(tenant="beta", ns="default"), cm("still", {})), 201, "another tenant writes")
    h.eq(A.get("/api/v1/tenants/" + T).json["status"]["phase"], "MovingOut", "A's tenant phase")
    # every change of acme on A is at or below the fence: the fence's own write is the last
    lines, rev = changes(A, S["follow_rev"])
    h.eq([(l["resource"], l["path"]) for l in lines], [("tenants", T)], "the fence as a change")
    h.eq(json.loads(json.dumps(lines[0]["object"]))["status"]["phase"], "MovingOut", "the change's phase")
    h.check(rev >= fence, "changes through the fence")
    apply_changes(lines)
    t = S["B"].get("/api/v1/tenants/" + T).json
    h.eq((t["status"]["phase"], t["metadata"]["annotations"]["ursa.io/move"]), ("MovingIn", MOVE),
         "B's tenant still moving in")
    same_objects("through the fence")


def test_fence_on_a_second_server():
    # a partition served by two API servers: the fence is each server's own (its writes in
    # flight drained, its memory fenced); the second one's fence names the same move
    a2 = h.ApiServer(S["etcd_a"], partition_id="tp-1", partition_number=1).start()
    try:
        A2 = a2.admin()
        r = step(A2, "fence")
        h.expect_status(r, 200, "fence on A's second server")
        h.check(r.json["revision"] >= S["fence_rev"], "the second fence's revision: %s" % r.json)
        resp = A2.post(cm_path(), cm("via-a2", {}))
        h.expect_status(resp, 429, "a write through the second server", "TooManyRequests")
        h.eq(resp.header("X-Ursa-Tenant-Moving"), T, "the second server's moving header")
        h.expect_status(step(A2, "fence", move="m9"), 409, "another move's fence on the second server")
    finally:
        a2.stop()


def test_release_on_a_second_server():
    """A drop on one server of a partition with two: the other, released first, ends its watches
    of the tenant before the deletes reach it (its watchers see no DELETED), and its own drop
    after finds nothing left but lifts its fence."""
    A, e, mv = S["A"], "epsilon", "m8"
    h.create_tenant(A, e)
    path = cm_path(tenant=e, ns="default")
    h.wait_until(lambda: A.post(path, cm("x1", {})).status == 201, 10, "a configmap of epsilon")
    a2 = h.ApiServer(S["etcd_a"], partition_id="tp-1", partition_number=1).start()
    try:
        A2 = a2.admin()
        h.wait_until(lambda: A2.get(path + "/x1").status == 200, 10, "the second server serves epsilon")
        w = A2.watch(path + "?watch=1&resourceVersion=0", timeout=60)
        h.check(w.until(lambda ev: ev["object"]["metadata"]["name"] == "x1", 10), "the watch on the second server")
        for c, what in ((A, "first"), (A2, "second")):
            h.expect_status(step(c, "fence", move=mv, tenant=e), 200, "fence epsilon on the %s server" % what)
        h.expect_status(step(A2, "release", move="m9", tenant=e), 409, "a release of another move")
        r = step(A2, "release", move=mv, tenant=e)
        h.expect_status(r, 200, "release on the second server")
        w.drain(10)
        h.check(w.ended, "the second server's watch of epsilon ended: %s" % w.summary())
        h.expect_status(step(A, "drop", move=mv, tenant=e), 200, "drop on the first server")
        h.check(all(ev.get("type") not in ("DELETED", "ERROR") for ev in w.events),
                "the second server's watcher saw no delete: %s" % w.summary())
        h.eq(S["etcd_a"].count("/registry/configmaps/%s/" % e), 0, "epsilon's keys gone")
        r = step(A2, "drop", move=mv, tenant=e)
        h.expect_status(r, 200, "drop on the second server")
        h.eq(r.json["deleted"], 0, "nothing left for the second server to delete")
        # its memory fence is lifted: a new tenant of the name writes there
        h.create_tenant(A, e)
        h.wait_until(lambda: A2.post(path, cm("x2", {})).status == 201, 15, "epsilon writable on the second server")
    finally:
        a2.stop()


def test_fence_survives_restart():
    S["watch"].close()
    S["a"].restart()
    A = S["A"] = S["a"].admin()
    r = A.post(cm_path(), cm("after-restart", {}))
    h.expect_status(r, 429, "a write after A's restart", "TooManyRequests")
    S["watch"] = A.watch(cm_path() + "?watch=1&resourceVersion=0", timeout=120)
    h.eq(S["watch"].status, 200, "watch of acme's configmaps on A (again)")
    h.check(S["watch"].until(lambda e: e["object"]["metadata"]["name"] == "cm4", 10), "the watch's state")


def test_activate_and_finish():
    B = S["B"]
    h.expect_status(step(B, "activate", move="m9"), 409, "activate of another move")
    h.expect_status(step(B, "finish"), 409, "finish before activate")
    r = step(B, "activate")
    h.expect_status(r, 200, "activate")
    h.check(r.json["revision"] > 0, "activate's revision")
    h.expect_status(step(B, "activate"), 200, "activate again")
    t = B.get("/api/v1/tenants/" + T).json
    h.eq((t["status"]["phase"], t["metadata"]["annotations"]["ursa.io/move"]), ("Active", MOVE), "B's tenant")
    h.wait_until(lambda: B.post(cm_path(), cm("on-b", {"k": "b"})).status == 201, 10, "a write on B")
    h.expect_status(restore(B, []), 409, "no more move batches once active")
    h.expect_status(step(B, "finish"), 200, "finish")
    h.check("ursa.io/move" not in (B.get("/api/v1/tenants/" + T).json["metadata"].get("annotations") or {}),
            "the annotation is off")
    h.expect_status(step(B, "finish"), 200, "finish again")


def test_drop():
    A = S["A"]
    h.expect_status(step(A, "drop", move="m9"), 409, "a drop of another move")
    h.check(acme_keys(S["etcd_a"]), "acme still on A")
    before = len(acme_keys(S["etcd_a"]))
    r = step(A, "drop")
    h.expect_status(r, 200, "drop")
    h.eq(r.json["deleted"], before, "keys deleted")
    h.eq(acme_keys(S["etcd_a"]), [], "no key of acme left in A's etcd")
    w = S["watch"]
    w.drain(10)
    h.check(w.ended, "the watch of acme's configmaps on A ended: %s" % w.summary())
    h.check(all(e.get("type") != "ERROR" for e in w.events), "ended cleanly: %s" % w.summary())
    h.check(all(e.get("type") != "DELETED" for e in w.events), "no deletes sent: %s" % w.summary())
    r = step(A, "drop")
    h.expect_status(r, 200, "drop again")
    h.eq(r.json["deleted"], 0, "nothing left to delete")
    h.expect_status(A.post(cm_path(tenant="beta", ns="default"), cm("after-drop", {})), 201,
                    "another tenant's write after the drop")
    h.check(S["etcd_b"].count("/registry/configmaps/%s/" % T) > 0, "B keeps acme")


def test_unfence():
    A = S["A"]
    b = "beta"
    r = A.post("/ursa/v1/tenants/%s/move" % b, {"move": "m2", "step": "fence"})
    h.expect_status(r, 200, "fence beta")
    h.expect_status(A.post(cm_path(tenant=b, ns="default"), cm("x1", {})), 429, "beta fenced")
    h.expect_status(A.post("/ursa/v1/tenants/%s/move" % b, {"move": "m3", "step": "unfence"}), 409,
                    "unfence of another move")
    h.expect_status(A.post("/ursa/v1/tenants/%s/move" % b, {"move": "m2", "step": "unfence"}), 200, "unfence")
    t = A.get("/api/v1/tenants/" + b).json
    h.eq(t["status"]["phase"], "Active", "beta Active again")
    h.check("ursa.io/move" not in (t["metadata"].get("annotations") or {}), "no move annotation")
    h.wait_until(lambda: A.post(cm_path(tenant=b, ns="default"), cm("x2", {})).status == 201, 10, "beta writes")
    h.expect_status(A.post("/ursa/v1/tenants/%s/move" % b, {"move": "m2", "step": "unfence"}), 200,
                    "unfence again")


def test_fence_under_load():
    """Writers keep creating in tenant gamma while it is fenced: none of their writes lands after
    the fence's revision (the fence waits for those in flight), and each gets 201 or 429."""
    A = S["A"]
    g = "gamma"
    h.create_tenant(A, g)
    stop = threading.Event()
    codes = []

    def writer(i):
        n = 0
        while not stop.is_set():
            r = A.post(cm_path(tenant=g, ns="default"), cm("w%d-%d" % (i, n), {}))
            codes.append(r.status)
            n += 1
    threads = [threading.Thread(target=writer, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    time.sleep(1.0)
    r = A.post("/ursa/v1/tenants/%s/move" % g, {"move": "m4", "step": "fence"})
    time.sleep(0.5)
    stop.set()
    for t in threads:
        t.join(30)
    h.expect_status(r, 200, "fence under load")
    fence = r.json["revision"]
    h.check(set(codes) <= {201, 429} and 201 in codes and 429 in codes, "201s then 429s: %s" % sorted(set(codes)))
    r = A.get("/ursa/v1/tenants/%s/changes?from=%d" % (g, fence))
    h.expect_status(r, 200, "gamma's changes after the fence")
    lines = jsonl(r)
    h.eq(lines[:-1], [], "no change of gamma after the fence")
    h.expect_status(A.post("/ursa/v1/tenants/%s/move" % g, {"move": "m4", "step": "unfence"}), 200, "unfence gamma")


SHIFT = 44  # resourceVersion = partition number << 44 | etcd revision (include/ursa/revision.h)


def number_of(rv):
    return int(rv) >> SHIFT


def quiet(client, tenant, path):
    """Waits until tenant has had no change for half a second (by its last change on the server)."""
    prev, deadline = None, time.monotonic() + 20
    while time.monotonic() < deadline:
        through = int(client.get(path).json["metadata"]["resourceVersion"]) & ((1 << SHIFT) - 1)
        r = client.get("/ursa/v1/tenants/%s/lastchange?through=%d" % (tenant, through))
        h.expect_status(r, 200, "the last change of %s" % tenant)
        if r.json["revision"] == prev:
            return
        prev = r.json["revision"]
        time.sleep(0.5)
    raise AssertionError("tenant %s never quiet" % tenant)


def test_resource_versions_after_a_move():
    """Tenant delta moves A (number 1) -> B (number 2) by the steps, as ursactl makes them. Its
    resourceVersions carry each partition's number; on B a value of A's is answered by where it
    points: a client that saw every change of delta up to the fence goes on from the move (its
    watch gets only what came after, its exact list the state it knew); one behind gets 410 (a
    watch's ERROR, an exact list), 409 on a precondition, a fresh state on a NotOlderThan list;
    a continue token of A's is expired on B."""
    A, B, d, mv = S["A"], S["B"], "delta", "m7"
    h.create_tenant(A, d)
    h.wait_until(lambda: A.get("/api/v1/tenants/%s/namespaces/default" % d).status == 200, 10, "delta's default ns")
    path = cm_path(tenant=d, ns="default")
    for name in ("c1", "c2"):
        h.expect_status(A.post(path, cm(name, {"k": name})), 201, "create " + name)
    quiet(A, d, path)  # the server's own writes for a new tenant (its aggregated roles) are done
    l1 = A.get(path).json["metadata"]["resourceVersion"]
    h.eq(number_of(l1), 1, "A's resourceVersions carry its number (%s)" % l1)
    r1 = A.get(path + "/c1").json["metadata"]["resourceVersion"]
    h.eq(number_of(r1), 1, "an object's too")
    tok = A.get(path + "?limit=1").json["metadata"]["continue"]
    h.expect_status(A.get(path + "?limit=1&continue=" + tok), 200, "A's continue token on A")
    r = A.post(path, cm("c3", {"k": "c3"}))
    h.expect_status(r, 201, "create c3 (after l1)")
    c3_rev = int(r.json["metadata"]["resourceVersion"]) & ((1 << SHIFT) - 1)
    h.expect_status(A.post(cm_path(tenant="beta", ns="default"), cm("b-%s" % mv, {})), 201, "another tenant's write")
    l_pre = A.get(path).json["metadata"]["resourceVersion"]  # delta's latest, read before the fence
    # the copy, the fence, the catch-up (ursactl's loop, once: nothing writes meanwhile)
    items, copy_rev = backup(A, tenant=d)
    r = restore(B, items, move=mv, tenant=d)
    h.expect_status(r, 200, "copy to B")
    h.eq(r.json.get("partitionNumber"), 2, "the target's number in its reply")
    r = step(A, "fence", move=mv, tenant=d)
    h.expect_status(r, 200, "fence delta on A")
    h.eq(r.json.get("partitionNumber"), 1, "the source's number in its reply")
    fence = r.json["revision"]
    l2 = A.get(path).json["metadata"]["resourceVersion"]  # after the fence: every change of delta
    lines, _ = changes(A, copy_rev, tenant=d)
    r = restore(B, lines, move=mv, tenant=d)
    h.expect_status(r, 200, "the changes to B")
    to = max(r.json["revision"], 1)
    from_rv = (1 << SHIFT) | fence
    h.expect_status(step(B, "activate", move=mv, tenant=d, fromResourceVersion=from_rv), 400,
                    "activate with one revision of two")
    h.expect_status(step(B, "activate", move=mv, tenant=d, fromResourceVersion="x", toRevision=to), 400,
                    "activate with a revision not a number")
    h.expect_status(step(A, "unfence", move=mv, tenant=d, fromResourceVersion=from_rv, toRevision=to), 400,
                    "revisions on another step")
    h.expect_status(step(B, "activate", move=mv, tenant=d, fromResourceVersion=from_rv, toRevision=to), 200,
                    "activate delta on B")
    ann = B.get("/api/v1/tenants/" + d).json["metadata"]["annotations"]
    h.eq((ann.get("ursa.io/moved-from-revision"), ann.get("ursa.io/moved-to-revision")),
         (str(from_rv), str((2 << SHIFT) | to)), "B's record of the move")
    # a value read before the fence is behind the fence's bound ...
    w_pre = B.watch(path + h.q(watch=1, resourceVersion=l_pre), timeout=60)
    e = w_pre.next(10)
    h.check(e and e["type"] == "ERROR" and e["object"].get("code") == 410,
            "before the tighter bound, a watch from a value read before the fence gets 410: %r" % (e,))
    # ... until the source names delta's last change (c3) and finish records it
    h.expect_status(A.get("/ursa/v1/tenants/%s/lastchange" % d), 400, "lastchange without through")
    r = A.get("/ursa/v1/tenants/%s/lastchange?through=%d" % (d, fence))
    h.expect_status(r, 200, "delta's last change on A")
    h.eq(r.json["revision"], c3_rev, "delta's last change is c3 (not the fence's own write, not beta's)")
    last = (1 << SHIFT) | r.json["revision"]
    h.expect_status(step(A, "drop", move=mv, tenant=d), 200, "drop delta on A")
    h.expect_status(step(B, "finish", move=mv, tenant=d, fromResourceVersion=last, toRevision=to), 400,
                    "finish with toRevision")
    h.expect_status(step(B, "finish", move=mv, tenant=d, fromResourceVersion=last), 200, "finish on B")
    ann = B.get("/api/v1/tenants/" + d).json["metadata"]["annotations"]
    h.eq(ann.get("ursa.io/moved-from-revision"), str(last), "the tighter bound recorded")

    # B's own values carry B's number, for the tenant and for a view of every tenant
    got = B.get(path + "/c1").json
    h.eq(number_of(got["metadata"]["resourceVersion"]), 2, "c1's resourceVersion on B")
    h.check(got["metadata"]["resourceVersion"] != r1, "c1's resourceVersion is B's own")
    lst = B.get("/api/v1/tenants/all/configmaps").json
    h.check(lst["items"] and all(number_of(o["metadata"]["resourceVersion"]) == 2 for o in lst["items"]),
            "every tenant's objects on B")
    h.eq(number_of(lst["metadata"]["resourceVersion"]), 2, "a list's resourceVersion on B")
    # an exact list at A's value after the fence is delta as it was there
    r = B.get(path + h.q(resourceVersion=l2, resourceVersionMatch="Exact"))
    h.expect_status(r, 200, "exact list at A's resourceVersion after the fence")
    h.eq(sorted(o["metadata"]["name"] for o in r.json["items"]), ["c1", "c2", "c3"], "delta at the fence")
    h.expect_status(B.get(path + h.q(resourceVersion=l1, resourceVersionMatch="Exact")), 410,
                    "exact list at A's value from before c3", "Expired")
    r = B.get(path + h.q(resourceVersion=l1, resourceVersionMatch="NotOlderThan"))
    h.expect_status(r, 200, "a NotOlderThan list at A's old value")
    h.eq(sorted(o["metadata"]["name"] for o in r.json["items"]), ["c1", "c2", "c3"], "a state at least as new")
    h.expect_status(B.get(path + "?limit=1&continue=" + tok), 410, "A's continue token on B", "Expired")
    # watches: from l2 only what comes after the move; from l1 (missed c3) 410; a bare revision 410
    w_cur = B.watch(path + h.q(watch=1, resourceVersion=l2), timeout=60)
    w_pre = B.watch(path + h.q(watch=1, resourceVersion=l_pre), timeout=60)
    w_old = B.watch(path + h.q(watch=1, resourceVersion=l1), timeout=60)
    w_bare = B.watch(path + h.q(watch=1, resourceVersion=int(l2) & ((1 << SHIFT) - 1)), timeout=60)
    for w, what in ((w_old, "from before c3"), (w_bare, "from a bare etcd revision")):
        e = w.next(10)
        h.check(e and e["type"] == "ERROR" and e["object"].get("code") == 410,
                "a watch %s gets 410: %r" % (what, e))
    h.expect_status(B.post(path, cm("c4", {"k": "c4"})), 201, "create c4 on B")
    for w, what in ((w_cur, "read after the fence"), (w_pre, "read before the fence, after c3")):
        e = w.next(10)
        h.check(e and e["type"] == "ADDED" and e["object"]["metadata"]["name"] == "c4",
                "the watch from A's caught-up value (%s) gets c4 first, nothing repeated: %r" % (what, e))
        h.eq(number_of(e["object"]["metadata"]["resourceVersion"]), 2, "the event's resourceVersion is B's")
        w.close()
    # a precondition from A is stale; B's own holds
    old = B.get(path + "/c1").json
    stale = json.loads(json.dumps(old))
    stale["metadata"]["resourceVersion"] = r1
    stale["data"] = {"k": "stale"}
    h.expect_status(B.put(path + "/c1", stale), 409, "an update with A's resourceVersion", "Conflict")
    h.expect_status(B.delete(path + "/c1", {"preconditions": {"resourceVersion": r1}}), 409,
                    "a delete with A's resourceVersion", "Conflict")
    old["data"] = {"k": "fresh"}
    r = B.put(path + "/c1", old)
    h.expect_status(r, 200, "an update with B's resourceVersion")
    h.eq(number_of(r.json["metadata"]["resourceVersion"]), 2, "the update's reply")
    h.eq(B.get(path + "/c1").json["data"], {"k": "fresh"}, "the fresh update stored, the stale one not")


def test_changes_compacted():
    A = S["A"]
    old = S["copy_rev"]
    S["etcd_a"].compact()
    r = A.get("/ursa/v1/tenants/%s/changes?from=%d" % (T, old))
    h.expect_status(r, 410, "changes from a compacted revision", "Expired")


if __name__ == "__main__":
    h.run(globals())
