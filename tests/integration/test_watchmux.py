#!/usr/bin/python3
"""Multiplexed watches (POST /ursa/v1/watches) on a real ursa-tp-apiserver and etcd: events go
to the watch they match, each watch is authorized as its plain GET would be, one refused or
expired watch ends alone, bad bodies are 400s, the stream ends at its timeout, and a client that
leaves frees every watcher.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_watchmux.py"""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Etcd, check, create_tenant, eq, expect_status,  # noqa: E402
                          pods_path, run, uniq, wait_until)

S = {}
MUX = "/ursa/v1/watches"


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("mux")
    S["other"] = uniq("muxo")
    create_tenant(S["admin"], S["t"])
    create_tenant(S["admin"], S["other"])


def bound_pod(name, node):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]}}


def create_bound(tenant, name, node):
    r = S["admin"].post(pods_path(tenant), bound_pod(name, node))
    expect_status(r, 201, "create pod %s on %s" % (name, node))
    return r.json


def by_id(events):
    out = {}
    for e in events:
        out.setdefault(e.get("id"), []).append(e)
    return out


def obj_name(e):
    return ((e.get("object") or {}).get("metadata") or {}).get("name")


def test_events_reach_the_watch_they_match():
    t = S["t"]
    n1, n2 = uniq("node"), uniq("node")
    body = {"watches": [
        {"id": "a", "path": "/api/v1/tenants/all/pods", "fieldSelector": "spec.nodeName=" + n1},
        {"id": "b", "path": "/api/v1/tenants/all/pods", "fieldSelector": "spec.nodeName=" + n2},
        {"id": "c", "path": "/api/v1/tenants/%s/namespaces/default/configmaps" % t},
    ]}
    w = S["admin"].watch(MUX, method="POST", body=body, timeout=30)
    eq(w.status, 200, "mux status")
    create_bound(t, "p1", n1)
    create_bound(S["other"], "p2", n2)   # another tenant: the all-tenant watch sees it
    create_bound(t, "p3", uniq("node"))  # nobody's
    r = S["admin"].post("/api/v1/tenants/%s/namespaces/default/configmaps" % t,
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1"}})
    expect_status(r, 201, "create configmap")
    wait_until(lambda: (w.next(0.2) or True) and len(w.events) >= 3, 10, "three events")
    w.drain(1.0)
    ev = by_id(w.events)
    eq([(e["type"], obj_name(e)) for e in ev.get("a", [])], [("ADDED", "p1")], "watch a")
    eq([(e["type"], obj_name(e)) for e in ev.get("b", [])], [("ADDED", "p2")], "watch b")
    eq([(e["type"], obj_name(e)) for e in ev.get("c", [])], [("ADDED", "cm1")], "watch c")
    eq(sorted(ev), ["a", "b", "c"], "no event without its watch's id")
    # a change and a deletion reach the same watch
    r = S["admin"].patch(pods_path(t, name="p1"), {"metadata": {"labels": {"x": "y"}}})
    expect_status(r, 200, "label p1")
    r = S["admin"].delete(pods_path(t, name="p1") + "?gracePeriodSeconds=0")
    check(r.status in (200, 202), "delete p1: %d" % r.status)
    w.until(lambda e: e.get("id") == "a" and e["type"] == "DELETED", 10)
    eq([e["type"] for e in by_id(w.events)["a"]][:2], ["ADDED", "MODIFIED"], "watch a after the label")
    check(any(e["type"] == "DELETED" for e in by_id(w.events)["a"]), "watch a sees the deletion")
    w.close()


def test_each_watch_is_authorized_and_ends_alone():
    t = S["t"]
    alice = S["api"].user_client(t, "alice", ("ursa:tenant-admins",))
    body = {"watches": [
        {"id": "mine", "path": "/api/v1/tenants/%s/namespaces/default/pods" % t},
        {"id": "theirs", "path": "/api/v1/tenants/%s/namespaces/default/pods" % S["other"]},
        {"id": "nokind", "path": "/api/v1/tenants/%s/namespaces/default/nosuchthings" % t},
        {"id": "badsel", "path": "/api/v1/tenants/%s/namespaces/default/pods" % t, "fieldSelector": "spec.nope=1"},
    ]}
    w = alice.watch(MUX, method="POST", body=body, timeout=30)
    eq(w.status, 200, "mux status as a tenant user")
    errors = lambda: [e for e in w.events if e["type"] == "ERROR"]  # noqa: E731
    wait_until(lambda: (w.next(0.2) or True) and len(errors()) >= 3, 10, "three ERROR lines")
    ev = by_id(w.events)
    for wid, code in (("theirs", 403), ("nokind", 404), ("badsel", 400)):
        check(wid in ev, "an answer for %s: %r" % (wid, w.events))
        e = ev[wid][0]
        eq((e["type"], e["object"].get("kind"), e["object"].get("code")), ("ERROR", "Status", code),
           "watch %s ends with its Status" % wid)
        eq(len(ev[wid]), 1, "nothing after %s's ERROR" % wid)
    check(all(e["type"] == "ADDED" for e in ev.get("mine", [])), "no ERROR for the allowed watch")
    create_bound(t, "alice-pod", uniq("node"))
    e = w.until(lambda e: e.get("id") == "mine" and obj_name(e) == "alice-pod", 10)
    check(e is not None and obj_name(e) == "alice-pod", "the allowed watch goes on: %r" % (e,))
    w.close()
    # the same refusal on the plain watch, for comparison
    r = alice.get("/api/v1/tenants/%s/namespaces/default/pods?watch=1" % S["other"])
    eq(r.status, 403, "plain watch of another tenant")


def test_resource_versions_as_a_plain_watch():
    """A watch from a resourceVersion starts where the plain watch would: after it, or 410 when
    the cache no longer holds it."""
    t = S["t"]
    first = create_bound(t, uniq("rv"), "rv-node")
    rv = first["metadata"]["resourceVersion"]
    second = create_bound(t, uniq("rv"), "rv-node")
    path = "/api/v1/tenants/%s/namespaces/default/pods" % t
    body = {"watches": [{"id": "from", "path": path, "resourceVersion": rv, "fieldSelector": "spec.nodeName=rv-node"},
                        {"id": "ancient", "path": path, "resourceVersion": "1", "fieldSelector": "spec.nodeName=rv-node"}]}
    w = S["admin"].watch(MUX, method="POST", body=body, timeout=30)
    eq(w.status, 200, "mux status")
    p = S["admin"].watch(path + "?watch=1&resourceVersion=1&fieldSelector=spec.nodeName%3Drv-node", timeout=30)
    e = w.until(lambda e: e.get("id") == "from", 10)
    eq((e["type"], obj_name(e)), ("ADDED", second["metadata"]["name"]), "the first event after the resourceVersion")
    pe = p.next(10)
    me = w.until(lambda e: e.get("id") == "ancient", 10)
    eq((me["type"], (me["object"].get("code"), obj_name(me))), (pe["type"], (pe["object"].get("code"), obj_name(pe))),
       "resourceVersion 1: the multiplexed watch answers as the plain one")
    w.close()
    p.close()


def test_bad_bodies_are_400_and_start_nothing():
    before = open_watches()
    bad = [
        b"not json",
        b"[]",
        {"watches": []},
        {"watches": "x"},
        {"watches": [{"path": "/api/v1/pods"}]},                       # no id
        {"watches": [{"id": "x"}]},                                    # no path
        {"watches": [{"id": "x", "path": "api/v1/pods"}]},             # not absolute
        {"watches": [{"id": "x", "path": "/api/v1/pods?watch=1"}]},    # a query
        {"watches": [{"id": 7, "path": "/api/v1/pods"}]},
        {"watches": [{"id": "x", "path": "/api/v1/pods", "resourceVersion": "-3"}]},
        {"watches": [{"id": "x", "path": "/api/v1/pods", "allowWatchBookmarks": "yes"}]},
        {"watches": [{"id": "x", "path": "/api/v1/pods"}], "timeoutSeconds": -1},
        {"watches": [{"id": "w%d" % i, "path": "/api/v1/pods"} for i in range(10001)]},
    ]
    for b in bad:
        r = S["admin"].post(MUX, b)
        expect_status(r, 400, "bad body %r" % (str(b)[:60],), "BadRequest")
    r = S["admin"].get(MUX)
    expect_status(r, 405, "GET of the mux", "MethodNotAllowed")
    r = S["api"].client().post(MUX, {"watches": [{"id": "x", "path": "/api/v1/pods"}]})
    expect_status(r, 401, "anonymous mux", "Unauthorized")
    eq(open_watches(), before, "open watches after the refused requests")


def open_watches():
    r = S["admin"].get("/metrics")
    expect_status(r, 200, "metrics")
    for line in r.body.decode().splitlines():
        if line.startswith("ursa_apiserver_open_watches "):
            return int(line.split()[1])
    raise AssertionError("no ursa_apiserver_open_watches in /metrics")


def test_timeout_and_bookmarks():
    t = S["t"]
    body = {"timeoutSeconds": 2, "watches": [
        {"id": "bm", "path": "/api/v1/tenants/%s/namespaces/default/configmaps" % t, "allowWatchBookmarks": True,
         "labelSelector": "none=1"},
        {"id": "plain", "path": "/api/v1/tenants/%s/namespaces/default/configmaps" % t, "labelSelector": "none=1"},
    ]}
    start = time.monotonic()
    w = S["admin"].watch(MUX, method="POST", body=body, timeout=30)
    eq(w.status, 200, "mux status")
    events = w.drain(10)
    took = time.monotonic() - start
    check(w.ended, "the stream ended")
    check(1.5 <= took <= 6, "ended at its timeout: %.1f s" % took)
    eq([(e.get("id"), e["type"]) for e in events], [("bm", "BOOKMARK")],
       "a final bookmark for the watch that asked, none for the other")


def test_client_that_leaves_frees_every_watcher():
    t = S["t"]
    before = open_watches()
    body = {"watches": [{"id": "n%d" % i, "path": "/api/v1/tenants/all/pods",
                         "fieldSelector": "spec.nodeName=gone-%d" % i} for i in range(500)]}
    w = S["admin"].watch(MUX, method="POST", body=body, timeout=30)
    eq(w.status, 200, "mux of 500 watches")
    wait_until(lambda: open_watches() >= before + 500, 10, "500 watchers open")
    w.close()
    # the server notices at its next write: an event of one of the watches, or the idle newline
    create_bound(t, "wake-gone", "gone-7")
    wait_until(lambda: open_watches() <= before, 20, "the watchers freed after the client left")


if __name__ == "__main__":
    run(globals())
