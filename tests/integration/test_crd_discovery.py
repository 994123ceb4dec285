#!/usr/bin/python3
"""Discovery and OpenAPI of custom resources per tenant, against real etcd + ursa-tp-apiserver:
a CustomResourceDefinition of tenant A shows in A's /apis, /apis/<g>, /apis/<g>/<v> and
aggregated discovery (versions by Kubernetes' priority, shortNames, categories, status and scale
subresources; unserved versions absent) and in A's OpenAPI v2 and v3 documents, never in tenant
B's; `kubectl explain crontab.spec` prints the schema's fields from OpenAPI v3 (kubectl 1.27 and
1.33) and from the v2 protobuf document (--output=plaintext-openapiv2).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_crd_discovery.py"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as H  # noqa: E402
from ursa_harness import check, eq, expect_status, wait_until  # noqa: E402

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
GROUP = "stable.example.com"
S = {}

SPEC_SCHEMA = {
    "type": "object",
    "description": "The desired schedule of a CronTab.",
    "properties": {
        "cronSpec": {"type": "string", "description": "The cron expression saying when the job runs."},
        "image": {"type": "string", "description": "The container image the job runs."},
        "replicas": {"type": "integer", "description": "How many copies run at once.", "nullable": True},
    },
}


def crontab_crd():
    schema = {"openAPIV3Schema": {
        "type": "object",
        "description": "CronTab runs an image on a schedule.",
        "properties": {
            "spec": SPEC_SCHEMA,
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"},
                                                        "selector": {"type": "string"}}},
        }}}
    version = {"served": True, "storage": False, "schema": schema}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs." + GROUP},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList",
                      "shortNames": ["ct", "cront"], "categories": ["all", "schedules"]},
            # listed in this order on purpose: discovery sorts by priority (v1 first)
            "versions": [
                dict(version, name="v1beta1"),
                dict(version, name="v2alpha1", served=False),
                dict(version, name="v1", storage=True,
                     subresources={"status": {},
                                   "scale": {"specReplicasPath": ".spec.replicas",
                                             "statusReplicasPath": ".status.replicas",
                                             "labelSelectorPath": ".status.selector"}}),
            ],
        },
    }


def crd_path(tenant, name=None):
    p = "/apis/apiextensions.k8s.io/v1/tenants/%s/customresourcedefinitions" % tenant
    return p + ("/" + name if name else "")


def get(client, path, accept="application/json", **headers):
    headers["Accept"] = accept
    return client.get(path, headers=headers)


def setup():
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["ta"], S["tb"] = H.uniq("crda"), H.uniq("crdb")
    for t in (S["ta"], S["tb"]):
        H.create_tenant(S["admin"], t)
    S["alice"] = S["api"].user_client(S["ta"], "alice")
    S["bob"] = S["api"].user_client(S["tb"], "bob")
    S["kc_a"] = S["api"].kubeconfig(S["ta"], "alice")


def test_tenant_a_without_crds_has_no_group():
    r = get(S["alice"], "/apis")
    eq(r.status, 200, "GET /apis")
    check(GROUP not in [g["name"] for g in r.json["groups"]], "no %s before the CRD: %r" % (GROUP, r.json))
    S["apis_etag_before"] = r.header("ETag")
    eq(get(S["alice"], "/apis/%s/v1" % GROUP).status, 404, "the group version before the CRD")


def test_create_crd_in_tenant_a():
    r = S["admin"].post(crd_path(S["ta"]), crontab_crd())
    expect_status(r, 201, "create the CronTab CRD in tenant A")

    def served():
        r = get(S["alice"], "/apis/%s/v1" % GROUP)
        return r.status == 200 and r
    S["gv"] = wait_until(served, 30, "%s/v1 is discovered by a user of tenant A" % GROUP)


def test_legacy_group_list():
    r = get(S["alice"], "/apis")
    eq(r.status, 200, "GET /apis")
    groups = r.json["groups"]
    names = [g["name"] for g in groups]
    check(GROUP in names, "%s in A's /apis: %r" % (GROUP, names))
    check(names[-1] == GROUP, "custom resource groups come after the built-in ones: %r" % names)
    check("apps" in names and names.index("apps") < names.index(GROUP), "built-in groups first: %r" % names)
    g = groups[names.index(GROUP)]
    eq([v["version"] for v in g["versions"]], ["v1", "v1beta1"], "served versions by priority (v2alpha1 unserved)")
    eq(g["versions"][0]["groupVersion"], GROUP + "/v1", "groupVersion")
    eq(g["preferredVersion"], {"groupVersion": GROUP + "/v1", "version": "v1"}, "preferredVersion")
    check(r.header("ETag") and r.header("ETag") != S["apis_etag_before"], "the ETag changed with the body")
    r304 = get(S["alice"], "/apis", **{"If-None-Match": r.header("ETag")})
    eq(r304.status, 304, "If-None-Match with A's current tag")

    r = get(S["alice"], "/apis/" + GROUP)
    eq(r.status, 200, "GET /apis/" + GROUP)
    eq(r.json.get("kind"), "APIGroup", "kind")
    eq(r.json["preferredVersion"]["version"], "v1", "the group's preferredVersion")
    eq([v["version"] for v in r.json["versions"]], ["v1", "v1beta1"], "the group's versions")
    eq(get(S["alice"], "/apis/%s/v2alpha1" % GROUP).status, 404, "an unserved version is not discovered")


def by_name(resources):
    return {e["name"]: e for e in resources}


def test_resource_list():
    res = by_name(S["gv"].json["resources"])
    eq(S["gv"].json["groupVersion"], GROUP + "/v1", "groupVersion")
    ct = res.get("crontabs")
    check(ct, "crontabs in %s/v1: %r" % (GROUP, res))
    eq(ct["singularName"], "crontab", "singularName")
    eq(ct["namespaced"], True, "namespaced")
    eq(ct["kind"], "CronTab", "kind")
    eq(sorted(ct["verbs"]), sorted(["create", "delete", "deletecollection", "get", "list", "patch", "update",
                                     "watch"]), "verbs")
    eq(ct["shortNames"], ["ct", "cront"], "shortNames")
    eq(ct["categories"], ["all", "schedules"], "categories")
    st = res.get("crontabs/status")
    check(st and st["kind"] == "CronTab" and sorted(st["verbs"]) == ["get", "patch", "update"],
          "crontabs/status: %r" % st)
    sc = res.get("crontabs/scale")
    check(sc and (sc["kind"], sc.get("group"), sc.get("version")) == ("Scale", "autoscaling", "v1"),
          "crontabs/scale: %r" % sc)
    # v1beta1 has no subresources
    r = get(S["alice"], "/apis/%s/v1beta1" % GROUP)
    eq(r.status, 200, "GET v1beta1")
    eq(sorted(by_name(r.json["resources"])), ["crontabs"], "v1beta1 lists crontabs without subresources")


def test_aggregated():
    for accept, av in ((V2, "apidiscovery.k8s.io/v2"), (V2BETA1, "apidiscovery.k8s.io/v2beta1")):
        r = get(S["alice"], "/apis", accept)
        eq(r.status, 200, "aggregated /apis " + av)
        eq(r.json.get("apiVersion"), av, "apiVersion")
        items = [i for i in r.json["items"] if i["metadata"].get("name") == GROUP]
        eq(len(items), 1, "%s once in the aggregated list (%s)" % (GROUP, av))
        check(r.json["items"][-1]["metadata"]["name"] == GROUP, "custom groups last in %s" % av)
        vers = items[0]["versions"]
        eq([v["version"] for v in vers], ["v1", "v1beta1"], "aggregated versions (%s)" % av)
        res = {x["resource"]: x for x in vers[0]["resources"]}
        ct = res.get("crontabs")
        check(ct, "crontabs in aggregated v1: %r" % vers[0])
        eq(ct["responseKind"], {"group": GROUP, "version": "v1", "kind": "CronTab"}, "responseKind")
        eq(ct["scope"], "Namespaced", "scope")
        eq(ct["singularResource"], "crontab", "singularResource")
        eq(ct.get("shortNames"), ["ct", "cront"], "aggregated shortNames")
        eq(ct.get("categories"), ["all", "schedules"], "aggregated categories")
        subs = {x["subresource"]: x for x in ct.get("subresources") or []}
        eq(sorted(subs), ["scale", "status"], "aggregated subresources")
        eq(subs["scale"]["responseKind"], {"group": "autoscaling", "version": "v1", "kind": "Scale"}, "scale kind")


def test_tenant_b_does_not_see_it():
    r = get(S["bob"], "/apis")
    eq(r.status, 200, "B's /apis")
    check(GROUP not in [g["name"] for g in r.json["groups"]], "B does not see %s: %r" % (GROUP, r.json))
    r = get(S["bob"], "/apis", V2)
    check(GROUP not in [i["metadata"].get("name") for i in r.json["items"]], "nor in B's aggregated discovery")
    for p in ("/apis/" + GROUP, "/apis/%s/v1" % GROUP, "/openapi/v3/apis/%s/v1" % GROUP):
        eq(get(S["bob"], p).status, 404, "B's GET " + p)
    idx = get(S["bob"], "/openapi/v3").json["paths"]
    check("apis/%s/v1" % GROUP not in idx and "api/v1" in idx, "B's v3 index: %r" % sorted(idx))
    v2 = get(S["bob"], "/openapi/v2").json
    check("com.example.stable.v1.CronTab" not in v2["definitions"], "B's v2 document has no CronTab")


def test_openapi_v3():
    r = get(S["alice"], "/openapi/v3")
    eq(r.status, 200, "A's v3 index")
    idx = r.json["paths"]
    for k in ("apis/%s/v1" % GROUP, "apis/%s/v1beta1" % GROUP, "api/v1", "apis/apps/v1"):
        check(k in idx, "%s in A's v3 index: %r" % (k, sorted(idx)))
    check("apis/%s/v2alpha1" % GROUP not in idx, "unserved version not in the index")
    b_idx = get(S["bob"], "/openapi/v3").json["paths"]
    eq(idx["api/v1"], b_idx["api/v1"], "built-in group versions keep their hash")
    eq(get(S["alice"], "/openapi/v3", **{"If-None-Match": r.header("ETag")}).status, 304, "index 304")
    url = idx["apis/%s/v1" % GROUP]["serverRelativeURL"]
    check(url.startswith("/openapi/v3/apis/%s/v1?hash=" % GROUP), "URL %r" % url)
    r = get(S["alice"], url)
    eq(r.status, 200, "GET " + url)
    eq(r.header("Cache-Control"), "private, immutable, max-age=31536000", "hashed URL: immutable, the tenant's")
    doc = r.json
    schemas = doc["components"]["schemas"]
    ct = schemas.get("com.example.stable.v1.CronTab")
    check(ct, "CronTab schema in A's document: %r" % sorted(schemas))
    eq(ct["x-kubernetes-group-version-kind"], [{"group": GROUP, "kind": "CronTab", "version": "v1"}], "gvk")
    props = ct["properties"]
    eq(props["spec"]["properties"]["cronSpec"]["description"],
       SPEC_SCHEMA["properties"]["cronSpec"]["description"], "cronSpec's description")
    eq(props["spec"]["properties"]["replicas"].get("nullable"), True, "v3 keeps nullable")
    meta_ref = json.dumps(props["metadata"])
    check("#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in meta_ref,
          "metadata refers to ObjectMeta: %s" % meta_ref)
    check("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta" in schemas, "ObjectMeta is in the document")
    check(props["apiVersion"]["type"] == "string" and props["kind"]["type"] == "string", "apiVersion and kind")
    lst = schemas.get("com.example.stable.v1.CronTabList")
    check(lst and lst["x-kubernetes-group-version-kind"][0]["kind"] == "CronTabList", "the list: %r" % lst)
    paths = doc["paths"]
    coll = "/apis/%s/v1/namespaces/{namespace}/crontabs" % GROUP
    check(coll in paths and "get" in paths[coll] and "post" in paths[coll], "collection path: %r" % sorted(paths))
    check("get" in paths.get(coll + "/{name}", {}), "item path")
    r = get(S["alice"], "/openapi/v3/apis/%s/v1beta1" % GROUP)
    eq(r.status, 200, "v1beta1 document")
    check("com.example.stable.v1beta1.CronTab" in r.json["components"]["schemas"], "v1beta1's CronTab")


def test_openapi_v2():
    r = get(S["alice"], "/openapi/v2")
    eq(r.status, 200, "A's v2")
    doc = json.loads(r.body)  # the spliced text is one valid JSON document
    defs = doc["definitions"]
    ct = defs.get("com.example.stable.v1.CronTab")
    check(ct, "CronTab in A's v2 definitions")
    check("io.k8s.api.core.v1.Pod" in defs, "built-in definitions are still there")
    eq(ct["properties"]["metadata"], {"$ref": "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
       "v2 metadata ref")
    check("nullable" not in ct["properties"]["spec"]["properties"]["replicas"], "v2 has no nullable")
    check("com.example.stable.v1.CronTabList" in defs, "the v2 list definition")
    check("/apis/%s/v1/namespaces/{namespace}/crontabs/{name}" % GROUP in doc["paths"], "v2 item path")
    check("/api/v1/namespaces/{namespace}/pods" in doc["paths"], "built-in paths still there")
    eq(get(S["alice"], "/openapi/v2", **{"If-None-Match": r.header("ETag")}).status, 304, "v2 304")
    pb = get(S["alice"], "/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
    eq(pb.status, 200, "v2 protobuf")
    check(b"com.example.stable.v1.CronTab" in pb.body and b"io.k8s.api.core.v1.Pod" in pb.body,
          "the protobuf form holds both")


def kubectl_explain(version, what, *extra):
    H.require_binary(os.path.join(KUBECTL_DIR, "kubectl." + version), "kubectl " + version)
    cache = H.make_tmpdir("kubectl-cache-crd-" + version)
    return H.run_cmd([os.path.join(KUBECTL_DIR, "kubectl." + version), "--kubeconfig", S["kc_a"],
                      "--cache-dir", cache, "explain", what] + list(extra), timeout=90)


def test_kubectl_explain():
    cases = [("crontab.spec", ["CronTab", "cronSpec", "image", "replicas", "The desired schedule"]),
             ("crontab.spec.cronSpec", ["cronSpec", "The cron expression saying when the job runs."]),
             ("ct", ["CronTab", "CronTab runs an image on a schedule.", "spec"])]
    for version in ("1.27", "1.33"):
        for what, want in cases:
            rc, out, err = kubectl_explain(version, what)
            check(rc == 0, "kubectl %s explain %s: rc=%s %s %s" % (version, what, rc, out, err))
            for w in want:
                check(w in out, "kubectl %s explain %s shows %r: %s" % (version, what, w, out))
    # from the v2 protobuf document (its output says RESOURCE:, the v3 one FIELD:)
    for version in ("1.27", "1.33"):
        rc, out, err = kubectl_explain(version, "crontab.spec", "--output=plaintext-openapiv2")
        check(rc == 0 and "RESOURCE: spec" in out and "cronSpec" in out and "The desired schedule" in out,
              "kubectl %s explain crontab.spec from OpenAPI v2: %s %s" % (version, out, err))


def test_crd_change_updates_documents():
    idx = get(S["alice"], "/openapi/v3").json["paths"]
    old_url = idx["apis/%s/v1" % GROUP]["serverRelativeURL"]
    eq(idx, get(S["alice"], "/openapi/v3").json["paths"], "the index is stable while nothing changes")
    path = crd_path(S["ta"], "crontabs." + GROUP)
    cur = S["admin"].get(path)
    eq(cur.status, 200, "GET the CRD")
    crd = cur.json
    crd["spec"]["names"]["shortNames"] = ["ct", "cront", "ctb"]
    v1 = [v for v in crd["spec"]["versions"] if v["name"] == "v1"][0]
    v1["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["cronSpec"]["description"] = "Changed."
    expect_status(S["admin"].put(path, crd), 200, "update the CRD")
    wait_until(lambda: by_name(get(S["alice"], "/apis/%s/v1" % GROUP).json["resources"])["crontabs"]["shortNames"]
               == ["ct", "cront", "ctb"], 30, "the new shortName is discovered")

    def changed():
        url = get(S["alice"], "/openapi/v3").json["paths"]["apis/%s/v1" % GROUP]["serverRelativeURL"]
        return url != old_url and url
    url = wait_until(changed, 30, "the group version's hash changes")
    doc = get(S["alice"], url).json
    eq(doc["components"]["schemas"]["com.example.stable.v1.CronTab"]["properties"]["spec"]["properties"]
       ["cronSpec"]["description"], "Changed.", "the new description")
    v2 = get(S["alice"], "/openapi/v2").json
    eq(v2["definitions"]["com.example.stable.v1.CronTab"]["properties"]["spec"]["properties"]["cronSpec"]
       ["description"], "Changed.", "the new description in v2")


def test_crd_deleted_leaves_discovery():
    r = S["admin"].delete(crd_path(S["ta"], "crontabs." + GROUP))
    check(r.status in (200, 202), "delete the CRD: %r" % r)
    # the cleanup finalizer needs the controller manager: without one, remove it by hand
    cur = S["admin"].get(crd_path(S["ta"], "crontabs." + GROUP))
    if cur.status == 200 and cur.json["metadata"].get("finalizers"):
        S["admin"].patch(crd_path(S["ta"], "crontabs." + GROUP), {"metadata": {"finalizers": None}})
    wait_until(lambda: get(S["alice"], "/apis/%s/v1" % GROUP).status == 404, 30, "the group version goes away")
    check(GROUP not in [g["name"] for g in get(S["alice"], "/apis").json["groups"]], "no group in /apis")
    wait_until(lambda: "apis/%s/v1" % GROUP not in get(S["alice"], "/openapi/v3").json["paths"], 30,
               "and none in A's v3 index")
    eq(get(S["alice"], "/openapi/v3/apis/%s/v1" % GROUP).status, 404, "the document is gone")


H.run(globals())
