#!/usr/bin/python3
"""Consistent lists from the watch cache and watch resumption after a restart (issue 22).

A list with resourceVersion unset is served from the cache once it has applied etcd's current
revision: a quiet kind's cache proves that with its progress marker (a key inside its prefix),
so a list of it right after writes of another kind is quick and current; a list sees a write
made just before it; pages stay at one revision; etcd is not listed. The marker never shows:
not in lists (JSON, Table, paginated, from the cache or from etcd), not in watches, not by name.
After a kill -9 and restart the cache is current at once (a deleted object stays deleted) and a
watch from a resourceVersion a few hundred revisions back gets exactly the events it missed;
one older than the history window, or than an etcd compaction, gets 410 Expired. A quiet kind's
watch gets bookmarks that follow etcd's revision, so it resumes after a restart from its last
bookmark even when its list is older than the window.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_list_consistent.py"""

import json
import os
import re
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Client, Etcd, check, create_tenant, eq, expect_status,  # noqa: E402
                          pod_manifest, pods_path, q, run, uniq, wait_until)

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
MARKER = "~progress"
HISTORY_BACK = 10000  # wcache_etcd.c DEF_HISTORY_BACK
PROGRESS_LAG_REVS = 500  # apiserver/internal.h: how far a cache falls behind before its marker
S = {}


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("lc")
    create_tenant(S["admin"], S["t"])


def admin():
    return S["admin"]


def create_pod(name, labels=None):
    r = admin().post(pods_path(S["t"]), pod_manifest(name, labels))
    expect_status(r, 201, "create pod %s" % name)
    return r.json


def cm_path(name=None):
    p = "/api/v1/tenants/%s/namespaces/default/configmaps" % S["t"]
    return p + "/" + name if name else p


def create_cm(name):
    r = admin().post(cm_path(), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
                                 "data": {"k": "v"}})
    expect_status(r, 201, "create configmap %s" % name)
    return r.json


def etcd_ops(op):
    """How many etcd requests of an operation the API server made so far."""
    r = admin().get("/metrics")
    expect_status(r, 200, "metrics")
    m = re.search(r'ursa_etcd_request_duration_seconds_count\{operation="%s"\} (\d+)' % op, r.body.decode())
    return int(m.group(1)) if m else 0


def names_of(lst):
    return [i["metadata"]["name"] for i in lst["items"]]


def no_marker(text, what):
    check(MARKER not in text and "progress marker" not in text, "%s shows the progress marker: %s"
          % (what, text[:300]))


def test_quiet_kind_list_is_quick_and_current():
    # secrets are quiet: nothing writes them while configmaps are written
    name = uniq("s")
    r = admin().post("/api/v1/tenants/%s/namespaces/default/secrets" % S["t"],
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, "data": {}})
    expect_status(r, 201, "create secret")
    lists0 = etcd_ops("list")
    lat = []
    for i in range(15):
        create_cm(uniq("cm"))
        cur = S["etcd"].revision()
        t0 = time.monotonic()
        r = admin().get("/api/v1/tenants/%s/namespaces/default/secrets" % S["t"])
        lat.append(time.monotonic() - t0)
        expect_status(r, 200, "consistent list of a quiet kind")
        check(int(r.json["metadata"]["resourceVersion"]) >= cur,
              "list revision %s older than etcd's %d before it" % (r.json["metadata"]["resourceVersion"], cur))
        check(name in names_of(r.json), "secret missing")
        no_marker(r.body.decode(), "secrets list")
    med = statistics.median(lat)
    print("  quiet-kind consistent list: median %.1f ms, max %.1f ms" % (med * 1e3, max(lat) * 1e3))
    check(med < 0.25, "median consistent list of a quiet kind took %.0f ms (waited for the 1 s timeout?)"
          % (med * 1e3))
    eq(etcd_ops("list") - lists0, 0, "etcd lists for consistent lists served from the cache")
    keys = S["etcd"].keys("/registry/secrets/")
    check("/registry/secrets/" + MARKER in keys, "the secrets cache wrote no progress marker: %r" % keys[-3:])


def test_consistent_list_sees_the_write_before_it():
    app = uniq("rw")
    before = etcd_ops("list")
    for i in range(20):
        name = "%s-%d" % (app, i)
        create_pod(name, {"app": app})
        r = admin().get(pods_path(S["t"]) + q(labelSelector="app=" + app))
        expect_status(r, 200, "consistent list")
        check(name in names_of(r.json), "pod %s missing from the consistent list after its create" % name)
        eq(len(r.json["items"]), i + 1, "items")
    eq(etcd_ops("list") - before, 0, "etcd lists for 20 consistent lists")


