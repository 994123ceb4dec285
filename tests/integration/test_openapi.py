"""OpenAPI documents of ursa-tp-apiserver against real etcd: /openapi/v2 as Swagger JSON and as
gnostic protobuf (what kubectl 1.27 and 1.28 ask for), the /openapi/v3 index and its per group
version documents, entity tags and 304; `kubectl explain` (1.27 reads v2, 1.33 reads v3) for
fields and for every served kind; `kubectl create -f` and `apply -f` with 1.27 and 1.28."""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
PB_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
PB_TYPE = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
S = {}


def setup():
    for v in ("1.27", "1.28", "1.33"):
        H.require_binary(os.path.join(KUBECTL_DIR, "kubectl." + v), "kubectl " + v)
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    H.create_tenant(S["admin"], "acme")
    S["kc"] = S["api"].kubeconfig("acme", "alice")
    S["alice"] = S["api"].user_client("acme", "alice")


def get(path, accept="application/json", **headers):
    headers["Accept"] = accept
    return S["alice"].get(path, headers=headers)


def served_kinds():
    """{(group, version, kind): (plural, namespaced, verbs)} from legacy discovery, subresources left out."""
    out = {}
    lists = [("", "v1", get("/api/v1").json)]
    for g in get("/apis").json["groups"]:
        for v in g["versions"]:
            lists.append((g["name"], v["version"], get("/apis/" + v["groupVersion"]).json))
    for group, version, rl in lists:
        for r in rl["resources"]:
            if "/" not in r["name"]:
                out[(group, version, r["kind"])] = (r["name"], r["namespaced"], r["verbs"])
    return out


def gvk_of(ext):
    return (ext["group"], ext["version"], ext["kind"])


# --- a protobuf reader (wire format only) -------------------------------------------------------

