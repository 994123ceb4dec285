#!/usr/bin/python3
"""Bad input and failures: Kubernetes Status errors with the right code and nothing stored;
etcd down and back; etcd compaction (410 and relist); a 3-member etcd losing a member.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_faults.py"""

import base64
import http.client
import json
import os
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import (ApiServer, Etcd, Response, check, create_tenant, eq,  # noqa: E402
                          expect_status, names, pod_manifest, pods_path, q, run, uniq)

S = {}
MiB = 1024 * 1024


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    S["admin"] = S["api"].admin()
    S["t"] = uniq("faults")
    create_tenant(S["admin"], S["t"])
    # One stored pod, so lists are not trivially empty.
    expect_status(S["admin"].post(pods_path(S["t"]), pod_manifest("existing")), 201, "create pod")


def admin():
    return S["admin"]


def snapshot():
    """What is stored: the pod names the API lists, and every etcd key under /registry/ but the
    watch caches' progress markers (a list writes one when its kind's cache has been quiet: that
    is the list's doing, not the rejected request's)."""
    r = admin().get(pods_path(S["t"]))
    expect_status(r, 200, "list pods")
    return names(r.json), set(k for k in S["etcd"].keys("/registry/") if not k.endswith("/~progress"))


def expect_rejected(what, do, code, reason):
    before = snapshot()
    r = do()
    s = expect_status(r, code, what, reason)
    after = snapshot()
    eq(after[0], before[0], what + ": pods listed after the rejected request")
    new_keys = sorted(after[1] - before[1])
    eq(new_keys, [], what + ": etcd keys written by the rejected request")
    return s


def post_pod(body, content_type="application/json"):
    return lambda: admin().post(pods_path(S["t"]), body, content_type=content_type)


def get(path):
    return lambda: admin().get(path)


def test_malformed_json():
    expect_rejected("truncated JSON", post_pod(b'{"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad"'),
                    400, "BadRequest")
    expect_rejected("JSON that is not an object", post_pod(b'["apiVersion","v1"]'), 400, "BadRequest")
    expect_rejected("empty body", post_pod(b""), 400, "BadRequest")
    expect_rejected("trailing garbage", post_pod(json.dumps(pod_manifest("trail")).encode() + b"}x"),
                    400, "BadRequest")


def raw_post(path, body):
    """POST with Content-Length over a raw TLS socket. The server may answer before reading the
    whole body; a send error is then tolerated and the answer read afterwards."""
    api = S["api"]
    sock = socket.create_connection(("127.0.0.1", api.port), timeout=30)
    if api.tls:
        sock = api.client().ctx.wrap_socket(sock, server_hostname="127.0.0.1")
    head = ("POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\nContent-Length: %d\r\n"
            "Connection: close\r\n\r\n" % (path, api.port, api.admin_token, len(body))).encode()
    send_error = None
    try:
        sock.sendall(head)
        for off in range(0, len(body), 64 * 1024):
            sock.sendall(body[off:off + 64 * 1024])
    except OSError as e:
        send_error = e
    try:
        r = http.client.HTTPResponse(sock, method="POST")
        r.begin()
        return Response(r.status, r.reason, r.getheaders(), r.read())
    except (OSError, http.client.HTTPException) as e:
        raise AssertionError("no HTTP answer to a %d-byte body (send error: %r, read error: %r)"
                             % (len(body), send_error, e))
    finally:
        sock.close()


def test_body_over_3_mib():
    obj = pod_manifest("too-big")
    obj["metadata"]["annotations"] = {"pad": "x" * (3 * MiB + 1024)}
    body = json.dumps(obj).encode()
    check(len(body) > 3 * MiB, "test body is not over 3 MiB")
    expect_rejected("body over 3 MiB", lambda: raw_post(pods_path(S["t"]), body), 413,
                    "RequestEntityTooLarge")
    # The server still works afterwards.
    expect_status(admin().get("/readyz"), 200, "readyz after an oversized body")


def test_kind_or_api_version_not_matching_path():
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-as-pod"}, "data": {"a": "b"}}
    expect_rejected("ConfigMap posted to pods", post_pod(cm), 400, "BadRequest")
    p = pod_manifest("wrong-group")
    p["apiVersion"] = "apps/v1"
    expect_rejected("apiVersion apps/v1 posted to core pods", post_pod(p), 400, "BadRequest")
    d = pod_manifest("pod-as-deploy")
    expect_rejected("Pod posted to deployments",
                    lambda: admin().post("/apis/apps/v1/tenants/%s/namespaces/default/deployments" % S["t"], d),
                    400, "BadRequest")