def test_pages_stay_at_one_revision():
    app = uniq("pg")
    made = ["%s-%d" % (app, i) for i in range(7)]
    for n in made:
        create_pod(n, {"app": app})
    before = etcd_ops("list")
    r = admin().get(pods_path(S["t"]) + q(labelSelector="app=" + app, limit=3))
    expect_status(r, 200, "first page")
    rv = r.json["metadata"]["resourceVersion"]
    got = names_of(r.json)
    eq(got, made[:3], "first page")
    cont = r.json["metadata"].get("continue")
    check(cont, "no continue token on a page of 3 of 7")
    expect_status(admin().delete(pods_path(S["t"], name=made[5])), 200, "delete")
    create_pod(app + "-new", {"app": app})
    expect_status(admin().patch(pods_path(S["t"], name=made[4]), {"metadata": {"labels": {"x": "1"}}}), 200,
                  "patch")
    while cont:
        r = admin().get(pods_path(S["t"]) + q(labelSelector="app=" + app, limit=3, **{"continue": cont}))
        expect_status(r, 200, "next page")
        eq(r.json["metadata"]["resourceVersion"], rv, "a later page's resourceVersion")
        got += names_of(r.json)
        for it in r.json["items"]:
            check("x" not in (it["metadata"].get("labels") or {}), "a later page shows a change after its revision")
        cont = r.json["metadata"].get("continue")
    eq(got, made, "the pages together: the state at the first page's revision")
    eq(etcd_ops("list") - before, 0, "etcd lists for pages served from the cache")
    r = admin().get(pods_path(S["t"]) + q(labelSelector="app=" + app))
    eq(sorted(names_of(r.json)), sorted(made[:5] + made[6:] + [app + "-new"]), "a fresh consistent list")


def all_pages(path, limit, extra=None, accept=None):
    """Every page of a paginated list: (names, texts)."""
    names, texts, cont = [], [], None
    params = dict(extra or {}, limit=limit)
    headers = {"Accept": accept} if accept else None
    while True:
        if cont:
            params["continue"] = cont
            params.pop("resourceVersion", None)
            params.pop("resourceVersionMatch", None)
        r = admin().get(path + q(**params), headers=headers)
        expect_status(r, 200, "page of %s" % path)
        texts.append(r.body.decode())
        if accept:
            names += [row["object"]["metadata"]["name"] for row in r.json["rows"]]
        else:
            names += names_of(r.json)
        cont = r.json["metadata"].get("continue")
        if not cont:
            return names, texts


def test_marker_never_shows():
    # make sure the pods' and tenants' markers exist: consistent lists while other kinds are written
    for _ in range(3):
        create_cm(uniq("cm"))
        expect_status(admin().get("/api/v1/tenants/all/pods"), 200, "all-tenant pods")
        expect_status(admin().get("/api/v1/tenants"), 200, "tenants")
    for prefix in ("/registry/pods/", "/registry/tenants/"):
        check(prefix + MARKER in S["etcd"].keys(prefix), "no marker under %s" % prefix)
    lists0 = etcd_ops("list")
    npods = len(S["etcd"].keys("/registry/pods/")) - 1
    for path in ("/api/v1/tenants/all/pods", "/api/v1/tenants", pods_path(S["t"])):
        for accept in (None, TABLE):
            r = admin().get(path, headers={"Accept": accept} if accept else None)
            expect_status(r, 200, "list %s" % path)
            no_marker(r.body.decode(), "list %s (%s)" % (path, accept or "json"))
            r = admin().get(path + q(resourceVersion="0"), headers={"Accept": accept} if accept else None)
            no_marker(r.body.decode(), "rv=0 list %s (%s)" % (path, accept or "json"))
        # paginated: from the cache (consistent), and from etcd (exact revision, and its continue pages)
        whole = names_of(admin().get(path).json)
        for accept in (None, TABLE):
            names, texts = all_pages(path, 2, accept=accept)
            eq(names, whole, "pages of %s from the cache (%s)" % (path, accept or "json"))
            for t in texts:
                no_marker(t, "page of %s" % path)
        rv = S["etcd"].revision()
        names, texts = all_pages(path, 2, {"resourceVersion": rv, "resourceVersionMatch": "Exact"})
        eq(names, whole, "pages of %s from etcd" % path)
        for t in texts:
            no_marker(t, "etcd page of %s" % path)
    check(etcd_ops("list") > lists0, "the exact lists did not read etcd")
    # remainingItemCount from etcd does not count the marker (the last key of an all-tenant range)
    r = admin().get("/api/v1/tenants/all/pods" + q(limit=1, resourceVersion=S["etcd"].revision(),
                                                    resourceVersionMatch="Exact"))
    eq(r.json["metadata"].get("remainingItemCount"), npods - 1, "remainingItemCount of an etcd page")
    # by name: not found, not a 500
    expect_status(admin().get("/api/v1/tenants/" + MARKER), 404, "GET of the marker's name")
    # watches: the marker's events are progress, never events
    w = admin().watch("/api/v1/tenants/all/pods" + q(watch="true", resourceVersion="0", timeoutSeconds=8))
    eq(w.status, 200, "watch")
    w.drain(1)
    for _ in range(3):
        create_cm(uniq("cm"))
        expect_status(admin().get("/api/v1/tenants/all/pods"), 200, "all-tenant pods")
    last = create_pod(uniq("w"))["metadata"]["name"]
    w.until(lambda ev: (ev.get("object") or {}).get("metadata", {}).get("name") == last, 10)
    w.close()
    for ev in w.events:
        no_marker(json.dumps(ev), "watch event")


