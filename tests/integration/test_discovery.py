"""Discovery against real etcd + ursa-tp-apiserver: the aggregated form (apidiscovery.k8s.io v2 and
v2beta1) at /api and /apis for clients that ask for it, holding exactly what the legacy lists
hold; entity tags and 304 for If-None-Match; kubectl 1.33 (aggregated) and 1.28 (v2beta1)
`api-resources` and `get all` with fresh cache directories. Then the same through a region's front:
HAProxy (deploy/haproxy/haproxy.cfg.in) -> ursa-gateway -> the tenant partition and a resource
manager, whose kinds (nodes) the gateway merges into both forms, with its own entity tags."""
import json
import os
import re
import secrets
import shutil
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import *  # noqa: F401,F403
import ursa_harness as H

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
GW_BIN = os.path.join(H.BUILD_DIR, "src", "gateway", "ursa-gateway")
RM_BIN = os.path.join(H.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
HAPROXY_BIN = "/usr/sbin/haproxy"
V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
ACCEPT_130 = V2 + "," + V2BETA1 + ",application/json"  # what kubectl 1.30+ sends
ACCEPT_128 = V2BETA1 + ",application/json"
S = {}


def setup():
    for v in ("1.28", "1.33"):
        H.require_binary(os.path.join(KUBECTL_DIR, "kubectl." + v), "kubectl " + v)
    for b, what in ((GW_BIN, "ursa-gateway"), (RM_BIN, "ursa-rm-apiserver"), (HAPROXY_BIN, "haproxy")):
        H.require_binary(b, what)
    # the partitions trust the gateway's identity assertions (for the region part below)
    S["idkey"] = os.path.join(H.make_tmpdir("idkey"), "identity.key")
    with open(S["idkey"], "w") as f:
        f.write(secrets.token_hex(32))
    S["etcd"] = H.Etcd().start()
    S["api"] = H.ApiServer(S["etcd"], extra_args=["--identity-key-file", S["idkey"]]).start()
    S["admin"] = S["api"].admin()
    H.create_tenant(S["admin"], "acme")
    S["kc"] = S["api"].kubeconfig("acme", "alice")
    S["alice"] = S["api"].user_client("acme", "alice")


def get(path, accept, client=None, **headers):
    headers["Accept"] = accept
    return (client or S["alice"]).get(path, headers=headers)


def legacy_as_aggregated(client, gv_path, group, version):
    """The legacy APIResourceList at gv_path, reshaped the way aggregated discovery lists it:
    {resource: (responseKind, scope, singular, verbs, shortNames, categories, {sub: (kind, verbs)})}."""
    r = get(gv_path, "application/json", client)
    eq(r.status, 200, "GET " + gv_path)
    out = {}
    for e in r.json["resources"]:
        if "/" in e["name"]:
            continue
        out[e["name"]] = [{"group": e.get("group", group), "version": e.get("version", version), "kind": e["kind"]},
                          "Namespaced" if e["namespaced"] else "Cluster", e["singularName"], e["verbs"],
                          e.get("shortNames") or [], e.get("categories") or [], {}]
    for e in r.json["resources"]:
        if "/" in e["name"]:
            parent, sub = e["name"].split("/", 1)
            out[parent][6][sub] = [{"group": e.get("group", group), "version": e.get("version", version),
                                    "kind": e["kind"]}, e["verbs"]]
    return out


def aggregated_resources(v):
    out = {}
    for r in v["resources"]:
        out[r["resource"]] = [r["responseKind"], r["scope"], r["singularResource"], r["verbs"],
                              r.get("shortNames") or [], r.get("categories") or [],
                              {s["subresource"]: [s["responseKind"], s["verbs"]] for s in r.get("subresources") or []}]
    return out


def compare_forms(client):
    """The aggregated /api and /apis hold exactly what the legacy lists hold; returns the core
    group's v1 resources."""
    groups = get("/apis", "application/json", client).json["groups"]
    want_groups = [g["name"] for g in groups]
    check(len(want_groups) > 5, "legacy /apis lists groups: %r" % want_groups)
    compared = 0
    for path, legacy_names in (("/api", [""]), ("/apis", want_groups)):
        r = get(path, ACCEPT_130, client)
        eq(r.status, 200, "GET %s aggregated" % path)
        eq(r.header("Content-Type"), V2, path + " Content-Type")
        eq(r.json["kind"], "APIGroupDiscoveryList", path + " kind")
        eq(r.json["apiVersion"], "apidiscovery.k8s.io/v2", path + " apiVersion")
        items = r.json["items"]
        eq([i["metadata"].get("name", "") for i in items], legacy_names, path + " groups in legacy order")
        for item in items:
            name = item["metadata"].get("name", "")
            if name:
                lg = next(g for g in groups if g["name"] == name)
                eq([v["version"] for v in item["versions"]], [v["version"] for v in lg["versions"]],
                   "versions of " + name)
                eq(item["versions"][0]["version"], lg["preferredVersion"]["version"], "preferred of " + name)
            else:
                eq([v["version"] for v in item["versions"]],
                   get("/api", "application/json", client).json["versions"], "core versions")
            for v in item["versions"]:
                eq(v["freshness"], "Current", "freshness")
                gv_path = "/apis/%s/%s" % (name, v["version"]) if name else "/api/" + v["version"]
                want = legacy_as_aggregated(client, gv_path, name, v["version"])
                got = aggregated_resources(v)
                eq(sorted(got), sorted(want), "resources of " + gv_path)
                for res in want:
                    eq(got[res], want[res], "%s %s" % (gv_path, res))
                    compared += 1
    check(compared > 20, "compared %d resources" % compared)
    return get("/api", ACCEPT_130, client).json["items"][0]["versions"][0]["resources"]


def test_aggregated_equals_legacy():
    core = compare_forms(S["alice"])
    # a few facts kubectl relies on
    pods = next(r for r in core if r["resource"] == "pods")
    eq(pods["responseKind"], {"group": "", "version": "v1", "kind": "Pod"}, "pods responseKind")
    eq(pods["scope"], "Namespaced", "pods scope")
    eq(pods["shortNames"], ["po"], "pods shortNames")
    check("all" in pods["categories"], "pods are in category all")
    subs = {s["subresource"]: s for s in pods["subresources"]}
    check("status" in subs and "log" in subs, "pods subresources: %r" % sorted(subs))
    ns = next(r for r in core if r["resource"] == "namespaces")
    eq(ns["scope"], "Cluster", "namespaces scope")


def test_negotiation():
    r = get("/apis", ACCEPT_128)
    eq(r.header("Content-Type"), V2BETA1, "v2beta1 Content-Type")
    eq(r.json["apiVersion"], "apidiscovery.k8s.io/v2beta1", "v2beta1 apiVersion")
    v2 = get("/apis", ACCEPT_130).json
    eq(r.json["items"], v2["items"], "v2beta1 and v2 hold the same groups")
    for accept in ("application/json", "*/*", "application/json;g=apidiscovery.k8s.io;v=v9;as=APIGroupDiscoveryList"):
        r = get("/apis", accept)
        eq(r.header("Content-Type"), "application/json", "legacy Content-Type for " + accept)
        eq(r.json["kind"], "APIGroupList", "legacy kind for " + accept)
        r = get("/api", accept)
        eq(r.json["kind"], "APIVersions", "legacy /api for " + accept)
    # protobuf is not served: the JSON range after it is
    r = get("/api", "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList," + V2)
    eq(r.header("Content-Type"), V2, "protobuf passed over")
    # group version lists are never aggregated
    r = get("/apis/apps/v1", ACCEPT_130)
    eq(r.json["kind"], "APIResourceList", "/apis/apps/v1 kind")
    eq(r.header("Content-Type"), "application/json", "/apis/apps/v1 Content-Type")


def test_etags():
    tags = {}
    for path, accept in (("/apis", ACCEPT_130), ("/apis", ACCEPT_128), ("/apis", "application/json"),
                         ("/api", ACCEPT_130), ("/api", "application/json"), ("/api/v1", "application/json"),
                         ("/apis/apps", "application/json"), ("/apis/apps/v1", "application/json")):
        r = get(path, accept)
        eq(r.status, 200, "GET %s %s" % (path, accept))
        tag = r.header("ETag")
        check(tag and tag.startswith('"') and tag.endswith('"'), "%s %s has a quoted ETag: %r" % (path, accept, tag))
        check("Accept" in (r.header("Vary") or ""), "Vary: Accept on " + path)
        eq(get(path, accept).header("ETag"), tag, "the same document has the same tag")
        r304 = get(path, accept, **{"If-None-Match": tag})
        eq(r304.status, 304, "If-None-Match with the current tag on %s %s" % (path, accept))
        eq(r304.body, b"", "304 has no body")
        eq(r304.header("ETag"), tag, "304 repeats the tag")
        r = get(path, accept, **{"If-None-Match": '"stale", W/' + tag})
        eq(r.status, 304, "a list holding the (weak) tag")
        r = get(path, accept, **{"If-None-Match": '"0123"'})
        eq(r.status, 200, "another tag on %s: the document" % path)
        check(r.json, "body with a stale tag")
        tags[(path, accept)] = tag
    eq(len(set(tags.values())), len(tags), "every document and form has its own tag")
    # a tag belongs to one form: legacy's tag does not spare the aggregated document
    r = get("/apis", ACCEPT_130, **{"If-None-Match": tags[("/apis", "application/json")]})
    eq(r.status, 200, "legacy tag against the aggregated form")


def kubectl_v(version, args, cache, kubeconfig=None):
    return H.run_cmd([os.path.join(KUBECTL_DIR, "kubectl." + version), "--kubeconfig", kubeconfig or S["kc"],
                      "--cache-dir", cache] + list(args), timeout=90)


def api_resources_rows(out):
    lines = [ln for ln in out.splitlines() if ln.strip()]
    check(lines and lines[0].startswith("NAME"), "api-resources header: %r" % lines[:1])
    return lines[1:]


def expected_resources(client=None):
    """(name, apiVersion) of every resource the legacy lists hold, subresources left out."""
    c = client or S["alice"]
    want = set()
    for r in c.get("/api/v1").json["resources"]:
        if "/" not in r["name"]:
            want.add((r["name"], "v1"))
    for g in c.get("/apis").json["groups"]:
        gv = g["preferredVersion"]["groupVersion"]
        for r in c.get("/apis/" + gv).json["resources"]:
            if "/" not in r["name"]:
                want.add((r["name"], gv))
    return want


def requested_paths(err):
    """Paths kubectl -v=6 (or more) logged requests or responses for, in order."""
    # a tenant's kubeconfig names https://<server>/tenants/<t>: the prefix is the client's alone
    return [re.sub(r"^/tenants/[^/]+(?=/|$)", "", m.group(1)) or "/"
            for m in re.finditer(r'https://[^/\s"]+(/[^?\s"]*)', err)]


def check_api_resources(kubeconfig, client, label):
    """kubectl 1.33 and 1.28 api-resources with fresh caches list what the legacy lists hold,
    from /api and /apis alone (the aggregated form)."""
    want = expected_resources(client)
    for version in ("1.33", "1.28"):
        cache = H.make_tmpdir("kubectl-cache-" + version)
        rc, out, err = kubectl_v(version, ["api-resources", "-v=6"], cache, kubeconfig)
        check(rc == 0, "%s: kubectl %s api-resources: rc=%s err=%s" % (label, version, rc, err[-2000:]))
        got = set()
        for line in api_resources_rows(out):
            cols = line.split()
            # NAME SHORTNAMES APIVERSION NAMESPACED KIND: apiVersion is the third column from the end
            got.add((cols[0], cols[-3]))
        eq(sorted(got), sorted(want), "%s: kubectl %s api-resources" % (label, version))
        paths = requested_paths(err)
        check("/api" in paths and "/apis" in paths, "%s: kubectl %s asked /api and /apis: %r" % (label, version, paths))
        gv = [p for p in paths if p.startswith("/apis/") or p.startswith("/api/")]
        eq(gv, [], "%s: kubectl %s fetched group versions one by one" % (label, version))
        _, short, _ = kubectl_v(version, ["api-resources", "--namespaced=false", "-o", "name"], cache, kubeconfig)
        check("namespaces" in short.split() and "pods" not in short.split(),
              "%s: kubectl %s cluster-scoped names: %s" % (label, version, short))
        rc, cats, err = kubectl_v(version, ["api-resources", "--categories=all", "-o", "name"], cache, kubeconfig)
        check(rc == 0 and "pods" in cats.split() and "deployments.apps" in cats.split(),
              "%s: kubectl %s category all: %s %s" % (label, version, cats, err))
    return want


def test_kubectl_api_resources():
    check_api_resources(S["kc"], S["alice"], "tenant partition")


def test_kubectl_get_all():
    kubectl_v("1.33", ["create", "deployment", "web", "--image=nginx:1.25"], H.make_tmpdir("kc"))
    for version in ("1.33", "1.28"):
        cache = H.make_tmpdir("kubectl-cache-all-" + version)
        rc, out, err = kubectl_v(version, ["get", "all"], cache)
        check(rc == 0, "kubectl %s get all: rc=%s err=%s" % (version, rc, err))
        check("deployment.apps/web" in out, "kubectl %s get all lists the deployment: %s" % (version, out))
        rc, out, err = kubectl_v(version, ["get", "deploy,po,svc"], cache)
        check(rc == 0 and "deployment.apps/web" in out, "kubectl %s short names: %s %s" % (version, out, err))


def response_headers(err, path):
    """Headers of the responses kubectl -v=8 logged for GET path (a list of dicts)."""
    out, url, cur = [], None, None
    for ln in err.splitlines():
        if '"Request"' in ln and 'url="' in ln:
            url = re.sub(r"/tenants/[^/]+(?=/)", "", ln.split('url="', 1)[1].split('"', 1)[0].split("?", 1)[0], count=1)
        elif '"Response"' in ln and url and url.endswith("127.0.0.1:%d%s" % (S["api"].port, path)):
            cur = {}
            out.append(cur)
        elif cur is not None and ln.strip() == ">":
            cur = None
        elif cur is not None and ":" in ln:
            k, v = ln.strip().split(":", 1)
            cur[k.strip().lower()] = v.strip()
    return out


def test_kubectl_revalidates_with_etag():
    # kubectl's HTTP cache (<cache-dir>/http) keeps the tagged documents; once the discovery cache
    # is gone (6 hours passed, or invalidated) it revalidates with If-None-Match: a 304 here,
    # which its cache turns into the stored document with the 304's Date.
    cache = H.make_tmpdir("kubectl-cache-etag")
    rc, _, err = kubectl_v("1.33", ["api-resources", "-o", "name", "-v=8"], cache)
    check(rc == 0, "first api-resources: " + err[-2000:])
    first = response_headers(err, "/apis")
    eq(len(first), 1, "one GET /apis")
    check("x-from-cache" not in first[0] and first[0].get("etag"), "first /apis from the server: %r" % first)
    check(os.path.isdir(os.path.join(cache, "http")), "kubectl keeps an HTTP cache: %r" % os.listdir(cache))
    shutil.rmtree(os.path.join(cache, "discovery"))
    time.sleep(1.2)
    rc, _, err = kubectl_v("1.33", ["api-resources", "-o", "name", "-v=8"], cache)
    check(rc == 0, "second api-resources: " + err[-2000:])
    second = response_headers(err, "/apis")
    eq(len(second), 1, "one GET /apis again")
    eq(second[0].get("x-from-cache"), "1", "second /apis from kubectl's cache")
    eq(second[0].get("etag"), first[0]["etag"], "same tag")
    check(second[0].get("date") != first[0].get("date"), "revalidated (the 304's Date): %r %r" % (first, second))
    eq(second[0].get("content-type"), V2, "the cached form")


# --- through a region's front: HAProxy -> gateway -> tenant partition + resource manager ---------

def wait_ok(client, path, what, timeout=60):
    def ok():
        try:
            return client.get(path).status == 200
        except OSError:
            return False
    wait_until(ok, timeout, what + " " + path)


def register(pid, kind, url, zone=None):
    tp = S["api"]
    args = [H.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"),
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file,
            "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", kind, "--name", pid, "--endpoints", url]
    if zone:
        args += ["--zone", zone]
    rc, out, err = H.run_cmd(args, 60)
    check(rc == 0 and " %s recorded" % pid in out, "register %s: %s %s" % (pid, out, err))


def test_region_starts():
    tp = S["api"]
    d = tp.dir
    S["rm_etcd"], S["gw_etcd"] = H.Etcd(name="rm").start(), H.Etcd(name="gw").start()
    rm_port, gw_port, S["ha_port"] = H.free_port(), H.free_port(), H.free_port()
    H._logs.extend([("rm-az-1", os.path.join(d, "rm.log")), ("gateway", os.path.join(d, "gw.log")),
                    ("haproxy", os.path.join(d, "haproxy.log"))])
    S["rm_proc"] = H.spawn([RM_BIN, "--listen", "127.0.0.1:%d" % rm_port, "--etcd-servers", S["rm_etcd"].endpoints,
             "--etcd-prefix", "/registry", "--token-auth-file", tp.token_file,
             "--token-signing-public-key", tp.signing_pub, "--partition-id", "rm-az-1",
             "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
             "--identity-key-file", S["idkey"], "--log-level", "info"], os.path.join(d, "rm.log"))
    rm = H.Client("https://127.0.0.1:%d" % rm_port, tp.ca_file, tp.admin_token)
    wait_ok(rm, "/readyz", "resource manager")
    S["rm"] = rm
    register("tp-1", "tp", tp.url)
    register("rm-az-1", "rm", rm.base_url, "az-1")
    token = os.path.join(d, "gw.token")
    with open(token, "w") as f:
        f.write(tp.admin_token)
    H.spawn([GW_BIN, "--listen", "127.0.0.1:%d" % gw_port, "--etcd-servers", S["gw_etcd"].endpoints,
             "--tls-cert-file", tp.cert_file, "--tls-private-key-file", tp.key_file,
             "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
             "--partition-ca-file", tp.ca_file, "--partition-token-file", token, "--identity-key-file", S["idkey"],
             "--audit-log-path", os.path.join(d, "audit.log"), "--log-level", "info"], os.path.join(d, "gw.log"))
    wait_ok(H.Client("https://127.0.0.1:%d" % gw_port, tp.ca_file, tp.admin_token), "/readyz", "gateway")
    # HAProxy as deploy/lib/components.sh configures it
    os.makedirs(os.path.join(d, "haproxy"), exist_ok=True)
    with open(os.path.join(d, "haproxy", "haproxy.pem"), "w") as f:
        f.write(open(tp.cert_file).read() + open(tp.key_file).read())
    src = open(os.path.join(H.SOURCE_DIR, "deploy", "haproxy", "haproxy.cfg.in")).read()
    cfg = os.path.join(d, "haproxy.cfg")
    with open(cfg, "w") as f:
        f.write(src.replace("@STATE@", d).replace("@PORT@", str(S["ha_port"])).replace("@CA@", tp.ca_file)
                .replace("@SERVERS@\n", "\tserver gateway-1 127.0.0.1:%d\n" % gw_port))
    H.spawn([HAPROXY_BIN, "-db", "-f", cfg], os.path.join(d, "haproxy.log"))
    S["front"] = "https://127.0.0.1:%d" % S["ha_port"]
    S["gw_admin"] = H.Client(S["front"], tp.ca_file, tp.admin_token)
    wait_ok(S["gw_admin"], "/api/v1/namespaces/default/pods", "HAProxy and gateway")
    H.create_tenant(S["gw_admin"], "gwt")
    out = H.must_run([H.URSACTL_BIN, "kubeconfig", "--tenant", "gwt", "--user", "carol", "--ttl", "0",
                      "--server", S["front"], "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file])
    S["gw_kc"] = os.path.join(d, "kubeconfig-gwt-carol")
    with open(S["gw_kc"], "w") as f:
        f.write(out)
    S["carol"] = H.Client(S["front"], tp.ca_file, H.kubeconfig_token(S["gw_kc"]))


def test_region_aggregated_discovery_merges_the_resource_manager():
    core = compare_forms(S["carol"])
    names = [r["resource"] for r in core]
    check("nodes" in names and "pods" in names, "the gateway's core group holds the RM's nodes: %r" % names)
    nodes = next(r for r in core if r["resource"] == "nodes")
    eq(nodes["scope"], "Cluster", "nodes scope")
    eq(nodes["responseKind"], {"group": "", "version": "v1", "kind": "Node"}, "nodes responseKind")
    # only what the TP serves, plus the RM's kinds: the merged lists equal the TP's except for them
    tp_core = [r["resource"] for r in get("/api", ACCEPT_130, S["alice"]).json["items"][0]["versions"][0]["resources"]]
    check(set(tp_core) < set(names), "merged core %r holds the TP's %r" % (names, tp_core))
    r = get("/apis", ACCEPT_128, S["carol"])
    eq(r.header("Content-Type"), V2BETA1, "v2beta1 through the gateway")
    r = get("/apis", "application/json", S["carol"])
    eq((r.header("Content-Type"), r.json["kind"]), ("application/json", "APIGroupList"), "legacy through the gateway")


def test_region_etags():
    for path, accept in (("/api", ACCEPT_130), ("/apis", ACCEPT_130), ("/api", "application/json"),
                         ("/api/v1", "application/json"), ("/apis/apps/v1", "application/json")):
        r = get(path, accept, S["carol"])
        tag = r.header("ETag")
        check(r.status == 200 and tag, "%s %s through the front has a tag: %r %r" % (path, accept, r, tag))
        eq(get(path, accept, S["carol"]).header("ETag"), tag, "stable tag for " + path)
        r304 = get(path, accept, S["carol"], **{"If-None-Match": tag})
        eq((r304.status, r304.body), (304, b""), "304 through HAProxy and the gateway for %s %s" % (path, accept))
        eq(get(path, accept, S["carol"], **{"If-None-Match": '"x"'}).status, 200, "another tag: " + path)


def test_region_kubectl():
    want = check_api_resources(S["gw_kc"], S["carol"], "through the gateway")
    check(("nodes", "v1") in want, "the tenant user sees nodes in discovery")
    rc, out, err = kubectl_v("1.33", ["create", "deployment", "gweb", "--image=nginx:1.25"], H.make_tmpdir("kc"),
                             S["gw_kc"])
    check(rc == 0, "create deployment through the gateway: " + err)
    for version in ("1.33", "1.28"):
        cache = H.make_tmpdir("kubectl-cache-gw-all-" + version)
        rc, out, err = kubectl_v(version, ["get", "all"], cache, S["gw_kc"])
        check(rc == 0 and "deployment.apps/gweb" in out, "kubectl %s get all through the gateway: %s %s"
              % (version, out, err))
    # nodes are listed in discovery for everyone (as in Kubernetes) but belong to the system tenant
    rc, out, err = kubectl_v("1.33", ["get", "nodes"], H.make_tmpdir("kc"), S["gw_kc"])
    check(rc != 0 and "Forbidden" in err, "a tenant user's kubectl get nodes: %s %s" % (out, err))


# --- OpenAPI through the gateway: the tenant partition's documents and the resource manager's ---

PB_ACCEPT = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"  # what kubectl 1.27 asks for


def front_kubeconfig(tenant, user, groups=()):
    tp = S["api"]
    args = [H.URSACTL_BIN, "kubeconfig", "--tenant", tenant, "--user", user, "--ttl", "0", "--server", S["front"],
            "--signing-key", tp.signing_key, "--certificate-authority", tp.ca_file]
    if groups:
        args += ["--groups", ",".join(groups)]
    path = os.path.join(tp.dir, "kubeconfig-front-%s-%s" % (tenant, user))
    with open(path, "w") as f:
        f.write(H.must_run(args))
    return path


def test_region_openapi_v2():
    tp_doc = get("/openapi/v2", "application/json", S["alice"]).json
    rm_doc = get("/openapi/v2", "application/json", S["rm"]).json
    check("/api/v1/nodes" not in tp_doc["paths"] and "/api/v1/nodes" in rm_doc["paths"],
          "nodes are served by the resource manager only")
    r = get("/openapi/v2", "application/json", S["carol"])
    eq((r.status, r.header("Content-Type")), (200, "application/json"), "v2 JSON through the gateway")
    doc = r.json
    eq(doc["swagger"], "2.0", "swagger version")
    eq(set(doc["paths"]), set(tp_doc["paths"]) | set(rm_doc["paths"]), "v2 paths are the union")
    eq(set(doc["definitions"]), set(tp_doc["definitions"]) | set(rm_doc["definitions"]), "v2 definitions: union")
    node = doc["definitions"]["io.k8s.api.core.v1.Node"]
    eq(node["x-kubernetes-group-version-kind"], [{"group": "", "kind": "Node", "version": "v1"}], "Node's kind")
    check("spec" in node["properties"], "Node has its spec: %r" % sorted(node["properties"]))
    check("/apis/apps/v1/namespaces/{namespace}/deployments" in doc["paths"], "deployments are in")
    tag = r.header("ETag")
    check(tag and tag.startswith('"'), "v2 JSON has a tag: %r" % tag)
    eq(get("/openapi/v2", "application/json", S["carol"]).header("ETag"), tag, "stable v2 tag")
    r304 = get("/openapi/v2", "application/json", S["carol"], **{"If-None-Match": tag})
    eq((r304.status, r304.body), (304, b""), "v2 304 through HAProxy and the gateway")
    eq(get("/openapi/v2", "application/json", S["carol"], **{"If-None-Match": '"x"'}).status, 200, "v2 other tag")
    # the protobuf form: the merged document through the API servers' encoder
    pb = get("/openapi/v2", PB_ACCEPT, S["carol"])
    eq((pb.status, pb.header("Content-Type")), (200, "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
       "v2 protobuf through the gateway")
    check(b"io.k8s.api.core.v1.Node" in pb.body and b"io.k8s.api.apps.v1.Deployment" in pb.body,
          "the protobuf document holds both sides")
    tp_pb = get("/openapi/v2", PB_ACCEPT, S["alice"])
    check(b"io.k8s.api.core.v1.Node\x12" not in tp_pb.body and len(pb.body) > len(tp_pb.body),
          "the tenant partition's protobuf document is the smaller one")
    pbtag = pb.header("ETag")
    check(pbtag and pbtag != tag, "the protobuf form has its own tag: %r %r" % (pbtag, tag))
    eq(get("/openapi/v2", PB_ACCEPT, S["carol"], **{"If-None-Match": pbtag}).status, 304, "v2 protobuf 304")
    eq(get("/openapi/v2", PB_ACCEPT, S["carol"], **{"If-None-Match": tag}).status, 200, "JSON tag, protobuf form")


def test_region_openapi_v3():
    tp_idx = get("/openapi/v3", "application/json", S["alice"]).json["paths"]
    rm_idx = get("/openapi/v3", "application/json", S["rm"]).json["paths"]
    r = get("/openapi/v3", "application/json", S["carol"])
    eq(r.status, 200, "v3 index through the gateway")
    idx = r.json["paths"]
    check("api/v1" in idx and "apis/apps/v1" in idx, "the v3 index lists api/v1 and apps/v1: %r" % sorted(idx))
    eq(set(idx), set(tp_idx) | set(rm_idx), "the v3 index is the union")
    for k, v in idx.items():
        check(v["serverRelativeURL"].startswith("/openapi/v3/%s?hash=" % k), "gateway URL for %s: %r" % (k, v))
    # served by the tenant partition alone (batch/v1): its hash; by both (api/v1, apps/v1 with the
    # resource manager's daemonsets): another one
    check("apis/batch/v1" in tp_idx and "apis/batch/v1" not in rm_idx, "batch/v1 is the TP's alone")
    eq(idx["apis/batch/v1"], tp_idx["apis/batch/v1"], "batch/v1 as the tenant partition lists it")
    for k in ("api/v1", "apis/apps/v1"):
        check(k in rm_idx and idx[k] != tp_idx[k] and idx[k] != rm_idx[k], k + " has a merged hash")
    tag = r.header("ETag")
    eq(get("/openapi/v3", "application/json", S["carol"], **{"If-None-Match": tag}).status, 304, "v3 index 304")
    # api/v1 from both sides: union of paths and schemas
    url = idx["api/v1"]["serverRelativeURL"]
    r = get(url, "application/json", S["carol"])
    eq(r.status, 200, "GET " + url)
    eq(r.header("Cache-Control"), "public, immutable, max-age=31536000", "a URL from the index is immutable")
    tp_v1 = get("/openapi/v3/api/v1", "application/json", S["alice"]).json
    rm_v1 = get("/openapi/v3/api/v1", "application/json", S["rm"]).json
    doc = r.json
    eq(set(doc["paths"]), set(tp_v1["paths"]) | set(rm_v1["paths"]), "api/v1 paths are the union")
    eq(set(doc["components"]["schemas"]), set(tp_v1["components"]["schemas"]) | set(rm_v1["components"]["schemas"]),
       "api/v1 schemas are the union")
    check("/api/v1/nodes" in doc["paths"] and "/api/v1/namespaces/{namespace}/pods" in doc["paths"],
          "api/v1 has nodes and pods")
    tag = r.header("ETag")
    r304 = get(url, "application/json", S["carol"], **{"If-None-Match": tag})
    eq((r304.status, r304.body), (304, b""), "api/v1 304")
    eq(get("/openapi/v3/api/v1", "application/json", S["carol"]).header("Cache-Control"), "no-cache, private",
       "without the hash: revalidate")
    eq(get("/openapi/v3/api/v1?hash=0BAD", "application/json", S["carol"]).header("Cache-Control"),
       "no-cache, private", "with an old hash: revalidate")
    # batch/v1 from the tenant partition alone: its document
    r = get(idx["apis/batch/v1"]["serverRelativeURL"], "application/json", S["carol"])
    eq(r.json, get("/openapi/v3/apis/batch/v1", "application/json", S["alice"]).json, "batch/v1 is the TP's")
    eq(r.header("Cache-Control"), "public, immutable, max-age=31536000", "batch/v1 from the index is immutable")
    apps = get(idx["apis/apps/v1"]["serverRelativeURL"], "application/json", S["carol"]).json
    check("/apis/apps/v1/namespaces/{namespace}/deployments" in apps["paths"] and
          "/apis/apps/v1/namespaces/{namespace}/daemonsets" in apps["paths"], "apps/v1 holds both sides")
    for bad in ("/openapi/v3/apis/nothing/v1", "/openapi/v3/apis/../../version", "/openapi/v9"):
        eq(get(bad, "application/json", S["carol"]).status, 404, "GET " + bad)


def kubectl_explain(version, kubeconfig, what, env=None):
    cache = H.make_tmpdir("kubectl-cache-explain-" + version)
    e = dict(os.environ)
    e.update(env or {})
    return H.run_cmd([os.path.join(KUBECTL_DIR, "kubectl." + version), "--kubeconfig", kubeconfig,
                      "--cache-dir", cache, "explain", what], timeout=90, env=e)


def test_region_kubectl_explain():
    admin_kc = front_kubeconfig(H.ADMIN_TENANT, "admin", (H.ADMIN_GROUP,))
    H.require_binary(os.path.join(KUBECTL_DIR, "kubectl.1.27"), "kubectl 1.27")
    cases = [(admin_kc, "nodes.spec", ["KIND:", "Node", "FIELD: spec"]),
             (admin_kc, "deployments.spec.strategy", ["Deployment", "rollingUpdate"]),
             (S["gw_kc"], "pods", ["KIND:", "Pod", "spec"])]
    for version in ("1.27", "1.33"):
        for kc, what, want in cases:
            rc, out, err = kubectl_explain(version, kc, what)
            check(rc == 0, "kubectl %s explain %s through the gateway: rc=%s %s %s" % (version, what, rc, out, err))
            for w in want:
                check(w in out, "kubectl %s explain %s shows %r: %s" % (version, what, w, out))
    # kubectl 1.27 can still read the protobuf v2 document (explain without OpenAPI v3)
    rc, out, err = kubectl_explain("1.27", admin_kc, "nodes.spec", {"KUBECTL_EXPLAIN_OPENAPIV3": "false"})
    check(rc == 0 and "Node" in out, "kubectl 1.27 explain nodes.spec from OpenAPI v2: %s %s" % (out, err))



def test_region_openapi_without_the_resource_manager():
    # last: stops the resource manager. Once the merged documents are older than the gateway's
    # freshness window (5 s), it asks again, logs the partition that does not answer, and serves
    # the tenant partition's documents alone.
    before = get("/openapi/v2", "application/json", S["carol"]).json
    check("/api/v1/nodes" in before["paths"], "nodes before")
    H.terminate(S["rm_proc"])
    time.sleep(5.5)
    r = get("/openapi/v2", "application/json", S["carol"])
    eq(r.status, 200, "v2 without the resource manager")
    check("/api/v1/nodes" not in r.json["paths"] and "/api/v1/namespaces/{namespace}/pods" in r.json["paths"],
          "the tenant partition's document alone")
    eq(r.json, get("/openapi/v2", "application/json", S["alice"]).json, "exactly the tenant partition's")
    r = get("/openapi/v3", "application/json", S["carol"])
    eq(r.status, 200, "v3 index without the resource manager")
    check("apis/coordination.k8s.io/v1" in r.json["paths"] and "api/v1" in r.json["paths"], "index: TP's keys")
    eq(get("/openapi/v3/api/v1", "application/json", S["carol"]).status, 200, "api/v1 without the RM")
    log = open(os.path.join(S["api"].dir, "gw.log")).read()
    lines = [ln for ln in log.splitlines() if "openapi: partition" in ln and "partition=rm-az-1" in ln]
    check(lines and "level=warn" in lines[0], "the gateway logged it: %r" % lines)


run(globals())