def test_name_not_dns1123():
    for bad in ("Bad_Name", "a" * 254, "-leading-dash", "dots..twice"):
        s = expect_rejected("pod name %r" % bad[:20], post_pod(pod_manifest(bad)), 422, "Invalid")
        causes = (s.get("details") or {}).get("causes") or []
        check(any(c.get("field") == "metadata.name" for c in causes),
              "422 for name %r has no cause with field metadata.name: %r" % (bad[:20], s))
    expect_rejected("pod with no name", post_pod({"apiVersion": "v1", "kind": "Pod", "metadata": {},
                                                   "spec": {"containers": [{"name": "c", "image": "x"}]}}),
                    422, "Invalid")


def test_tenant_or_namespace_in_body_differs_from_path():
    p = pod_manifest("other-tenant", tenant="someone-else")
    expect_rejected("metadata.tenant differs from the path", post_pod(p), 400, "BadRequest")
    p = pod_manifest("other-ns", namespace="kube-system")
    expect_rejected("metadata.namespace differs from the path", post_pod(p), 400, "BadRequest")


def test_unknown_resource():
    base = "/api/v1/tenants/%s/namespaces/default/widgets" % S["t"]
    expect_rejected("GET unknown resource", get(base), 404, "NotFound")
    expect_rejected("POST unknown resource",
                    lambda: admin().post(base, {"apiVersion": "v1", "kind": "Widget", "metadata": {"name": "w"}}),
                    404, "NotFound")
    expect_rejected("unknown group", get("/apis/nosuch.example.com/v1/tenants/%s/namespaces/default/things"
                                         % S["t"]), 404, "NotFound")


def test_invalid_label_selector():
    for sel in ("env in (prod", "!", "a=" + "v" * 64, "k=v=w", "in in in"):
        expect_rejected("labelSelector %r" % sel, get(pods_path(S["t"]) + q(labelSelector=sel)),
                        400, "BadRequest")


def test_unknown_field_selector():
    expect_rejected("fieldSelector on an unsupported field",
                    get(pods_path(S["t"]) + q(fieldSelector="spec.bogus=1")), 400, "BadRequest")
    expect_rejected("fieldSelector without operator",
                    get(pods_path(S["t"]) + q(fieldSelector="metadata.name")), 400, "BadRequest")


def test_forged_continue_token():
    forged = [
        "not-a-token",
        base64.b64encode(b'{"v":"meta.k8s.io/v1","rv":1,"start":"/../../other/default/x"}').decode(),
        base64.urlsafe_b64encode(b'{"v":"meta.k8s.io/v1","rv":-5,"start":"x"}').decode(),
        base64.b64encode(b"\xff\xfe\x00garbage").decode(),
    ]
    for tok in forged:
        expect_rejected("continue=%r" % tok[:24], get(pods_path(S["t"]) + q(limit=1, **{"continue": tok})),
                        400, "BadRequest")


def test_deeply_nested_json():
    depth = 10000
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep"},"spec":{"x":'
            + "[" * depth + "]" * depth + "}}").encode()
    expect_rejected("JSON nested %d deep" % depth, post_pod(body), 400, "BadRequest")
    body = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"deep2","annotations":'
            + '{"a":' * 3000 + '"x"' + "}" * 3000 + "}}").encode()
    expect_rejected("objects nested 3000 deep", post_pod(body), 400, "BadRequest")


def test_etcd_unreachable_gives_503_then_recovers():
    etcd = S["etcd"]
    etcd.stop()
    try:
        start = time.monotonic()
        r = admin().post(pods_path(S["t"]), pod_manifest("while-etcd-down"), timeout=60)
        took = time.monotonic() - start
        expect_status(r, 503, "create while etcd is down", "ServiceUnavailable")
        ra = r.header("Retry-After")
        check(ra is not None and ra.strip().isdigit() and int(ra) > 0,
              "503 without a positive integer Retry-After header: %r" % r.headers)
        check(took < 30, "503 took %.1fs" % took)
    finally:
        etcd.start()
    deadline = time.monotonic() + 30
    r = None
    while time.monotonic() < deadline:
        r = admin().post(pods_path(S["t"]), pod_manifest("after-etcd-back"))
        if r.status == 201:
            break
        check(r.status == 503, "while etcd comes back: expected 201 or 503, got %r" % r)
        time.sleep(0.5)
    expect_status(r, 201, "create after etcd came back")
    check("after-etcd-back" in names(admin().get(pods_path(S["t"])).json),
          "pod created after recovery is not listed")
    expect_status(admin().get("/readyz"), 200, "readyz after etcd came back")


