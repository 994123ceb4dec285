#!/usr/bin/python3
"""CRUD, list, patch, delete and watch semantics of ursa-tp-apiserver over raw HTTP.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_api.py
(URSA_TEST=test_a,test_b runs a subset after setup.)"""

import base64
import hashlib
import hmac
import json
import os
import re
import secrets
import socket
import sys
import time
import urllib.parse

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Etcd, check, create_tenant, deployment_manifest,  # noqa: E402
                          deployments_path, eq, expect_status, make_tmpdir, names, pod_manifest,
                          pods_path, q, run, uniq, wait_until)

S = {}
TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


IDKEY = secrets.token_hex(32)


def setup():
    S["etcd"] = Etcd().start()
    keyfile = os.path.join(make_tmpdir("idkey"), "identity.key")
    with open(keyfile, "w") as f:
        f.write(IDKEY + "\n")
    S["api"] = ApiServer(S["etcd"], extra_args=["--identity-key-file", keyfile]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("api")
    create_tenant(S["admin"], S["t"])


def admin():
    return S["admin"]


def create_pod(name, labels=None, **meta):
    r = admin().post(pods_path(S["t"]), pod_manifest(name, labels, **meta))
    expect_status(r, 201, "create pod %s" % name)
    return r.json


def list_pods(**params):
    r = admin().get(pods_path(S["t"]) + (q(**params) if params else ""))
    expect_status(r, 200, "list pods %r" % params)
    return r.json


def test_create_returns_201_with_server_fields():
    p = create_pod(uniq("create"), {"a": "b"})
    m = p["metadata"]
    eq(p.get("kind"), "Pod", "created object's kind")
    eq(p.get("apiVersion"), "v1", "created object's apiVersion")
    eq(m.get("namespace"), "default", "metadata.namespace")
    eq(m.get("tenant"), S["t"], "metadata.tenant")
    check(m.get("uid"), "metadata.uid missing: %r" % m)
    check(isinstance(m.get("resourceVersion"), str) and m["resourceVersion"],
          "metadata.resourceVersion must be a non-empty string: %r" % m)
    check(RFC3339.match(m.get("creationTimestamp") or ""),
          "creationTimestamp is not RFC 3339 UTC: %r" % m.get("creationTimestamp"))
    hk = m.get("hashKey")
    check(isinstance(hk, int) and not isinstance(hk, bool) and hk > 0,
          "metadata.hashKey must be a positive integer: %r" % hk)
    eq((p.get("status") or {}).get("phase"), "Pending", "status.phase of a new pod")
    S["created"] = p


def test_get_and_not_found():
    p = S["created"]
    name = p["metadata"]["name"]
    r = admin().get(pods_path(S["t"], name=name))
    expect_status(r, 200, "get pod")
    eq(r.json["metadata"]["uid"], p["metadata"]["uid"], "uid of the fetched pod")
    eq(r.json["metadata"]["resourceVersion"], p["metadata"]["resourceVersion"], "resourceVersion")
    r = admin().get(pods_path(S["t"], name="no-such-pod"))
    expect_status(r, 404, "get missing pod", "NotFound")
    r = admin().post(pods_path(S["t"]), pod_manifest(name))
    expect_status(r, 409, "create an existing pod", "AlreadyExists")


def test_short_path_resolves_to_callers_tenant():
    name = S["created"]["metadata"]["name"]
    user = S["api"].user_client(S["t"], "alice")
    r = user.get("/api/v1/namespaces/default/pods/" + name)
    expect_status(r, 200, "GET short path as a user of the tenant")
    eq(r.json["metadata"]["uid"], S["created"]["metadata"]["uid"], "uid via short path")
    eq(r.json["metadata"]["tenant"], S["t"], "tenant via short path")


def test_list_limit_and_continue():
    run_id = uniq("page")
    for i in range(5):
        create_pod("%s-%d" % (run_id, i), {"page": run_id})
    seen = []
    first = list_pods(labelSelector="page=" + run_id, limit=2)
    eq(first.get("kind"), "PodList", "list kind")
    check(first["metadata"].get("resourceVersion"), "list has no metadata.resourceVersion: %r"
          % first["metadata"])
    eq(len(first["items"]), 2, "items on the first page (limit=2)")
    check(first["metadata"].get("continue"), "first page has no continue token: %r" % first["metadata"])
    seen += names(first)
    # Created after the first page: a continued list is a snapshot at the first page's revision.
    create_pod("%s-zz-late" % run_id, {"page": run_id})
    token = first["metadata"]["continue"]
    pages = 1
    while token:
        page = list_pods(labelSelector="page=" + run_id, limit=2, **{"continue": token})
        check(len(page["items"]) <= 2, "page longer than limit: %r" % names(page))
        seen += names(page)
        token = page["metadata"].get("continue")
        pages += 1
        check(pages < 10, "continue tokens never end")
    eq(sorted(seen), ["%s-%d" % (run_id, i) for i in range(5)],
       "pods over all pages (no duplicates, nothing created after the first page)")
    eq(len(names(list_pods(labelSelector="page=" + run_id))), 6, "pods in a fresh list")
    # Tokens are Go's RawURLEncoding: padding, the standard alphabet or a broken body are 400.
    for bad in (token_of(first) + "=", token_of(first).replace("-", "+").replace("_", "/") + "+/", "e30",
                "not base64!"):
        r = admin().get(pods_path(S["t"]) + q(limit=2, **{"continue": bad}))
        expect_status(r, 400, "malformed continue token %r" % bad, "BadRequest")


def token_of(page):
    return page["metadata"]["continue"]


def test_label_selectors():
    r = uniq("sel")
    create_pod(r + "-a", {"run": r, "env": "prod", "tier": "fe"})
    create_pod(r + "-b", {"run": r, "env": "dev"})
    create_pod(r + "-c", {"run": r})
    cases = [("env=prod", ["a"]), ("env==dev", ["b"]), ("env!=prod", ["b", "c"]),
             ("env in (prod,dev)", ["a", "b"]), ("env notin (prod)", ["b", "c"]),
             ("env", ["a", "b"]), ("!env", ["c"]), ("env=prod,tier=fe", ["a"]),
             ("env=prod,tier=be", [])]
    for sel, want in cases:
        got = names(list_pods(labelSelector="run=%s,%s" % (r, sel)))
        eq(got, ["%s-%s" % (r, x) for x in want], "labelSelector %r" % sel)


def test_field_selectors():
    r = uniq("fld")
    for x in "abc":
        create_pod("%s-%s" % (r, x), {"run": r})
    sel = "run=" + r
    eq(names(list_pods(labelSelector=sel, fieldSelector="metadata.name=%s-a" % r)), [r + "-a"],
       "fieldSelector metadata.name=")
    eq(names(list_pods(labelSelector=sel, fieldSelector="metadata.name!=%s-a" % r)),
       [r + "-b", r + "-c"], "fieldSelector metadata.name!=")
    eq(len(names(list_pods(labelSelector=sel, fieldSelector="status.phase=Pending"))), 3,
       "fieldSelector status.phase=Pending")
    eq(names(list_pods(labelSelector=sel, fieldSelector="status.phase!=Pending")), [],
       "fieldSelector status.phase!=Pending")
    eq(len(names(list_pods(labelSelector=sel, fieldSelector="spec.nodeName="))), 3,
       "fieldSelector spec.nodeName= (unscheduled pods)")
    eq(names(list_pods(labelSelector=sel, fieldSelector="metadata.namespace=default,metadata.name=%s-b" % r)),
       [r + "-b"], "two field requirements")


def test_update_with_stale_resource_version_conflicts():
    p = create_pod(uniq("upd"), {"v": "0"})
    path = pods_path(S["t"], name=p["metadata"]["name"])
    old = admin().get(path).json
    newer = dict(old)
    newer["metadata"] = dict(old["metadata"], labels={"v": "1"})
    r = admin().put(path, newer)
    expect_status(r, 200, "PUT with the current resourceVersion")
    check(r.json["metadata"]["resourceVersion"] != old["metadata"]["resourceVersion"],
          "resourceVersion did not change on update")
    eq(r.json["metadata"]["labels"], {"v": "1"}, "labels after PUT")
    eq(r.json["metadata"].get("hashKey"), old["metadata"].get("hashKey"), "hashKey kept on update")
    eq(r.json["metadata"].get("uid"), old["metadata"].get("uid"), "uid kept on update")
    stale = dict(old)
    stale["metadata"] = dict(old["metadata"], labels={"v": "stale"})
    r = admin().put(path, stale)
    expect_status(r, 409, "PUT with a stale resourceVersion", "Conflict")
    eq(admin().get(path).json["metadata"]["labels"], {"v": "1"}, "labels after the rejected PUT")


def write_hints():
    r = admin().get("/metrics")
    expect_status(r, 200, "GET /metrics")
    return {k: int(v) for k, v in
            re.findall(r'^ursa_apiserver_cache_write_hints_total\{result="(\w+)"\} (\d+)$', r.text, re.M)}


def cached_body(path, rv):
    """The body of a GET served from the watch cache once it holds revision rv."""
    deadline = time.time() + 10
    while True:
        g = admin().get(path + q(resourceVersion="0"))
        expect_status(g, 200, "GET from the cache")
        if g.json["metadata"]["resourceVersion"] == rv or time.time() > deadline:
            return g.body
        time.sleep(0.05)


def test_update_reply_is_what_the_cache_serves():
    """A create's or an update's reply is the written text with its new resourceVersion, byte for
    byte what a GET then serves from the watch cache, which built its copy from the written tree
    (a write hint) instead of parsing the event again."""
    before = write_hints()
    c = admin().post(pods_path(S["t"]), pod_manifest(uniq("hint"), {"a": "1"}))
    expect_status(c, 201, "create pod")
    p = c.json
    path = pods_path(S["t"], name=p["metadata"]["name"])
    eq(cached_body(path, p["metadata"]["resourceVersion"]), c.body, "the cache's copy against the create reply (bytes)")
    r = admin().patch(path, {"metadata": {"labels": {"b": "2"}}}, "application/merge-patch+json")
    expect_status(r, 200, "merge patch")
    rv = r.json["metadata"]["resourceVersion"]
    check(int(rv) > int(p["metadata"]["resourceVersion"]), "resourceVersion did not move: %r" % rv)
    eq(r.json["metadata"]["labels"], {"a": "1", "b": "2"}, "labels in the reply")
    eq(cached_body(path, rv), r.body, "the cache's copy against the PATCH reply (bytes)")
    after = write_hints()
    check(after.get("used", 0) >= before.get("used", 0) + 2,
          "the cache did not build the patched pod from its write hint: %r -> %r" % (before, after))
    # a label selector on the cached copy sees the patched label (labels come from the tree)
    names = [i["metadata"]["name"] for i in list_pods(labelSelector="b=2", resourceVersion="0")["items"]]
    eq(names, [p["metadata"]["name"]], "pods with b=2 in the cache")


def cache_trees():
    r = admin().get("/metrics")
    expect_status(r, 200, "GET /metrics")
    return {k: int(v) for k, v in
            re.findall(r'^ursa_apiserver_cache_trees_total\{result="(\w+)"\} (\d+)$', r.text, re.M)}


def test_updates_read_the_tree_of_the_last_write():
    """An update of an object this server wrote a moment ago reads the tree of that write, kept
    by the watch cache, instead of parsing the cached text; the tree is shared, so each update
    must change copies only: a binding, a status patch and a JSON patch in a row, each checked
    whole, and each counted as a tree read in /metrics."""
    c = admin().post(pods_path(S["t"]), pod_manifest(uniq("tree"), {"app": "t"}))
    expect_status(c, 201, "create pod")
    name, rv = c.json["metadata"]["name"], c.json["metadata"]["resourceVersion"]
    path = pods_path(S["t"], name=name)
    cached_body(path, rv)
    before = cache_trees()
    b = admin().post(path + "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                         "target": {"apiVersion": "v1", "kind": "Node", "name": "tree-node"}})
    expect_status(b, 201, "binding")
    g = admin().get(path)
    expect_status(g, 200, "GET the bound pod")
    bound = g.json
    eq(bound["spec"].get("nodeName"), "tree-node", "spec.nodeName after the binding")
    eq([(x["type"], x["status"]) for x in bound["status"].get("conditions", [])], [("PodScheduled", "True")],
       "conditions after the binding")
    for k in ("uid", "hashKey", "creationTimestamp", "labels"):
        eq(bound["metadata"].get(k), c.json["metadata"].get(k), "metadata.%s kept by the binding" % k)
    eq(bound["spec"]["containers"], c.json["spec"]["containers"], "containers kept by the binding")
    cached_body(path, bound["metadata"]["resourceVersion"])
    s = admin().patch(path + "/status", {"status": {"phase": "Running"}}, "application/merge-patch+json")
    expect_status(s, 200, "status patch")
    eq(s.json["status"]["phase"], "Running", "phase after the status patch")
    eq(s.json["spec"].get("nodeName"), "tree-node", "spec.nodeName after the status patch")
    eq(len(s.json["status"].get("conditions", [])), 1, "conditions after the status patch")
    rv = s.json["metadata"]["resourceVersion"]
    cached_body(path, rv)
    # the object read from a tree carries its resourceVersion, as the text would
    j = admin().patch(path, [{"op": "test", "path": "/metadata/resourceVersion", "value": rv},
                             {"op": "add", "path": "/metadata/labels/more", "value": "yes"}],
                      "application/json-patch+json")
    expect_status(j, 200, "JSON patch testing the resourceVersion")
    eq(j.json["metadata"]["labels"], {"app": "t", "more": "yes"}, "labels after the JSON patch")
    eq(j.json["status"]["phase"], "Running", "phase after the JSON patch")
    again = admin().post(path + "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                             "target": {"name": "other-node"}})
    expect_status(again, 409, "a second binding", "Conflict")
    after = cache_trees()
    check(after.get("used", 0) >= before.get("used", 0) + 3,
          "the updates did not read the kept trees: %r -> %r" % (before, after))
    eq(admin().get(path).json["spec"].get("nodeName"), "tree-node", "spec.nodeName at the end")


def test_merge_json_and_strategic_patches():
    p = create_pod(uniq("patch"), {"keep": "yes"})
    path = pods_path(S["t"], name=p["metadata"]["name"])
    r = admin().patch(path, {"metadata": {"labels": {"m": "1"}}}, "application/merge-patch+json")
    expect_status(r, 200, "merge patch")
    eq(r.json["metadata"]["labels"], {"keep": "yes", "m": "1"}, "labels after merge patch")
    r = admin().patch(path, [{"op": "add", "path": "/metadata/labels/j", "value": "2"},
                             {"op": "remove", "path": "/metadata/labels/m"}],
                      "application/json-patch+json")
    expect_status(r, 200, "json patch")
    eq(r.json["metadata"]["labels"], {"keep": "yes", "j": "2"}, "labels after json patch")
    r = admin().patch(path, {"metadata": {"labels": {"s": "3", "j": None}}},
                      "application/strategic-merge-patch+json")
    expect_status(r, 200, "strategic merge patch")
    eq(r.json["metadata"]["labels"], {"keep": "yes", "s": "3"}, "labels after strategic merge patch")

    # Lists: strategic merge merges containers by name; merge patch replaces the list.
    d = deployment_manifest(uniq("smp"))
    r = admin().post(deployments_path(S["t"]), d)
    expect_status(r, 201, "create deployment")
    dpath = deployments_path(S["t"], name=d["metadata"]["name"])
    side = {"spec": {"template": {"spec": {"containers": [{"name": "side", "image": "busybox:1.36"}]}}}}
    r = admin().patch(dpath, side, "application/strategic-merge-patch+json")
    expect_status(r, 200, "strategic merge patch of containers")
    got = {c["name"]: c["image"] for c in r.json["spec"]["template"]["spec"]["containers"]}
    eq(got, {"c": "nginx:1.25", "side": "busybox:1.36"}, "containers after strategic merge (merged by name)")
    r = admin().patch(dpath, side, "application/merge-patch+json")
    expect_status(r, 200, "merge patch of containers")
    got = [c["name"] for c in r.json["spec"]["template"]["spec"]["containers"]]
    eq(got, ["side"], "containers after merge patch (list replaced)")


APPLY_YAML = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: %(name)s
  labels:
    via: apply
spec:
  replicas: %(replicas)d
  selector:
    matchLabels:
      app: %(name)s
  template:
    metadata:
      labels:
        app: %(name)s
    spec:
      containers:
      - name: c
        image: nginx:1.25
"""


def test_apply_patch_creates_missing_object():
    name = uniq("applied")
    path = deployments_path(S["t"], name=name) + q(fieldManager="ursa-test")
    r = admin().patch(path, APPLY_YAML % {"name": name, "replicas": 2}, "application/apply-patch+yaml")
    expect_status(r, 201, "apply-patch of a missing deployment")
    eq(r.json["spec"]["replicas"], 2, "spec.replicas after apply")
    eq(r.json["metadata"].get("labels"), {"via": "apply"}, "labels after apply")
    eq(r.json["metadata"].get("generation"), 1, "generation of the applied deployment")
    r = admin().patch(path, APPLY_YAML % {"name": name, "replicas": 3}, "application/apply-patch+yaml")
    expect_status(r, 200, "apply-patch of an existing deployment")
    eq(r.json["spec"]["replicas"], 3, "spec.replicas after second apply")
    eq(r.json["metadata"].get("generation"), 2, "generation after a spec change by apply")


def test_delete_returns_object():
    p = create_pod(uniq("del"))
    path = pods_path(S["t"], name=p["metadata"]["name"])
    r = admin().delete(path)
    expect_status(r, 200, "DELETE pod")
    eq(r.json.get("kind"), "Pod", "DELETE answers with the object (kind)")
    eq(r.json["metadata"].get("uid"), p["metadata"]["uid"], "DELETE answers with the object (uid)")
    expect_status(admin().get(path), 404, "GET after DELETE", "NotFound")
    expect_status(admin().delete(path), 404, "second DELETE", "NotFound")


def test_finalizers_hold_deletion():
    p = create_pod(uniq("fin"), finalizers=["ursa.test/keep"])
    path = pods_path(S["t"], name=p["metadata"]["name"])
    r = admin().delete(path)
    expect_status(r, 200, "DELETE pod with a finalizer")
    check(r.json["metadata"].get("deletionTimestamp"),
          "DELETE answer lacks deletionTimestamp: %r" % r.json["metadata"])
    r = admin().get(path)
    expect_status(r, 200, "GET pod held by a finalizer")
    check(r.json["metadata"].get("deletionTimestamp"), "deletionTimestamp not stored: %r" % r.json["metadata"])
    eq(r.json["metadata"].get("finalizers"), ["ursa.test/keep"], "finalizers while terminating")
    check(p["metadata"]["name"] in names(list_pods()), "terminating pod missing from the list")
    r = admin().patch(path, {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    expect_status(r, 200, "removing the last finalizer")
    expect_status(admin().get(path), 404, "GET after the last finalizer was removed", "NotFound")


def test_deletecollection():
    r = uniq("dc")
    for i in range(3):
        create_pod("%s-%d" % (r, i), {"dc": r})
    create_pod(r + "-other", {"dc": r + "-x"})
    resp = admin().delete(pods_path(S["t"]) + q(labelSelector="dc=" + r))
    expect_status(resp, 200, "DELETE collection with labelSelector")
    eq(names(list_pods(labelSelector="dc=" + r)), [], "pods left after deletecollection")
    eq(names(list_pods(labelSelector="dc=%s-x" % r)), [r + "-other"],
       "pods outside the selector survive deletecollection")


def test_generation_bumps_only_on_spec_changes():
    d = deployment_manifest(uniq("gen"))
    r = admin().post(deployments_path(S["t"]), d)
    expect_status(r, 201, "create deployment")
    eq(r.json["metadata"].get("generation"), 1, "generation at create")
    path = deployments_path(S["t"], name=d["metadata"]["name"])
    r = admin().patch(path, {"metadata": {"labels": {"x": "y"}, "annotations": {"a": "b"}}})
    expect_status(r, 200, "metadata patch")
    eq(r.json["metadata"].get("generation"), 1, "generation after a metadata-only change")
    r = admin().patch(path, {"spec": {"replicas": 4}})
    expect_status(r, 200, "spec patch")
    eq(r.json["metadata"].get("generation"), 2, "generation after a spec change")
    r = admin().patch(path + "/status", {"status": {"observedGeneration": 2, "replicas": 0}})
    expect_status(r, 200, "status patch")
    eq(r.json["metadata"].get("generation"), 2, "generation after a status-only change")
    eq(r.json["status"].get("observedGeneration"), 2, "status.observedGeneration stored via /status")
    r = admin().patch(path, {"spec": {"replicas": 4}})
    expect_status(r, 200, "no-op spec patch")
    eq(r.json["metadata"].get("generation"), 2, "generation after a spec patch that changes nothing")


def test_watch_without_resource_version_sends_synthetic_added():
    r = uniq("wsyn")
    create_pod(r + "-1", {"w": r})
    create_pod(r + "-2", {"w": r})
    start = time.monotonic()
    w = admin().watch(pods_path(S["t"]) + q(watch="true", labelSelector="w=" + r, timeoutSeconds=3))
    if w.status != 200:
        raise AssertionError("watch: expected HTTP 200, got %r" % w.response)
    w.drain(15)
    check(w.ended, "watch with timeoutSeconds=3 still open after 15 s: %r" % w.summary())
    check(time.monotonic() - start < 12, "watch with timeoutSeconds=3 lasted %.1fs" % (time.monotonic() - start))
    eq(sorted(w.summary()), [("ADDED", r + "-1"), ("ADDED", r + "-2")], "events of a watch without resourceVersion")
    for ev in w.events:
        eq(ev["object"].get("kind"), "Pod", "kind of a watch event's object")
    eq(w.bad_lines, [], "lines of the watch stream that are not JSON")


def test_watch_from_resource_version_sends_only_later_events():
    p = create_pod(uniq("wrv"))
    name = p["metadata"]["name"]
    w = admin().watch(pods_path(S["t"]) + q(watch="true", resourceVersion=p["metadata"]["resourceVersion"],
                                            fieldSelector="metadata.name=" + name, timeoutSeconds=20))
    if w.status != 200:
        raise AssertionError("watch: expected HTTP 200, got %r" % w.response)
    time.sleep(0.5)
    expect_status(admin().patch(pods_path(S["t"], name=name), {"metadata": {"labels": {"w": "1"}}}), 200, "patch")
    expect_status(admin().delete(pods_path(S["t"], name=name)), 200, "delete")
    w.until(lambda ev: ev.get("type") == "DELETED", 15)
    w.close()
    eq([t for t, _ in w.summary()], ["MODIFIED", "DELETED"], "events after the watched resourceVersion")
    eq(w.events[0]["object"]["metadata"].get("labels"), {"w": "1"}, "MODIFIED event's labels")


def test_watch_bookmarks():
    w = admin().watch(pods_path(S["t"]) + q(watch="true", allowWatchBookmarks="true",
                                            labelSelector="none=" + uniq("bm"), timeoutSeconds=8))
    if w.status != 200:
        raise AssertionError("watch: expected HTTP 200, got %r" % w.response)
    w.drain(25)
    marks = [e for e in w.events if e.get("type") == "BOOKMARK"]
    check(marks, "no BOOKMARK event before the watch ended (timeoutSeconds=8): %r" % w.events)
    obj = marks[0]["object"]
    eq(obj.get("kind"), "Pod", "BOOKMARK object's kind")
    check((obj.get("metadata") or {}).get("resourceVersion"), "BOOKMARK lacks metadata.resourceVersion: %r" % obj)
    eq([e.get("type") for e in w.events if e.get("type") != "BOOKMARK"], [],
       "non-bookmark events for a selector that matches nothing")


def open_watches():
    r = admin().get("/metrics")
    expect_status(r, 200, "GET /metrics")
    m = re.search(r"^ursa_apiserver_open_watches (\d+)$", r.text, re.M)
    check(m, "no ursa_apiserver_open_watches in /metrics")
    return int(m.group(1))


def test_idle_watch_gets_newlines_and_a_departed_client_is_dropped():
    """A watch of something quiet: between events the server writes a newline every 10 s (JSON
    clients skip whitespace), so a client that went away is noticed at that write instead of
    holding its watcher until the watch's timeout (30 to 60 minutes)."""
    before = open_watches()
    c = admin()
    conn = c.connect(20)
    conn.request("GET", pods_path(S["t"]) + q(watch="true", labelSelector="none=" + uniq("idle")),
                 headers=c._headers(None, None, False))
    r = conn.getresponse()
    eq(r.status, 200, "watch status")
    wait_until(lambda: open_watches() == before + 1, 10, "the watch counted as open")
    t0 = time.monotonic()
    first = r.read(1)
    waited = time.monotonic() - t0
    eq(first, b"\n", "the first byte of a quiet watch")
    check(5 < waited < 15, "newline after about 10 s of quiet, not %.1fs" % waited)
    conn.sock.shutdown(socket.SHUT_RDWR)
    conn.close()
    t1 = time.monotonic()
    wait_until(lambda: open_watches() <= before, 35, "the departed client's watch closed by the server")
    print("idle watch: newline after %.1fs; departed client dropped after %.1fs" % (waited, time.monotonic() - t1))


def test_table_responses():
    p = create_pod(uniq("tbl"))
    name = p["metadata"]["name"]
    for accept in (TABLE, TABLE + ",application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"):
        r = admin().get(pods_path(S["t"]), headers={"Accept": accept})
        expect_status(r, 200, "Table list")
        t = r.json
        eq((t.get("kind"), t.get("apiVersion")), ("Table", "meta.k8s.io/v1"), "Table kind/apiVersion")
        cols = [(c.get("name"), c.get("priority", 0)) for c in t.get("columnDefinitions", [])]
        eq(cols, [("Name", 0), ("Ready", 0), ("Status", 0), ("Restarts", 0), ("Age", 0), ("IP", 1),
                  ("Node", 1), ("Nominated Node", 1), ("Readiness Gates", 1)], "pod Table columns")
        check(t.get("metadata", {}).get("resourceVersion"), "Table lacks metadata.resourceVersion")
        rows = [row for row in t.get("rows", []) if row["cells"][0] == name]
        eq(len(rows), 1, "Table rows for pod %s" % name)
        row = rows[0]
        eq(len(row["cells"]), len(cols), "cells in a row")
        eq(row["cells"][1:3], ["0/1", "Pending"], "Ready and Status cells")
        check(row["cells"][3] in (0, "0"), "Restarts cell: %r" % row["cells"][3])
        eq(row["object"].get("kind"), "PartialObjectMetadata", "row object kind")
        eq(row["object"]["metadata"].get("name"), name, "row object name")
    r = admin().get(pods_path(S["t"], name=name), headers={"Accept": TABLE})
    expect_status(r, 200, "Table get")
    eq(r.json.get("kind"), "Table", "single-object Table kind")
    eq([row["cells"][0] for row in r.json.get("rows", [])], [name], "single-object Table rows")
    # A list's rows are built from the stored text (table.c table_list_text), a single object's
    # from the parsed object: the same cells, and the row's metadata is the object's.
    single = r.json["rows"][0]
    create_pod(uniq("tbl2"))
    got = admin().get(pods_path(S["t"], name=name)).json
    rows, cont = [], None
    while True:
        r = admin().get(pods_path(S["t"]) + "?limit=1" + ("&continue=" + urllib.parse.quote(cont, safe="") if cont else ""), headers={"Accept": TABLE})
        expect_status(r, 200, "Table page")
        eq(len(r.json["rows"]), 1, "rows in a Table page of limit=1")
        rows += r.json["rows"]
        plain = admin().get(pods_path(S["t"]) + "?limit=1" + ("&continue=" + urllib.parse.quote(cont, safe="")
                                                              if cont else "")).json
        eq(sorted(r.json["metadata"]), sorted(plain["metadata"]), "Table and plain list page metadata")
        cont = r.json["metadata"].get("continue")
        if not cont:
            break
    mine = [row for row in rows if row["cells"][0] == name]
    eq(len(mine), 1, "paged Table rows for pod %s" % name)
    eq(mine[0]["cells"][:4] + mine[0]["cells"][5:], single["cells"][:4] + single["cells"][5:],
       "list and single-object cells (but Age)")
    eq(mine[0]["object"], {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                           "metadata": got["metadata"]}, "row object of a list page")


def test_sre_role_reads_everything_and_writes_nothing():
    """Group ursa:sre of tenant system: read-only across tenants, no secrets (Kubernetes' view)."""
    name = create_pod(uniq("sre"))["metadata"]["name"]
    r = admin().post("/api/v1/tenants/%s/namespaces/default/secrets" % S["t"],
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s1"},
                      "stringData": {"k": "v"}})
    expect_status(r, 201, "admin creates a secret")
    sre = S["api"].user_client("system", "sre-1", ("ursa:sre",))
    expect_status(sre.get(pods_path(S["t"], name=name)), 200, "SRE gets a tenant's pod")
    expect_status(sre.get(pods_path(S["t"])), 200, "SRE lists a tenant's pods")
    r = sre.get("/api/v1/tenants/all/pods")
    expect_status(r, 200, "SRE lists pods of all tenants")
    check(name in names(r.json), "pod %s missing from the all-tenants list" % name)
    expect_status(sre.get("/api/v1/tenants"), 200, "SRE lists tenants")
    expect_status(sre.get("/api/v1/tenants/%s" % S["t"]), 200, "SRE gets a tenant")
    w = sre.watch(pods_path(S["t"]) + "?watch=true")
    try:
        ev = w.until(lambda e: e["object"]["metadata"]["name"] == name, 10)
        eq(ev["type"], "ADDED", "SRE's watch sees the pod")
    finally:
        w.close()
    denied = [
        ("POST", pods_path(S["t"]), pod_manifest(uniq("nope"))),
        ("DELETE", pods_path(S["t"], name=name), None),
        ("PATCH", pods_path(S["t"], name=name), {"metadata": {"labels": {"x": "y"}}}),
        ("DELETE", "/api/v1/tenants/%s" % S["t"], None),
        ("POST", "/api/v1/namespaces/default/configmaps",
         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "own"}}),
        ("GET", "/api/v1/tenants/%s/namespaces/default/secrets/s1" % S["t"], None),
        ("GET", "/api/v1/tenants/%s/namespaces/default/secrets" % S["t"], None),
    ]
    for method, path, body in denied:
        if method == "PATCH":
            r = sre.patch(path, body)
        else:
            r = sre.request(method, path, body)
        expect_status(r, 403, "SRE %s %s" % (method, path), "Forbidden")
    expect_status(admin().get(pods_path(S["t"], name=name)), 200, "pod survives the SRE's delete")
    # The group means nothing outside tenant system.
    other = S["api"].user_client(uniq("x"), "eve", ("ursa:sre",))
    expect_status(other.get(pods_path(S["t"])), 403, "ursa:sre of another tenant", "Forbidden")
    expect_status(other.get("/api/v1/tenants/all/pods"), 403, "ursa:sre of another tenant, all", "Forbidden")