def test_restart_resumes_watches_and_is_current():
    victim = create_pod(uniq("gone"))["metadata"]["name"]
    start = create_pod(uniq("start"))
    rv0 = int(start["metadata"]["resourceVersion"])
    expect_status(admin().delete(pods_path(S["t"], name=victim)), 200, "delete")
    want = [("DELETED", victim)]
    made = []  # alive, oldest first
    for i in range(120):  # ~ 400 revisions: pods and configmaps interleaved
        n = "%s-%03d" % (uniq("r"), i)
        create_pod(n)
        want.append(("ADDED", n))
        made.append(n)
        create_cm(uniq("cm"))
        if i % 3 == 0:
            expect_status(admin().patch(pods_path(S["t"], name=n), {"metadata": {"labels": {"i": str(i)}}}), 200,
                          "patch")
            want.append(("MODIFIED", n))
        if i % 5 == 0:
            d = made.pop(0)
            expect_status(admin().delete(pods_path(S["t"], name=d)), 200, "delete")
            want.append(("DELETED", d))
    back = S["etcd"].revision() - rv0
    check(back > 300, "only %d revisions back" % back)
    S["api"].kill()
    S["api"].start()
    # current at once: the deleted pod stays deleted, the newest is there (rv=0 and consistent)
    for params in ({"resourceVersion": "0"}, {}):
        r = admin().get(pods_path(S["t"]) + q(**params))
        expect_status(r, 200, "list after restart")
        names = names_of(r.json)
        check(victim not in names, "a pod deleted before the restart is listed after it (%r)" % params)
        eq(sorted(n for n in names if n.startswith("r-")), sorted(made), "pods after the restart (%r)" % params)
    w = admin().watch(pods_path(S["t"]) + q(watch="true", resourceVersion=rv0, timeoutSeconds=15))
    eq(w.status, 200, "watch status")
    last = want[-1]
    got = []
    deadline = time.monotonic() + 15
    while len(got) < len(want) and time.monotonic() < deadline:
        ev = w.next(deadline - time.monotonic())
        if ev is None:
            break
        if ev.get("type") == "BOOKMARK":
            continue
        got.append((ev["type"], (ev.get("object") or {}).get("metadata", {}).get("name")))
        check(ev["type"] != "ERROR", "watch from %d revisions back after a restart: %r" % (back, ev))
    w.drain(1)
    w.close()
    extra = [(t, (e.get("object") or {}).get("metadata", {}).get("name")) for e in w.events[len(got):]
             if e.get("type") != "BOOKMARK"]
    eq(got, want, "events after the resourceVersion (%d revisions back)" % back)
    eq(extra, [], "events beyond the missed ones")
    print("  resumed %d revisions back after kill -9: %d events, last %r" % (back, len(got), last))


def expect_410(rv, what):
    expect_410_at(pods_path(S["t"]), rv, what)


