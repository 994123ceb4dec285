"""Custom resources' watch caches against real etcd + ursa-tp-apiserver: every CRD's cache is fed
by one etcd watch over /registry/customresources/ (wcache_mux), so creating CRDs costs the
server no thread; a watch opened before an etcd compaction keeps its events; a CRD established
after a compaction (its cache listed at the then current revision) serves its objects; a CRD
deleted and made again under the same name (a second cache on the same keys while requests on
the first may still run) lists what etcd holds and sees new writes; a system CRD's cache holds
every tenant's objects of its kind, each tenant reading only its own; a watch on a CRD's kind
ends when the CRD goes."""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

CRDS = "/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions"
S = {}


def crd_manifest(plural, group, kind):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def path(tenant, plural, group, name=None):
    return "/apis/%s/v1/tenants/%s/namespaces/default/%s%s" % (group, tenant, plural, "/" + name if name else "")


def create_crd(tenant, plural, group, kind):
    expect_status(S["admin"].post(CRDS % tenant, crd_manifest(plural, group, kind)), 201, "create CRD " + plural)
    wait_until(lambda: S["admin"].get(path(tenant, plural, group)).status == 200, 20, plural + " served")


def create(tenant, plural, group, kind, name):
    body = {"apiVersion": group + "/v1", "kind": kind, "metadata": {"name": name}, "spec": {"n": name}}
    expect_status(S["admin"].post(path(tenant, plural, group), body), 201, "create %s %s" % (kind, name))


def listed(tenant, plural, group):
    r = S["admin"].get(path(tenant, plural, group))
    expect_status(r, 200, "list " + plural)
    return names(r.json)


def threads():
    with open("/proc/%d/status" % S["api"].proc.pid) as f:
        return int([ln.split()[1] for ln in f if ln.startswith("Threads:")][0])


def setup():
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    for t in ("acme", "zeta"):
        H.create_tenant(S["admin"], t)
        wait_until(lambda: S["admin"].get("/api/v1/tenants/%s/namespaces/default" % t).status == 200, 20,
                   t + "'s default namespace")


def test_no_thread_per_crd():
    create_crd("acme", "widgets", "w.example.com", "Widget")
    before = threads()
    for i in range(20):
        create_crd("acme", "kind%ds" % i, "k%d.example.com" % i, "Kind%d" % i)
    after = threads()
    check(after <= before + 2, "20 CRDs cost no threads: %d -> %d" % (before, after))
    keys = [k for k in S["etcd"].keys("/registry/customresources/") if k != "/registry/customresources/~progress"]
    eq(keys, [], "no custom resources yet (the caches' shared progress marker aside)")


def test_watch_survives_compaction_and_late_crd():
    for n in ("w1", "w2"):
        create("acme", "widgets", "w.example.com", "Widget", n)
    w = S["admin"].watch(path("acme", "widgets", "w.example.com") + "?watch=1")
    check(w.status == 200, "watch widgets: %r" % w.response)
    got = [w.next(5) for _ in range(2)]
    eq(sorted(e["object"]["metadata"]["name"] for e in got), ["w1", "w2"], "initial ADDED events")
    S["etcd"].compact()
    time.sleep(0.5)
    create_crd("acme", "gadgets", "g.example.com", "Gadget")  # listed after the compaction
    create("acme", "gadgets", "g.example.com", "Gadget", "g1")
    create("acme", "widgets", "w.example.com", "Widget", "w3")
    ev = w.next(5)
    check(ev and ev["type"] == "ADDED" and ev["object"]["metadata"]["name"] == "w3", "the watch sees w3: %r" % ev)
    eq(listed("acme", "gadgets", "g.example.com"), ["g1"], "a CRD made after a compaction serves its objects")
    eq(listed("acme", "widgets", "w.example.com"), ["w1", "w2", "w3"], "widgets")
    check(w.next(1) is None, "nothing else on the watch")


def test_recreated_crd_lists_what_etcd_holds():
    name = "widgets.w.example.com"
    expect_status(S["admin"].delete(CRDS % "acme" + "/" + name), 200, "delete the CRD")
    # no controller manager here: release the cleanup finalizer by hand; the objects stay in etcd
    crd = S["admin"].get(CRDS % "acme" + "/" + name).json
    crd["metadata"]["finalizers"] = []
    expect_status(S["admin"].put(CRDS % "acme" + "/" + name, crd), 200, "release the finalizer")
    wait_until(lambda: S["admin"].get(path("acme", "widgets", "w.example.com")).status == 404, 20, "not served")
    create_crd("acme", "widgets", "w.example.com", "Widget")
    eq(listed("acme", "widgets", "w.example.com"), ["w1", "w2", "w3"], "the new cache lists what etcd holds")
    w = S["admin"].watch(path("acme", "widgets", "w.example.com") + "?watch=1&resourceVersion=0")
    check(w.status == 200, "watch widgets again: %r" % w.response)
    for _ in range(3):
        w.next(5)
    create("acme", "widgets", "w.example.com", "Widget", "w4")
    ev = w.next(5)
    check(ev and ev["object"]["metadata"]["name"] == "w4", "the new cache follows writes: %r" % ev)


def test_system_crd_serves_each_tenant_its_own():
    create_crd("system", "backups", "ops.example.com", "Backup")
    for t in ("acme", "zeta"):
        wait_until(lambda: S["admin"].get(path(t, "backups", "ops.example.com")).status == 200, 20, t + " served")
        create(t, "backups", "ops.example.com", "Backup", "b-" + t)
    eq(listed("acme", "backups", "ops.example.com"), ["b-acme"], "acme's backups")
    eq(listed("zeta", "backups", "ops.example.com"), ["b-zeta"], "zeta's backups")
    eq(sorted(k.split("/")[-3] for k in S["etcd"].keys("/registry/customresources/ops.example.com/backups/")),
       ["acme", "zeta"], "stored under each tenant")


def test_watch_ends_when_crd_deleted():
    create_crd("acme", "temps", "t.example.com", "Temp")
    create("acme", "temps", "t.example.com", "Temp", "t1")
    w = S["admin"].watch(path("acme", "temps", "t.example.com") + "?watch=1")
    check(w.status == 200, "watch temps: %r" % w.response)
    ev = w.next(5)
    check(ev and ev["object"]["metadata"]["name"] == "t1", "initial ADDED: %r" % ev)
    name = "temps.t.example.com"
    expect_status(S["admin"].delete(CRDS % "acme" + "/" + name), 200, "delete the CRD")
    crd = S["admin"].get(CRDS % "acme" + "/" + name).json
    crd["metadata"]["finalizers"] = []
    expect_status(S["admin"].put(CRDS % "acme" + "/" + name, crd), 200, "release the finalizer")
    deadline = time.time() + 10
    ended = False
    while time.time() < deadline and not ended:
        try:
            w.next(1)
        except EOFError:
            ended = True
    check(ended, "the watch ended with its CRD: %r" % w.events)


if __name__ == "__main__":
    H.run(globals())
