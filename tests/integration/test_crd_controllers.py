"""ursa-tp-controller-manager and custom resources, against real etcd + ursa-tp-apiserver: a
deleted CRD's custom resources are deleted before its cleanup finalizer goes (one held by a
finalizer of its own), the garbage collector follows ownerReferences from pods to custom
resources and from custom resources to ConfigMaps and other custom resources, namespace
deletion removes the custom resources in it, and tenant deletion removes its custom resources
and CRDs."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

CM_BIN = os.path.join(H.BUILD_DIR, "src", "tenant-partition", "controllers", "ursa-tp-controller-manager")
CRDS = "/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions"
FIN = "customresourcecleanup.apiextensions.k8s.io"
S = {}


def crd_manifest(plural, group, kind, scope="Namespaced"):
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "%s.%s" % (plural, group)},
            "spec": {"group": group, "scope": scope,
                     "names": {"plural": plural, "singular": plural[:-1], "kind": kind,
                               "listKind": kind + "List"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": schema}}]}}


def cr_path(tenant, plural, group, ns=None, name=None):
    p = "/apis/%s/v1/tenants/%s" % (group, tenant)
    if ns:
        p += "/namespaces/%s" % ns
    p += "/" + plural
    return p + ("/" + name if name else "")


def create_crd(tenant, plural, group, kind, scope="Namespaced"):
    r = S["admin"].post(CRDS % tenant, crd_manifest(plural, group, kind, scope))
    expect_status(r, 201, "create CRD %s.%s in %s" % (plural, group, tenant))
    check(FIN in (r.json["metadata"].get("finalizers") or []), "cleanup finalizer on the CRD: %r" % r.json["metadata"])

    def established():
        c = S["admin"].get(CRDS % tenant + "/%s.%s" % (plural, group)).json
        return any(x.get("type") == "Established" and x.get("status") == "True"
                   for x in (c.get("status") or {}).get("conditions") or [])
    wait_until(established, 20, "CRD %s.%s established" % (plural, group))
    wait_until(lambda: S["admin"].get(cr_path(tenant, plural, group, "default" if scope == "Namespaced" else None))
               .status == 200, 20, "%s served" % plural)


def create_cr(tenant, plural, group, kind, name, ns="default", **meta):
    body = {"apiVersion": group + "/v1", "kind": kind, "metadata": dict(name=name, **meta), "spec": {"x": 1}}
    r = S["admin"].post(cr_path(tenant, plural, group, ns), body)
    expect_status(r, 201, "create %s %s" % (kind, name))
    return r.json


def owner(obj, kind=None):
    return {"apiVersion": obj.get("apiVersion") or "v1", "kind": kind or obj["kind"],
            "name": obj["metadata"]["name"], "uid": obj["metadata"]["uid"]}


def gone(path):
    return lambda: S["admin"].get(path).status == 404


def setup():
    H.require_binary(CM_BIN, "ursa-tp-controller-manager")
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    H.create_tenant(S["admin"], "acme")
    log = S["cm_log"] = os.path.join(S["api"].dir, "cm.log")
    H._logs.append(("controller-manager", log))
    S["cm"] = H.spawn([CM_BIN, "--kubeconfig", S["api"].admin_kubeconfig(), "--identity", "cm",
                       "--log-level", "debug"], log)
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/default").status == 200, 20,
               "acme's default namespace")
    create_crd("acme", "crontabs", "stable.example.com", "CronTab")


def test_crd_delete_cascades():
    create_crd("acme", "widgets", "w.example.com", "Widget")
    create_crd("acme", "gadgets", "g.example.com", "Gadget", scope="Cluster")
    create_cr("acme", "widgets", "w.example.com", "Widget", "w1")
    create_cr("acme", "widgets", "w.example.com", "Widget", "held", finalizers=["example.com/hold"])
    create_cr("acme", "gadgets", "g.example.com", "Gadget", "g1", ns=None)
    r = S["admin"].delete(CRDS % "acme" + "/widgets.w.example.com")
    check(r.status in (200, 202), "delete CRD: %s %s" % (r.status, r.body))

    def terminating():
        c = S["admin"].get(CRDS % "acme" + "/widgets.w.example.com").json
        return [x for x in (c.get("status") or {}).get("conditions") or [] if x.get("type") == "Terminating"]
    conds = wait_until(terminating, 20, "Terminating condition")
    eq(conds[0]["status"], "True", "Terminating status")
    eq(conds[0]["reason"], "InstanceDeletionInProgress", "Terminating reason")
    wait_until(gone(cr_path("acme", "widgets", "w.example.com", "default", "w1")), 20, "w1 deleted")
    held = S["admin"].get(cr_path("acme", "widgets", "w.example.com", "default", "held"))
    expect_status(held, 200, "held by its finalizer")
    check(held.json["metadata"].get("deletionTimestamp"), "held is being deleted")
    # the CRD waits for it
    H.time.sleep(2)
    c = S["admin"].get(CRDS % "acme" + "/widgets.w.example.com")
    expect_status(c, 200, "CRD kept while a custom resource is left")
    check(FIN in c.json["metadata"].get("finalizers", []), "finalizer kept")
    held.json["metadata"]["finalizers"] = []
    expect_status(S["admin"].put(cr_path("acme", "widgets", "w.example.com", "default", "held"), held.json), 200,
                  "release held")
    wait_until(gone(CRDS % "acme" + "/widgets.w.example.com"), 30, "CRD deleted")
    # the cluster-scoped kind: same
    expect_status(S["admin"].delete(CRDS % "acme" + "/gadgets.g.example.com"), 200, "delete gadgets CRD")
    wait_until(gone(CRDS % "acme" + "/gadgets.g.example.com"), 30, "gadgets CRD deleted")
    eq([k for k in S["etcd"].keys("/registry/customresources/w.example.com/") + S["etcd"].keys("/registry/customresources/g.example.com/")], [],
       "custom resources left in etcd")


def test_gc_pod_owned_by_cr():
    ct = create_cr("acme", "crontabs", "stable.example.com", "CronTab", "owner1")
    pod = pod_manifest("owned1")
    pod["metadata"]["ownerReferences"] = [owner(ct)]
    expect_status(S["admin"].post(pods_path("acme"), pod), 201, "create owned pod")
    other = pod_manifest("bystander")
    expect_status(S["admin"].post(pods_path("acme"), other), 201, "create unowned pod")
    H.time.sleep(1)
    expect_status(S["admin"].get(pods_path("acme", "default", "owned1")), 200, "pod kept while its owner lives")
    expect_status(S["admin"].delete(cr_path("acme", "crontabs", "stable.example.com", "default", "owner1")), 200,
                  "delete owner CR")

    def pod_gone():
        r = S["admin"].get(pods_path("acme", "default", "owned1"))
        return r.status == 404 or r.json["metadata"].get("deletionTimestamp")
    wait_until(pod_gone, 30, "owned pod deleted by the GC")
    expect_status(S["admin"].get(pods_path("acme", "default", "bystander")), 200, "unowned pod kept")


def test_gc_cr_owned_by_configmap_and_cr():
    cm = S["admin"].post("/api/v1/tenants/acme/namespaces/default/configmaps",
                         {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-owner"}})
    expect_status(cm, 201, "create configmap")
    parent = create_cr("acme", "crontabs", "stable.example.com", "CronTab", "by-cm",
                       ownerReferences=[owner(cm.json, "ConfigMap")])
    child = create_cr("acme", "crontabs", "stable.example.com", "CronTab", "by-cr",
                      ownerReferences=[owner(parent)])
    create_cr("acme", "crontabs", "stable.example.com", "CronTab", "two-owners",
                     ownerReferences=[owner(parent), owner(cm.json, "ConfigMap")])
    H.time.sleep(1)
    for n in ("by-cm", "by-cr", "two-owners"):
        expect_status(S["admin"].get(cr_path("acme", "crontabs", "stable.example.com", "default", n)), 200,
                      "%s kept while its owner lives" % n)
    expect_status(S["admin"].delete("/api/v1/tenants/acme/namespaces/default/configmaps/cm-owner"), 200,
                  "delete configmap")
    # the configmap's dependents: by-cm goes; two-owners loses that reference; by-cr follows by-cm
    wait_until(gone(cr_path("acme", "crontabs", "stable.example.com", "default", "by-cm")), 30,
               "CR owned by the deleted configmap deleted")
    wait_until(gone(cr_path("acme", "crontabs", "stable.example.com", "default", "by-cr")), 30,
               "CR owned by the deleted CR deleted")
    wait_until(gone(cr_path("acme", "crontabs", "stable.example.com", "default", "two-owners")), 30,
               "CR whose owners are both gone deleted")


def test_namespace_deletion_removes_crs():
    S["admin"].post("/api/v1/tenants/acme/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                        "metadata": {"name": "tmp"}})
    wait_until(lambda: S["admin"].get("/api/v1/tenants/acme/namespaces/tmp").status == 200, 10, "namespace tmp")
    create_cr("acme", "crontabs", "stable.example.com", "CronTab", "in-tmp", ns="tmp")
    create_cr("acme", "crontabs", "stable.example.com", "CronTab", "in-default")
    expect_status(S["admin"].delete("/api/v1/tenants/acme/namespaces/tmp"), 200, "delete namespace")
    wait_until(gone("/api/v1/tenants/acme/namespaces/tmp"), 40, "namespace tmp finalized")
    eq([k for k in S["etcd"].keys("/registry/customresources/stable.example.com/crontabs/acme/tmp/")], [], "CRs of tmp in etcd")
    expect_status(S["admin"].get(cr_path("acme", "crontabs", "stable.example.com", "default", "in-default")), 200,
                  "CR in another namespace kept")


def test_tenant_deletion_removes_crds():
    H.create_tenant(S["admin"], "doomed")
    wait_until(lambda: S["admin"].get("/api/v1/tenants/doomed/namespaces/default").status == 200, 20,
               "doomed's default namespace")
    create_crd("doomed", "crontabs", "stable.example.com", "CronTab")
    create_crd("doomed", "gadgets", "g.example.com", "Gadget", scope="Cluster")
    create_cr("doomed", "crontabs", "stable.example.com", "CronTab", "c1")
    create_cr("doomed", "gadgets", "g.example.com", "Gadget", "g1", ns=None)
    create_cr("acme", "crontabs", "stable.example.com", "CronTab", "survivor")
    S["admin"].delete("/api/v1/tenants/doomed")
    wait_until(gone("/api/v1/tenants/doomed"), 60, "tenant doomed deleted")
    wait_until(lambda: not [k for k in S["etcd"].keys("/registry/") if "/doomed/" in k or k.endswith("/doomed")],
               60, "no etcd key of tenant doomed left (custom resources and CRDs included)")
    # the CRDs went the way of every CRD: through the cleanup finalizer
    with open(S["cm_log"]) as f:
        log = f.read()
    for crd in ("crontabs.stable.example.com", "gadgets.g.example.com"):
        check('msg="custom resources cleaned up" tenant="doomed" crd="%s"' % crd in log,
              "the controller manager cleaned up doomed's %s" % crd)
    # acme's are untouched
    expect_status(S["admin"].get(CRDS % "acme" + "/crontabs.stable.example.com"), 200, "acme's CRD kept")
    expect_status(S["admin"].get(cr_path("acme", "crontabs", "stable.example.com", "default", "survivor")), 200,
                  "acme's CR kept")


def teardown():
    if S.get("cm"):
        H.terminate(S["cm"])


run(globals())