def expect_410_at(path, rv, what):
    w = admin().watch(path + q(watch="true", resourceVersion=rv, timeoutSeconds=5))
    if w.status == 200:
        ev = w.until(lambda ev: True, 10)
        w.close()
        check(ev and ev.get("type") == "ERROR" and ev["object"].get("code") == 410,
              "%s: expected an ERROR 410, got %r" % (what, ev))
    else:
        eq(w.status, 410, what)


def etcd_filler(n, key="/other/filler"):
    """n writes of a key no cache watches: etcd's revision moves, no kind's cache sees an event."""
    c = Client(S["etcd"].url(), timeout=10)
    k = Etcd._b64(key)
    for i in range(n):
        r = c.post("/v3/kv/put", {"key": k, "value": Etcd._b64(str(i))})
        if r.status != 200:
            raise AssertionError("etcd put: %r" % r)


def test_quiet_kind_bookmarks_keep_watches_resumable():
    """A watch of a kind nobody writes gets bookmarks that follow etcd's revision (the cache writes
    its progress marker when it falls behind), so after a restart a client resumes from its last
    bookmark even when its list's resourceVersion is older than the history the new server loads."""
    spath = "/api/v1/tenants/%s/namespaces/default/secrets" % S["t"]
    r = admin().get(spath)
    expect_status(r, 200, "list secrets")
    listed = int(r.json["metadata"]["resourceVersion"])
    w = admin().watch(spath + q(watch="true", allowWatchBookmarks="true", resourceVersion=listed,
                                timeoutSeconds=120))
    eq(w.status, 200, "watch status")
    etcd_filler(HISTORY_BACK + 50)
    moved = S["etcd"].revision()
    # a cache behind etcd by more than PROGRESS_LAG_REVS writes its marker within 5 s; bookmarks
    # go every 15 s
    bm = w.until(lambda ev: ev.get("type") == "BOOKMARK" and
                 int(ev["object"]["metadata"]["resourceVersion"]) >= moved - PROGRESS_LAG_REVS, 45)
    w.close()
    check(bm is not None, "no bookmark within %d revisions of etcd's %d in 45 s (watch from %d): %r"
          % (PROGRESS_LAG_REVS, moved, listed, w.events[-3:]))
    at = int(bm["object"]["metadata"]["resourceVersion"])
    bad = [e for e in w.events if e.get("type") != "BOOKMARK"]
    eq(bad, [], "events of a quiet kind's watch")
    S["api"].kill()
    S["api"].start()
    expect_410_at(spath, listed, "watch of the quiet kind from its list, %d revisions back" % (moved - listed))
    w = admin().watch(spath + q(watch="true", resourceVersion=at, timeoutSeconds=10))
    eq(w.status, 200, "watch from the bookmark after the restart")
    name = uniq("sec")
    expect_status(admin().post(spath, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
                                       "stringData": {"k": "v"}}), 201, "create secret")
    ev = w.next(10)
    w.close()
    check(ev is not None and ev.get("type") == "ADDED" and ev["object"]["metadata"]["name"] == name,
          "watch from the last bookmark after kill -9: %r" % ev)
    print("  bookmark at %d (list at %d, etcd at %d): resumed after kill -9" % (at, listed, moved))


def test_older_than_window_and_compacted_get_410():
    old = int(create_pod(uniq("old"))["metadata"]["resourceVersion"])
    # push etcd past the history window with writes of a key no cache watches
    etcd_filler(HISTORY_BACK + 50)
    recent = int(create_pod(uniq("recent"))["metadata"]["resourceVersion"])
    S["api"].kill()
    S["api"].start()
    expect_410(old, "watch from before the history window")
    w = admin().watch(pods_path(S["t"]) + q(watch="true", resourceVersion=recent - 1, timeoutSeconds=5))
    eq(w.status, 200, "watch inside the window")
    ev = w.next(10)
    w.close()
    check(ev and ev["type"] == "ADDED" and ev["object"]["metadata"]["resourceVersion"] == str(recent),
          "watch inside the window: %r" % ev)
    # a compaction after the resourceVersion: 410 even though it is inside the window
    rv = int(create_pod(uniq("c1"))["metadata"]["resourceVersion"])
    create_pod(uniq("c2"))
    create_pod(uniq("c3"))
    check(S["etcd"].compact() > rv + 1, "compaction revision")  # etcd keeps the compaction revision itself
    S["api"].kill()
    S["api"].start()
    expect_410(rv, "watch from a compacted revision")
    # and the list is fine
    expect_status(admin().get(pods_path(S["t"])), 200, "list after compaction and restart")


if __name__ == "__main__":
    run(globals())
