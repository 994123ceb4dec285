#!/usr/bin/python3
"""Service accounts: the default ServiceAccount of every namespace, TokenRequest (`kubectl create
token`, audiences, expiry, binding to a pod), service-account tokens used by python3-kubernetes
straight at the API server and through a gateway, revocation (deleting the service account or the
bound pod makes the token 401 at once), TokenReview and SelfSubjectReview (`kubectl auth whoami`).
A real ursa-tp-apiserver with its etcd, and an ursa-gateway with its own etcd in front of it.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_serviceaccounts.py
(URSA_TEST=test_a,test_b runs a subset after setup.)"""

import base64
import json
import os
import secrets
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
from ursa_harness import check, eq, expect_status, kubectl, uniq, wait_until  # noqa: E402

GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
AUTHN = "/apis/authentication.k8s.io/v1"
S = {}


def setup():
    h.require_binary(GW_BIN, "ursa-gateway")
    S["etcd"], S["gw_etcd"] = h.Etcd(name="tp").start(), h.Etcd(name="gw").start()
    S["idkey"] = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(S["idkey"], "w") as f:
        f.write(secrets.token_hex(32))
    api = S["api"] = h.ApiServer(S["etcd"], extra_args=["--identity-key-file", S["idkey"]]).start()
    S["admin"] = api.admin()
    rc, out, err = h.run_cmd([h.URSACTL_BIN, "register", "--region-file", os.path.join(api.dir, "region.json"),
                              "--signing-key", api.signing_key, "--certificate-authority", api.ca_file,
                              "--gateway-etcd", S["gw_etcd"].endpoints, "--kind", "tp", "--name", "tp-1",
                              "--endpoints", api.url], 60)
    check(rc == 0, "ursactl register: %s %s" % (out, err))
    token = os.path.join(api.dir, "gw.token")
    with open(token, "w") as f:
        f.write(api.admin_token)
    port = h.free_port()
    log = os.path.join(api.dir, "gw.log")
    h._logs.append(("gateway", log))
    S["gw"] = h.spawn([GW_BIN, "--listen", "127.0.0.1:%d" % port, "--etcd-servers", S["gw_etcd"].endpoints,
                       "--tls-cert-file", api.cert_file, "--tls-private-key-file", api.key_file,
                       "--token-auth-file", api.token_file, "--token-signing-public-key", api.signing_pub,
                       "--partition-ca-file", api.ca_file, "--partition-token-file", token,
                       "--identity-key-file", S["idkey"], "--audit-log-path", os.path.join(api.dir, "audit.log"),
                       "--log-level", "debug"], log)
    S["gw_url"] = "https://127.0.0.1:%d" % port
    S["gw_admin"] = h.Client(S["gw_url"], api.ca_file, api.admin_token)
    wait_until(lambda: ok(S["gw_admin"], "/readyz"), 60, "gateway ready")
    S["t"] = uniq("sa")
    h.create_tenant(S["gw_admin"], S["t"])  # placed on tp-1 and recorded by the gateway
    S["alice"] = api.kubeconfig(S["t"], "alice")  # a tenant administrator (ursactl's default group)
    alice = h.Client(api.url, api.ca_file, h.kubeconfig_token(S["alice"]))
    wait_until(lambda: alice.get("/api/v1/namespaces").status == 200, 15,
               "the new tenant's administrator may list namespaces (its default roles are bound)")


def ok(client, path):
    try:
        return client.get(path).status == 200
    except OSError:
        return False


def k(args, kubeconfig=None, ok_rc=True, token=None):
    extra = ["--token", token] if token else []
    rc, out, err = kubectl(extra + list(args), kubeconfig or S["alice"])
    if ok_rc:
        check(rc == 0, "kubectl %s failed (rc %d): %s %s" % (" ".join(args), rc, out, err))
    return rc, out, err


def claims(tok):
    part = tok.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def tpath(rest):
    return "/api/v1/tenants/%s/%s" % (S["t"], rest)


def sa_path(ns, name=None):
    return tpath("namespaces/%s/serviceaccounts%s" % (ns, "/" + name if name else ""))


def token_request(ns, name, spec=None, client=None):
    body = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec or {}}
    return (client or S["admin"]).post(sa_path(ns, name) + "/token", body)