def test_node_role_writes_only_what_a_kubelet_writes():
    """Group system:nodes of tenant system (a kubelet's credential), in a tenant partition: reads
    like an SRE; writes a pod's status and its final delete, nothing else. (Nodes and leases, on a
    resource manager: tests/integration/test_kubelet.py.)"""
    node = S["api"].user_client("system", "kubelet-z", ("system:nodes",))
    name = create_pod(uniq("nd"))["metadata"]["name"]
    pod = pods_path(S["t"], name=name)
    r = node.get("/api/v1/tenants/all/pods")
    expect_status(r, 200, "node lists pods of all tenants")
    check(name in names(r.json), "pod %s missing from the node's all-tenants list" % name)
    expect_status(node.get(pod), 200, "node gets a tenant's pod")
    r = node.patch(pod + "/status", {"status": {"phase": "Running"}})
    expect_status(r, 200, "node patches a pod's status")
    eq(r.json["status"]["phase"], "Running", "pod status as the node set it")
    denied = [
        ("POST", pods_path(S["t"]), pod_manifest(uniq("nope"))),
        ("PATCH", pod, {"metadata": {"labels": {"x": "y"}}}),
        ("POST", pod + "/binding", {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                    "target": {"kind": "Node", "name": "n1"}}),
        ("GET", "/api/v1/tenants/%s/namespaces/default/secrets" % S["t"], None),
        ("POST", "/api/v1/tenants/%s/namespaces/default/configmaps" % S["t"],
         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n"}}),
        ("DELETE", "/api/v1/tenants/%s" % S["t"], None),
        ("POST", "/api/v1/tenants", {"apiVersion": "v1", "kind": "Tenant", "metadata": {"name": uniq("tn")}}),
    ]
    for method, path, body in denied:
        r = node.patch(path, body) if method == "PATCH" else node.request(method, path, body)
        expect_status(r, 403, "node %s %s" % (method, path), "Forbidden")
    expect_status(node.request("DELETE", "/api/v1/tenants/all/namespaces/default/pods/%s" % name, None), 400,
                  "node deletes through tenant all", "BadRequest")
    r = admin().get(pod)
    check(not r.json.get("metadata", {}).get("labels", {}).get("x"), "the node's label patch was refused")
    eq(r.json["spec"].get("nodeName"), None, "the node's binding was refused")
    expect_status(node.request("DELETE", pod, None), 200, "node deletes a pod (a kubelet's final delete)")
    # The group means nothing outside tenant system.
    other = S["api"].user_client(uniq("x"), "mallory", ("system:nodes",))
    expect_status(other.get("/api/v1/tenants/all/pods"), 403, "system:nodes of another tenant, all", "Forbidden")


def test_named_node_writes_only_its_own_pods():
    """A node credential that names its node (user system:node:<name>, as Kubernetes' node
    credentials; NodeRestriction): a pod's status and final delete only for pods bound to that
    node; pods bound elsewhere or to no node get 403 and stay as they were."""
    me, other = uniq("node-a"), uniq("node-b")
    node = S["api"].user_client("system", "system:node:" + me, ("system:nodes",))
    pods = {}
    for role, target in (("mine", me), ("theirs", other), ("unbound", None)):
        name = create_pod(uniq("nn"))["metadata"]["name"]
        if target:
            expect_status(admin().post(pods_path(S["t"], name=name) + "/binding",
                                       {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                        "target": {"kind": "Node", "name": target}}), 201, "bind %s" % role)
        pods[role] = pods_path(S["t"], name=name)
    r = node.patch(pods["mine"] + "/status", {"status": {"phase": "Running"}})
    expect_status(r, 200, "node patches the status of a pod bound to it")
    eq(r.json["status"]["phase"], "Running", "status as the node set it")
    for role in ("theirs", "unbound"):
        r = node.patch(pods[role] + "/status", {"status": {"phase": "Failed"}})
        expect_status(r, 403, "node patches the status of a pod %s" % role, "Forbidden")
        check("can only modify pods with spec.nodeName set to itself" in r.json.get("message", ""),
              "403 names the rule: %s" % r.json.get("message"))
        r = node.request("PUT", pods[role] + "/status", admin().get(pods[role]).json)
        expect_status(r, 403, "node replaces the status of a pod %s" % role, "Forbidden")
        expect_status(node.request("DELETE", pods[role], None), 403, "node deletes a pod %s" % role, "Forbidden")
        r = admin().get(pods[role])
        expect_status(r, 200, "the pod %s is still there" % role)
        check(r.json.get("status", {}).get("phase") != "Failed", "the pod %s's status is unchanged" % role)
    expect_status(node.request("DELETE", pods["mine"], None), 200, "node deletes a pod bound to it")
    for role in ("theirs", "unbound"):
        expect_status(admin().request("DELETE", pods[role], None), 200, "admin deletes the pod %s" % role)


def assertion(claims, key=None):
    """An identity assertion as a gateway makes it (auth.h): v1.<b64url claims>.<b64url HMAC>."""
    def b64(b):
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()
    body = "v1." + b64(json.dumps(claims).encode())
    mac = hmac.new((key or IDKEY).encode(), body.encode(), hashlib.sha256).digest()
    return body + "." + b64(mac)


def tamper_mac(a):
    """The assertion with its MAC's first character changed (always a different MAC)."""
    body, mac = a.rsplit(".", 1)
    return body + "." + ("B" if mac[0] == "A" else "A") + mac[1:]


def test_gateway_identity_assertions():
    """Partitions take the caller from X-Ursa-Identity only when its MAC verifies under the key."""
    now = int(time.time())
    alice = {"iss": "ursa", "sub": "alice", "tenant": S["t"], "groups": ["ursa:tenant-admins"], "iat": now,
             "exp": now + 30}
    anon = S["api"].client()
    r = anon.get(pods_path(S["t"]), headers={"X-Ursa-Identity": assertion(alice)})
    expect_status(r, 200, "list as an asserted tenant user")
    r = anon.get(pods_path("system"), headers={"X-Ursa-Identity": assertion(alice)})
    expect_status(r, 403, "asserted tenant user reaches another tenant", "Forbidden")
    forged = dict(alice, tenant="system", groups=["system:masters"])
    bad = [assertion(forged, key="x" * 64),                      # another key
           assertion(dict(alice, exp=now - 5)),                  # expired
           tamper_mac(assertion(alice)),                         # tampered MAC
           "Bearer " + S["api"].admin_token]                     # not an assertion
    for h in bad:
        r = anon.get(pods_path(S["t"]), headers={"X-Ursa-Identity": h})
        expect_status(r, 401, "bad assertion %s..." % h[:12], "Unauthorized")
    # A bad assertion is not rescued by a good bearer token beside it.
    r = admin().get(pods_path(S["t"]), headers={"X-Ursa-Identity": bad[0]})
    expect_status(r, 401, "bad assertion beside an admin token", "Unauthorized")


if __name__ == "__main__":
    run(globals())