def test_compaction_gives_410_and_relist_works():
    name = uniq("cmp")
    r = admin().post(pods_path(S["t"]), pod_manifest(name))
    expect_status(r, 201, "create pod")
    old_rv = r.json["metadata"]["resourceVersion"]
    path = pods_path(S["t"], name=name)
    for i in range(3):
        expect_status(admin().patch(path, {"metadata": {"labels": {"i": str(i)}}}), 200, "patch %d" % i)
    S["etcd"].compact()
    # A restarted server's watch cache starts after the compaction, so old_rv is gone from
    # both etcd and the cache.
    S["api"].restart()
    w = admin().watch(pods_path(S["t"]) + q(watch="true", resourceVersion=old_rv, timeoutSeconds=10))
    if w.status != 200:
        raise AssertionError("watch from a compacted resourceVersion: expected HTTP 200 with an ERROR "
                             "event, got %r" % w.response)
    ev = w.until(lambda e: True, 15)
    w.close()
    check(ev is not None, "no event on a watch from compacted resourceVersion %s" % old_rv)
    eq(ev.get("type"), "ERROR", "first event of a watch from a compacted resourceVersion")
    st = ev.get("object") or {}
    eq((st.get("kind"), st.get("code")), ("Status", 410), "ERROR event object kind and code")
    check(st.get("reason") in ("Expired", "Gone"), "ERROR event reason: %r" % st)

    lst = admin().get(pods_path(S["t"]))
    expect_status(lst, 200, "relist after 410")
    check(name in names(lst.json), "relist lacks pod %s" % name)
    rv = lst.json["metadata"]["resourceVersion"]
    w = admin().watch(pods_path(S["t"]) + q(watch="true", resourceVersion=rv,
                                            fieldSelector="metadata.name=" + name, timeoutSeconds=15))
    if w.status != 200:
        raise AssertionError("watch from the relist's resourceVersion: %r" % w.response)
    time.sleep(0.5)
    expect_status(admin().patch(path, {"metadata": {"labels": {"i": "after"}}}), 200, "patch after relist")
    ev = w.until(lambda e: e.get("type") == "MODIFIED", 10)
    w.close()
    check(ev is not None, "no MODIFIED event after relist; events: %r" % w.events)
    eq([e.get("type") for e in w.events], ["MODIFIED"], "events of the watch from the relist's RV")
    eq(ev["object"]["metadata"]["labels"], {"i": "after"}, "labels in the MODIFIED event")


def test_three_member_etcd_survives_losing_one():
    cluster = Etcd(members=3, name="etcd3").start()
    api = ApiServer(cluster, partition_id="tp-ha").start()
    adm = api.admin()
    t = uniq("ha")
    create_tenant(adm, t)
    expect_status(adm.post(pods_path(t), pod_manifest("before")), 201, "create before the kill")
    cluster.kill(0)   # the first endpoint the server was given
    # Leader election can take a moment; only 503/504 are acceptable meanwhile.
    deadline = time.monotonic() + 15
    r = None
    while time.monotonic() < deadline:
        r = adm.post(pods_path(t), pod_manifest("after-0"), timeout=20)
        if r.status == 201:
            break
        check(r.status in (503, 504), "create after losing a member: expected 201 (or 503/504 during "
                                      "leader election), got %r" % r)
        time.sleep(0.5)
    expect_status(r, 201, "create after losing one of three members")
    for i in range(1, 6):
        expect_status(adm.post(pods_path(t), pod_manifest("after-%d" % i)), 201, "create after-%d" % i)
    lst = adm.get(pods_path(t))
    expect_status(lst, 200, "list after losing a member")
    eq(names(lst.json), sorted(["before"] + ["after-%d" % i for i in range(6)]), "pods listed")
    expect_status(adm.get(pods_path(t, name="after-3")), 200, "get after losing a member")
    api.stop()
    cluster.stop()


if __name__ == "__main__":
    run(globals())