def api_client(token, url=None):
    """python3-kubernetes CoreV1Api with a bearer token (the API server's or the gateway's URL)."""
    import kubernetes.client as kc
    cfg = kc.Configuration()
    cfg.host = url or S["api"].url
    cfg.ssl_ca_cert = S["api"].ca_file
    cfg.api_key = {"authorization": "Bearer " + token}
    return kc.CoreV1Api(kc.ApiClient(cfg))


def status_of(fn):
    """The HTTP status a python3-kubernetes call ends with (200 when it returns)."""
    from kubernetes.client.rest import ApiException
    try:
        fn()
        return 200
    except ApiException as e:
        return e.status


def test_default_service_account_in_every_namespace():
    rc, out, err = k(["create", "namespace", "team"])
    for ns in ("team", "default", "kube-system", "kube-public"):
        wait_until(lambda: S["admin"].get(sa_path(ns, "default")).status == 200, 10,
                   "ServiceAccount default in namespace %s" % ns)
    rc, out, err = k(["get", "serviceaccounts", "-n", "team", "-o", "name"])
    eq(out.split(), ["serviceaccount/default"], "service accounts of a new namespace")
    for ns in ("default", "kube-system"):
        expect_status(S["admin"].get("/api/v1/tenants/system/namespaces/%s/serviceaccounts/default" % ns), 200,
                      "default service account of system namespace %s" % ns)


def test_create_token():
    k(["create", "serviceaccount", "robot", "-n", "team"])
    # what lets robot list and create pods in team, and nothing elsewhere (RBAC)
    k(["create", "rolebinding", "robot-edit", "--clusterrole=edit", "--serviceaccount=team:robot", "-n", "team"])
    rc, out, err = k(["create", "token", "robot", "-n", "team"])
    tok = out.strip()
    eq(len(tok.split(".")), 3, "kubectl create token prints a JWT (%r)" % tok[:40])
    c = claims(tok)
    eq(c.get("sub"), "system:serviceaccount:team:robot", "token subject")
    eq(c.get("aud"), ["ursa"], "default audience")
    eq(c.get("tenant"), S["t"], "token tenant")
    sa = S["admin"].get(sa_path("team", "robot")).json
    eq(c["kubernetes.io"], {"namespace": "team", "serviceaccount": {"name": "robot", "uid": sa["metadata"]["uid"]}},
       "kubernetes.io claim")
    eq(sorted(c.get("groups", [])), ["system:serviceaccounts", "system:serviceaccounts:team"], "groups")
    check(3590 <= c["exp"] - c["iat"] <= 3610, "default lifetime one hour: %r" % c)
    S["robot_token"] = tok
    S["robot_uid"] = sa["metadata"]["uid"]


def test_token_request_reply_and_errors():
    r = token_request("team", "robot", {"audiences": ["ursa", "vault"], "expirationSeconds": 600})
    expect_status(r, 201, "TokenRequest")
    eq(r.json["kind"], "TokenRequest", "reply kind")
    eq(r.json["spec"]["expirationSeconds"], 600, "expiry kept")
    check(r.json["status"]["expirationTimestamp"].endswith("Z"), "RFC 3339 expiry: %r" % r.json["status"])
    eq(claims(r.json["status"]["token"])["aud"], ["ursa", "vault"], "asked audiences")
    r = token_request("team", "robot", {"expirationSeconds": 10 ** 7})
    expect_status(r, 201, "TokenRequest longer than the maximum")
    eq(r.json["spec"]["expirationSeconds"], 48 * 3600, "expiry cut to 48h")
    r = token_request("team", "nobody")
    expect_status(r, 404, "TokenRequest for a missing service account", "NotFound")
    eq(r.json["message"], 'serviceaccounts "nobody" not found', "404 message")
    r = token_request("team", "robot", {"expirationSeconds": 60})
    expect_status(r, 422, "too short", "Invalid")
    check("may not specify a duration less than 10 minutes" in r.json["message"], r.json["message"])
    r = token_request("team", "robot", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "ghost"}})
    expect_status(r, 404, "bound to a missing pod", "NotFound")
    eq(r.json["message"], 'pods "ghost" not found', "missing pod message")
    r = token_request("team", "robot", {"boundObjectRef": {"kind": "Node", "name": "n"}})
    expect_status(r, 422, "bound to a node", "Invalid")
    rc, out, err = k(["create", "token", "robot", "-n", "team", "--duration", "5m"], ok_rc=False)
    check(rc != 0 and "10 minutes" in err, "kubectl create token --duration 5m refused: %s" % err)
    rc, out, err = k(["create", "token", "nobody", "-n", "team"], ok_rc=False)
    check(rc != 0 and 'serviceaccounts "nobody" not found' in err, "kubectl create token of nobody: %s" % err)