def pb_fields(data):
    """[(number, wire type, value)]: bytes for length-delimited fields, ints for varints."""
    out, i = [], 0
    while i < len(data):
        key, i = pb_varint(data, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = pb_varint(data, i)
        elif wt == 1:
            v, i = data[i:i + 8], i + 8
        elif wt == 2:
            n, i = pb_varint(data, i)
            check(i + n <= len(data), "length past the end at %d" % i)
            v, i = data[i:i + n], i + n
        elif wt == 5:
            v, i = data[i:i + 4], i + 4
        else:
            raise H.HarnessError("wire type %d at %d" % (wt, i))
        out.append((num, wt, v))
    check(i == len(data), "message ends inside a field")
    return out


def pb_varint(data, i):
    v = shift = 0
    while True:
        check(i < len(data), "truncated varint")
        b = data[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if not b & 0x80:
            return v, i


def pb_get(msg, num):
    return [v for n, _, v in pb_fields(msg) if n == num]


def pb_named(msg, num):
    """Repeated Named* entries {name = 1, value = 2} of field num: {name: value bytes}."""
    out = {}
    for e in pb_get(msg, num):
        name = pb_get(e, 1)[0].decode()
        vals = pb_get(e, 2)
        out[name] = vals[0] if vals else b""
    return out


def pb_vendor(msg, num):
    """Vendor extensions NamedAny{name, Any{yaml = 2}} of field num, the YAML (JSON here) parsed."""
    return {k: json.loads(pb_get(v, 2)[0].decode()) for k, v in pb_named(msg, num).items()}


# --- tests ---------------------------------------------------------------------------------------

def test_v2_json_has_every_kind():
    r = get("/openapi/v2")
    eq(r.status, 200, "GET /openapi/v2")
    check(r.header("Content-Type").startswith("application/json"), "v2 JSON type: %s" % r.header("Content-Type"))
    doc = r.json
    eq(doc["swagger"], "2.0", "swagger version")
    by_gvk = {}
    for name, d in doc["definitions"].items():
        for e in d.get("x-kubernetes-group-version-kind", []):
            by_gvk[gvk_of(e)] = name
    patch_ops = {}
    for path, item in doc["paths"].items():
        for method, op in item.items():
            e = op.get("x-kubernetes-group-version-kind")
            if e and method == "patch":
                patch_ops[gvk_of(e)] = [p.get("name") for p in op["parameters"]]
    kinds = served_kinds()
    check(len(kinds) > 20, "many kinds served: %d" % len(kinds))
    for gvk, (plural, _, verbs) in kinds.items():
        check(gvk in by_gvk, "v2 definition for %s" % (gvk,))
        if "patch" in verbs:
            check("fieldValidation" in patch_ops.get(gvk, []), "PATCH of %s takes fieldValidation: %s"
                  % (gvk, patch_ops.get(gvk)))
        if "list" in verbs:
            check((gvk[0], gvk[1], gvk[2] + "List") in by_gvk, "list definition for %s" % (gvk,))
    d = doc["definitions"]
    eq(by_gvk[("apps", "v1", "Deployment")], "io.k8s.api.apps.v1.Deployment", "Deployment's name")
    strategy = d["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]
    eq(strategy["$ref"], "#/definitions/io.k8s.api.apps.v1.DeploymentStrategy", "strategy ref")
    check(strategy.get("description"), "strategy has a description: %r" % strategy)
    c = d["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    eq((c["x-kubernetes-patch-merge-key"], c["x-kubernetes-patch-strategy"]), ("name", "merge"), "containers merge")
    tag = r.header("ETag")
    check(tag and tag.startswith('"'), "v2 ETag: %r" % tag)
    r2 = get("/openapi/v2", **{"If-None-Match": tag})
    eq(r2.status, 304, "If-None-Match with the v2 tag")
    eq(r2.body, b"", "304 has no body")
    eq(get("/openapi/v2", **{"If-None-Match": '"stale"'}).status, 200, "stale tag")
    S["v2json"] = doc
    S["v2tag"] = tag


def test_v2_protobuf():
    r = get("/openapi/v2", PB_ACCEPT)
    eq(r.status, 200, "GET /openapi/v2 as protobuf")
    eq(r.header("Content-Type"), PB_TYPE, "protobuf content type (without '@', which Go cannot parse)")
    doc = S["v2json"]
    strategy_doc = doc["definitions"]["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"]["description"]
    eq(pb_get(r.body, 1), [b"2.0"], "Document.swagger")
    defs = pb_named(pb_get(r.body, 9)[0], 1)
    eq(sorted(defs), sorted(doc["definitions"]), "the same definitions as the JSON form")
    dep = defs["io.k8s.api.apps.v1.Deployment"]
    eq(pb_vendor(dep, 31)["x-kubernetes-group-version-kind"],
       doc["definitions"]["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"], "GVK extension")
    props = pb_named(pb_get(defs["io.k8s.api.apps.v1.DeploymentSpec"], 25)[0], 1)
    eq(pb_get(props["strategy"], 1), [b"#/definitions/io.k8s.api.apps.v1.DeploymentStrategy"], "strategy _ref")
    eq(pb_get(props["strategy"], 4), [strategy_doc.encode()], "strategy Schema.description")
    eq(pb_get(pb_get(props["replicas"], 22)[0], 1), [b"integer"], "replicas TypeItem")
    paths = pb_named(pb_get(r.body, 8)[0], 2)
    eq(sorted(paths), sorted(doc["paths"]), "the same paths")
    op = pb_get(paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"], 8)[0]  # PathItem.patch
    eq(pb_vendor(op, 13)["x-kubernetes-group-version-kind"], {"group": "apps", "kind": "Deployment", "version": "v1"},
       "operation GVK")
    query = []
    for item in pb_get(op, 8):
        for param in pb_get(item, 1):
            for nb in pb_get(param, 2):
                for q in pb_get(nb, 3):
                    query += [n.decode() for n in pb_get(q, 4)]
    check({"fieldValidation", "dryRun", "fieldManager", "force"} <= set(query), "patch query parameters: %s" % query)
    tag = r.header("ETag")
    check(tag and tag != S.get("v2tag"), "protobuf ETag")
    eq(get("/openapi/v2", PB_ACCEPT, **{"If-None-Match": tag}).status, 304, "If-None-Match on protobuf")
    eq(get("/openapi/v2", "application/json", **{"If-None-Match": tag}).status, 200, "protobuf tag on JSON")


def test_v3_index_and_documents():
    r = get("/openapi/v3")
    eq(r.status, 200, "GET /openapi/v3")
    index = r.json["paths"]
    kinds = served_kinds()
    want = {("api/" + v) if not g else "apis/%s/%s" % (g, v) for g, v, _ in kinds}
    eq(sorted(index), sorted(want), "one document per served group version")
    for key, e in index.items():
        url = e["serverRelativeURL"]
        check(url.startswith("/openapi/v3/" + key + "?hash="), "hashed URL %s" % url)
        d = get(url)
        eq(d.status, 200, "GET " + url)
        check("immutable" in d.header("Cache-Control"), "hashed URL is immutable: %s" % d.header("Cache-Control"))
        eq(d.json["openapi"], "3.0.0", "openapi version of " + key)
        schemas = d.json["components"]["schemas"]
        have = {gvk_of(x) for s in schemas.values() for x in s.get("x-kubernetes-group-version-kind", [])}
        for gvk in kinds:
            if (("api/" + gvk[1]) if not gvk[0] else "apis/%s/%s" % gvk[:2]) == key:
                check(gvk in have, "%s in %s" % (gvk, key))
        eq(get(url, **{"If-None-Match": d.header("ETag")}).status, 304, "304 for " + key)
        unpinned = get("/openapi/v3/" + key)
        eq(unpinned.status, 200, "unhashed " + key)
        check("immutable" not in unpinned.header("Cache-Control"), "unhashed is not immutable")
    apps = get(index["apis/apps/v1"]["serverRelativeURL"]).json
    op = apps["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    check("fieldValidation" in [p["name"] for p in op["parameters"]], "v3 patch takes fieldValidation")
    eq(op["x-kubernetes-group-version-kind"], {"group": "apps", "kind": "Deployment", "version": "v1"}, "v3 op GVK")
    check("io.k8s.api.core.v1.PodSpec" in apps["components"]["schemas"], "apps/v1 carries what it reaches")
    check("io.k8s.api.core.v1.Pod" not in apps["components"]["schemas"], "apps/v1 carries no core kinds")
    eq(get("/openapi/v3/apis/nosuch.example.com/v1").status, 404, "unknown group version")
    eq(get("/openapi/v9").status, 404, "unknown OpenAPI version")


def kubectl_v(version, args, cache):
    return H.run_cmd([os.path.join(KUBECTL_DIR, "kubectl." + version), "--kubeconfig", S["kc"], "--cache-dir", cache]
                     + list(args), timeout=90)


EXPLAIN = [
    ("deployment.spec.strategy", "<DeploymentStrategy>",
     ["rollingUpdate\t<RollingUpdateDeployment>", "type\t<string>"]),
    ("pods.spec.containers.ports", "<[]ContainerPort>", ["containerPort\t<integer>", "protocol\t<string>"]),
    ("statefulsets.spec", "<StatefulSetSpec>", ["volumeClaimTemplates\t<[]PersistentVolumeClaim>",
                                                "template\t<PodTemplateSpec>", "updateStrategy\t<"]),
    ("jobs.spec.podFailurePolicy", "<PodFailurePolicy>", ["rules\t<[]PodFailurePolicyRule>"]),
    ("deployment.spec.strategy.rollingUpdate.maxSurge", "<IntOrString>", []),
    ("pods.spec.containers.resources", "<ResourceRequirements>", ["limits\t<map[string]Quantity>"]),
    ("pods.metadata.labels", "<map[string]string>", []),
]


def test_kubectl_explain_fields():
    for version in ("1.27", "1.33"):
        cache = H.make_tmpdir("kubectl-cache-explain-" + version)
        for field, typ, rows in EXPLAIN:
            rc, out, err = kubectl_v(version, ["explain", field], cache)
            check(rc == 0, "kubectl %s explain %s: rc=%s %s" % (version, field, rc, err[-1500:]))
            check(typ in out, "kubectl %s explain %s: type %s in\n%s" % (version, field, typ, out))
            for row in rows:
                check(any(ln.strip().startswith(row) for ln in out.splitlines()),
                      "kubectl %s explain %s: row %r in\n%s" % (version, field, row, out))


def test_kubectl_explain_every_kind():
    kinds = served_kinds()
    for version in ("1.27", "1.33"):
        cache = H.make_tmpdir("kubectl-cache-every-" + version)
        plurals = [p for (p, _, _) in kinds.values()]
        for (group, ver, kind), (plural, _, _) in sorted(kinds.items()):
            res = plural + ("." + group if group else "")
            args = ["explain", res]
            if group and plurals.count(plural) > 1:
                # kubectl explain reads "pods.metrics.k8s.io" as pods' field metrics: name the
                # group version of a plural that several groups serve (PodMetrics)
                args = ["explain", plural, "--api-version", "%s/%s" % (group, ver)]
            rc, out, err = kubectl_v(version, args, cache)
            check(rc == 0 and "KIND:" in out and kind in out and "FIELDS:" in out,
                  "kubectl %s explain %s: rc=%s out=%s err=%s" % (version, res, rc, out[:400], err[-800:]))


def test_kubectl_explain_descriptions():
    """explain prints the descriptions of src/common/schema/docs.c: 1.33 from v3, 1.27 from v2."""
    for version in ("1.27", "1.33"):
        cache = H.make_tmpdir("kubectl-cache-docs-" + version)
        rc, out, err = kubectl_v(version, ["explain", "deployment.spec.strategy"], cache)
        check(rc == 0, "kubectl %s explain strategy: rc=%s %s" % (version, rc, err[-1500:]))
        flat = " ".join(out.split())
        check("<empty>" not in out and "<no description>" not in out,
              "kubectl %s explain strategy has empty descriptions:\n%s" % (version, out))
        for text in ("How a Deployment replaces old pods.", "Bounds of a RollingUpdate.",
                     "RollingUpdate (default): a few pods at a time"):
            check(text in flat, "kubectl %s explain strategy: %r in\n%s" % (version, text, out))
        rc, out, err = kubectl_v(version, ["explain", "pods.metadata.tenant"], cache)
        check(rc == 0 and "The tenant that owns the object" in " ".join(out.split()),
              "kubectl %s explain pods.metadata.tenant: rc=%s out=%s err=%s" % (version, rc, out, err[-800:]))
        rc, out, err = kubectl_v(version, ["explain", "networks"], cache)
        check(rc == 0 and "Service cluster IPs come from" in " ".join(out.split()),
              "kubectl %s explain networks: rc=%s out=%s err=%s" % (version, rc, out, err[-800:]))


DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: %s
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers:
      - name: c
        image: nginx:1.25
        ports: [{containerPort: 80}]
"""


def test_old_kubectl_create_and_apply():
    for version in ("1.27", "1.28"):
        cache = H.make_tmpdir("kubectl-cache-create-" + version)
        name = "web-" + version.replace(".", "-")
        path = os.path.join(cache, "d.yaml")
        with open(path, "w") as f:
            f.write(DEPLOYMENT % (name, 1, name, name))
        rc, out, err = kubectl_v(version, ["create", "-f", path, "-v=6"], cache)
        check(rc == 0 and "created" in out,
              "kubectl %s create -f: rc=%s out=%s err=%s" % (version, rc, out, err[-2500:]))
        check("/openapi/v2" in err, "kubectl %s read the v2 document: %s" % (version, err[-2500:]))
        with open(path, "w") as f:
            f.write(DEPLOYMENT % (name, 3, name, name))
        rc, out, err = kubectl_v(version, ["apply", "-f", path], cache)
        check(rc == 0 and "configured" in out, "kubectl %s apply -f: rc=%s out=%s err=%s" % (version, rc, out, err))
        r = S["alice"].get("/apis/apps/v1/namespaces/default/deployments/" + name)
        eq(r.status, 200, "GET deployment " + name)
        eq(r.json["spec"]["replicas"], 3, "kubectl %s apply changed replicas" % version)
        check("kubectl.kubernetes.io/last-applied-configuration" in r.json["metadata"].get("annotations", {}),
              "apply left its annotation")
    # client-side validation is not what answers: the server is asked (fieldValidation)
    rc, out, err = kubectl_v("1.27", ["create", "-f", path, "--dry-run=server", "-v=6"],
                             H.make_tmpdir("kubectl-cache-fv"))
    check("fieldValidation=" in err, "kubectl 1.27 sends fieldValidation: %s" % err[-2500:])


run(globals())