def test_token_lists_pods_directly_and_through_gateway():
    tok = S["robot_token"]
    for url in (S["api"].url, S["gw_url"]):
        core = api_client(tok, url)
        core.list_namespaced_pod("team")  # raises on any error
        eq(status_of(lambda: core.create_namespaced_pod("team", h.pod_manifest(uniq("bypod")))), 200,
           "service account creates a pod through %s" % url)
        eq(status_of(lambda: core.list_namespaced_pod("default")), 403, "robot lists pods of default at %s" % url)
    # a tenant admin's identity still works through the gateway (no service-account fields)
    alice = h.kubeconfig_token(S["alice"])
    eq(status_of(lambda: api_client(alice, S["gw_url"]).list_namespaced_pod("team")), 200, "alice via gateway")


def test_other_audience_is_no_api_token():
    r = token_request("team", "robot", {"audiences": ["vault"]})
    expect_status(r, 201, "TokenRequest for vault")
    tok = r.json["status"]["token"]
    for url in (S["api"].url, S["gw_url"]):
        eq(status_of(lambda: api_client(tok, url).list_namespaced_pod("team")), 401, "vault token at %s" % url)
    S["vault_token"] = tok
    # kubectl sends its TokenRequest as protobuf: audiences, expiry and binding all arrive
    rc, out, err = k(["create", "token", "robot", "-n", "team", "--audience", "vault", "--audience", "ursa",
                      "--duration", "20m"])
    c = claims(out.strip())
    eq(c["aud"], ["vault", "ursa"], "kubectl create token --audience")
    eq(c["exp"] - c["iat"], 1200, "kubectl create token --duration 20m")


def test_whoami():
    rc, out, err = k(["auth", "whoami"])
    check("alice" in out and "ursa:tenant-admins" in out and "system:authenticated" in out,
          "kubectl auth whoami as alice:\n%s" % out)
    rc, out, err = k(["auth", "whoami", "-o", "json"], token=S["robot_token"])
    info = json.loads(out)["status"]["userInfo"]
    eq(info["username"], "system:serviceaccount:team:robot", "whoami username")
    eq(info.get("uid"), S["robot_uid"], "whoami uid")
    eq(info["groups"], ["system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"], "groups")
    eq(info["extra"].get("ursa.io/tenant"), [S["t"]], "tenant in extra")
    # through the gateway too
    gw = h.Client(S["gw_url"], S["api"].ca_file, S["robot_token"])
    r = gw.post(AUTHN + "/selfsubjectreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})
    expect_status(r, 201, "SelfSubjectReview through the gateway")
    eq(r.json["status"]["userInfo"]["username"], "system:serviceaccount:team:robot", "gateway whoami")


def review(token, audiences=None, client=None):
    spec = {"token": token}
    if audiences:
        spec["audiences"] = audiences
    r = (client or S["admin"]).post(AUTHN + "/tokenreviews", {"apiVersion": "authentication.k8s.io/v1",
                                                                "kind": "TokenReview", "spec": spec})
    expect_status(r, 201, "TokenReview")
    return r.json["status"]


def test_token_review():
    st = review(S["robot_token"])
    eq(st["authenticated"], True, "robot's token authenticates")
    eq(st["user"]["username"], "system:serviceaccount:team:robot", "reviewed user")
    eq(st["user"]["uid"], S["robot_uid"], "reviewed uid")
    check("system:serviceaccounts:team" in st["user"]["groups"], st)
    eq(st["audiences"], ["ursa"], "reviewed audiences")
    st = review(S["robot_token"] + "x")
    eq(st.get("authenticated"), False, "a tampered token")
    check(st.get("error"), "an error for a bad token: %r" % st)
    st = review("not-a-token")
    eq(st.get("authenticated"), False, "garbage")
    st = review(S["vault_token"])
    eq(st.get("authenticated"), False, "a vault token is not the API's")
    st = review(S["vault_token"], ["vault", "other"])
    eq((st.get("authenticated"), st.get("audiences")), (True, ["vault"]), "a vault token for vault")
    st = review(h.kubeconfig_token(S["alice"]))
    eq((st["authenticated"], st["user"]["username"]), (True, "alice"), "a user's token")
    r = S["admin"].post(AUTHN + "/tokenreviews", {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
                                                   "spec": {}})
    expect_status(r, 400, "TokenReview without a token")
    expect_status(S["admin"].get(AUTHN + "/tokenreviews"), 405, "tokenreviews cannot be listed")


def test_bound_pod_token_dies_with_the_pod():
    pod = h.pod_manifest("worker")
    pod["spec"]["serviceAccountName"] = "robot"
    r = S["admin"].post(tpath("namespaces/team/pods"), pod)
    expect_status(r, 201, "create pod worker")
    uid = r.json["metadata"]["uid"]
    rc, out, err = k(["create", "token", "robot", "-n", "team", "--duration", "10m",
                      "--bound-object-kind", "Pod", "--bound-object-name", "worker"])
    tok = out.strip()
    c = claims(tok)
    eq(c["kubernetes.io"].get("pod"), {"name": "worker", "uid": uid}, "bound pod claim")
    check(590 <= c["exp"] - c["iat"] <= 610, "10 minutes: %r" % c)
    core, gw = api_client(tok), api_client(tok, S["gw_url"])
    core.list_namespaced_pod("team")
    gw.list_namespaced_pod("team")
    st = review(tok)
    eq(st["user"]["extra"].get("authentication.kubernetes.io/pod-name"), ["worker"], "pod name in extra")
    r = token_request("team", "robot", {"boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "worker",
                                                             "uid": "not-" + uid}})
    expect_status(r, 409, "bound pod uid mismatch", "Conflict")
    r = token_request("team", "default", {"boundObjectRef": {"kind": "Pod", "name": "worker"}})
    expect_status(r, 400, "pod of another service account")
    r = S["admin"].delete(tpath("namespaces/team/pods/worker") + "?gracePeriodSeconds=0")
    check(r.status in (200, 202), "delete pod: %r" % r)
    wait_until(lambda: S["admin"].get(tpath("namespaces/team/pods/worker")).status == 404, 10, "pod gone")
    eq(status_of(lambda: core.list_namespaced_pod("team")), 401, "token of a deleted pod, directly")
    eq(status_of(lambda: gw.list_namespaced_pod("team")), 401, "token of a deleted pod, through the gateway")
    eq(review(tok).get("authenticated"), False, "TokenReview of a deleted pod's token")
    # the unbound token of the same service account is unaffected
    api_client(S["robot_token"]).list_namespaced_pod("team")


def test_deleting_the_service_account_revokes_its_tokens():
    tok = S["robot_token"]
    core, gw = api_client(tok), api_client(tok, S["gw_url"])
    core.list_namespaced_pod("team")
    gw.list_namespaced_pod("team")  # now in both token caches
    k(["delete", "serviceaccount", "robot", "-n", "team"])
    start = time.monotonic()
    eq(status_of(lambda: core.list_namespaced_pod("team")), 401, "deleted service account, directly")
    eq(status_of(lambda: gw.list_namespaced_pod("team")), 401, "deleted service account, through the gateway")
    check(time.monotonic() - start < 5, "revocation is immediate, not after a cache expires")
    rc, out, err = k(["auth", "whoami"], token=tok, ok_rc=False)
    check(rc != 0 and "Unauthorized" in err, "kubectl with a revoked token: %s" % err)
    st = review(tok)
    eq((st.get("authenticated"), st.get("error")), (False, "service account token has been invalidated"),
       "TokenReview of a revoked token")
    # a new service account of the same name does not revive the old token (another uid)
    k(["create", "serviceaccount", "robot", "-n", "team"])
    eq(status_of(lambda: core.list_namespaced_pod("team")), 401, "old token after robot was recreated")
    rc, out, err = k(["create", "token", "robot", "-n", "team"])
    api_client(out.strip()).list_namespaced_pod("team")


def teardown():
    h.terminate(S.get("gw"))


if __name__ == "__main__":
    h.run(globals())
