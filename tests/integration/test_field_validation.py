#!/usr/bin/python3
"""Server-side field validation (fieldValidation=Strict|Warn|Ignore) of ursa-tp-apiserver, with
kubectl 1.33 and raw HTTP: unknown fields are never stored; Strict refuses them (400, Kubernetes'
"strict decoding error"), Warn (the default) says so in a Warning header, Ignore says nothing;
duplicate JSON keys likewise; server-side apply refuses unknown fields as Kubernetes does.
Full real manifests (tests/unit/schema/manifests) must pass Strict, and so must every object as
the controllers left it (read back and PUT with Strict): a field a type table lacks fails here
with the list of what was refused.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_field_validation.py"""
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as H  # noqa: E402
from ursa_harness import check, eq, expect_status, make_tmpdir, q, wait_until  # noqa: E402

KUBECTL_DIR = "/usr/lib/google-cloud-sdk/bin"
MANIFESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "schema", "manifests")
T = "acme"
S = {}

PATHS = {
    "Deployment": "/apis/apps/v1/tenants/acme/namespaces/default/deployments",
    "StatefulSet": "/apis/apps/v1/tenants/acme/namespaces/default/statefulsets",
    "ReplicaSet": "/apis/apps/v1/tenants/acme/namespaces/default/replicasets",
    "ControllerRevision": "/apis/apps/v1/tenants/acme/namespaces/default/controllerrevisions",
    "Job": "/apis/batch/v1/tenants/acme/namespaces/default/jobs",
    "CronJob": "/apis/batch/v1/tenants/acme/namespaces/default/cronjobs",
    "Service": "/api/v1/tenants/acme/namespaces/default/services",
    "ConfigMap": "/api/v1/tenants/acme/namespaces/default/configmaps",
    "Pod": "/api/v1/tenants/acme/namespaces/default/pods",
    "PersistentVolumeClaim": "/api/v1/tenants/acme/namespaces/default/persistentvolumeclaims",
    "Endpoints": "/api/v1/tenants/acme/namespaces/default/endpoints",
    "Network": "/apis/arktos.futurewei.com/v1/tenants/acme/networks",
}
# The unknown fields this test sends on purpose; any other one the server drops (it logs them) was
# written by a controller and is missing from a type table.
DELIBERATE = {"spec.foo", "spec.template.spec.containers[0].bar", "status.bogus", "bogus"}
DEPLOY = PATHS["Deployment"]


def setup():
    H.require_binary(os.path.join(KUBECTL_DIR, "kubectl.1.33"), "kubectl 1.33")
    H.KUBECTL = os.path.join(KUBECTL_DIR, "kubectl.1.33")
    os.environ["PATH"] = KUBECTL_DIR + ":" + os.environ.get("PATH", "")
    S.update(H.start_tp_with_controllers(tenant=T))
    S["dir"] = make_tmpdir("fv")


def admin():
    return S["admin"]


def kc(*args):
    return H.kubectl(list(args), S["kc"])


def pod_specs(m):
    """The pod specs of a manifest: a Pod's own, a template's, a CronJob's job template's."""
    spec = m.get("spec") or {}
    if m["kind"] == "Pod":
        return [spec]
    if m["kind"] == "CronJob":
        return [spec["jobTemplate"]["spec"]["template"]["spec"]]
    return [spec["template"]["spec"]] if "template" in spec else []


def tenant_safe(m):
    """The full manifests use a hostPath volume, a hostPort and an unsafe sysctl, which tenant
    isolation refuses to every tenant but system (tests/integration/test_pod_security.py): here,
    as tenant acme, an emptyDir, no hostPort and a safe sysctl take their place."""
    for ps in pod_specs(m):
        for v in ps.get("volumes", []):
            if "hostPath" in v:
                del v["hostPath"]
                v["emptyDir"] = {}
        for c in ps.get("containers", []) + ps.get("initContainers", []):
            for port in c.get("ports", []):
                port.pop("hostPort", None)
                port.pop("hostIP", None)
        sc = ps.get("securityContext") or {}
        if "sysctls" in sc:
            sc["sysctls"] = [{"name": "kernel.shm_rmid_forced", "value": "0"}]


def manifest(name):
    with open(os.path.join(MANIFESTS, name)) as f:
        m = json.load(f)
    tenant_safe(m)
    if m["kind"] == "Job":
        # backoffLimitPerIndex (and FailIndex) are refused by ursa's job validation as not implemented
        for f in ("backoffLimitPerIndex", "maxFailedIndexes"):
            m["spec"].pop(f)
        m["spec"]["podFailurePolicy"]["rules"] = [r for r in m["spec"]["podFailurePolicy"]["rules"]
                                                  if r["action"] != "FailIndex"]
    return m


def write(name, obj):
    path = os.path.join(S["dir"], name)
    with open(path, "w") as f:
        json.dump(obj, f)
    return path


def bad_deployment(name):
    """A Deployment with two unknown fields: spec.foo and spec.template.spec.containers[0].bar."""
    d = H.deployment_manifest(name)
    d["spec"]["foo"] = 1
    d["spec"]["template"]["spec"]["containers"][0]["bar"] = "x"
    return d


def get(kind, name):
    r = admin().get(PATHS[kind] + "/" + name)
    expect_status(r, 200, "get %s %s" % (kind, name))
    return r.json


def warnings(resp):
    return resp.header("Warning") or ""


# kubectl ---------------------------------------------------------------------------------------
def test_kubectl_create_strict_refuses_unknown_fields():
    path = write("strict.json", bad_deployment("strict"))
    rc, out, err = kc("create", "-f", path)
    check(rc != 0, "kubectl create of a manifest with unknown fields succeeded: %s %s" % (out, err))
    want = ('Error from server (BadRequest): error when creating "%s": Deployment in version "v1" cannot be '
            'handled as a Deployment: strict decoding error: unknown field "spec.foo", unknown field '
            '"spec.template.spec.containers[0].bar"' % path)
    check(want in err, "kubectl's error:\n%s\nwant:\n%s" % (err, want))
    eq(admin().get(DEPLOY + "/strict").status, 404, "nothing created")


def test_kubectl_validate_warn_drops_and_warns():
    path = write("warn.json", bad_deployment("warn"))
    rc, out, err = kc("create", "--validate=warn", "-f", path)
    check(rc == 0, "kubectl create --validate=warn: rc=%s out=%s err=%s" % (rc, out, err))
    check('Warning: unknown field "spec.foo"' in err and
          'Warning: unknown field "spec.template.spec.containers[0].bar"' in err,
          "kubectl shows both warnings: %r" % err)
    d = get("Deployment", "warn")
    check("foo" not in d["spec"], "spec.foo was stored: %r" % d["spec"])
    check("bar" not in d["spec"]["template"]["spec"]["containers"][0], "containers[0].bar was stored")


def test_kubectl_validate_false_drops_silently():
    path = write("ignore.json", bad_deployment("ignore"))
    rc, out, err = kc("create", "--validate=false", "-f", path)
    check(rc == 0, "kubectl create --validate=false: rc=%s out=%s err=%s" % (rc, out, err))
    check("unknown field" not in err, "no warning with --validate=false: %r" % err)
    check("foo" not in get("Deployment", "ignore")["spec"], "spec.foo was stored")


def test_kubectl_server_side_apply():
    d = H.deployment_manifest("ssa")
    d["metadata"]["namespace"] = "default"
    d["spec"]["foo"] = 1
    rc, out, err = kc("apply", "--server-side", "-f", write("ssa.json", d))
    check(rc != 0, "server-side apply with an unknown field succeeded: %s" % out)
    want = ("failed to create typed patch object (default/ssa; apps/v1, Kind=Deployment): "
            ".spec.foo: field not declared in schema")
    check(want in err, "kubectl's error: %r, want %r" % (err, want))
    eq(admin().get(DEPLOY + "/ssa").status, 404, "nothing created")
    del d["spec"]["foo"]
    rc, out, err = kc("apply", "--server-side", "-f", write("ssa.json", d))
    check(rc == 0 and "serverside-applied" in out, "server-side apply: rc=%s out=%s err=%s" % (rc, out, err))


def test_kubectl_apply_full_manifests_strict():
    """Every full manifest through kubectl create (Strict): refused fields are table gaps."""
    for f in ("configmap.json", "service.json", "deployment.json", "statefulset.json", "job.json", "cronjob.json"):
        m = manifest(f)
        m["metadata"]["name"] = "kc-" + m["metadata"]["name"]
        if m["kind"] == "Job":
            m["spec"]["template"]["metadata"]["labels"] = {"app": "kc-pi"}
        rc, out, err = kc("create", "-f", write("kc-" + f, m))
        check(rc == 0, "kubectl create -f %s (Strict): rc=%s\n%s\n%s" % (f, rc, out, err))
        check("Warning" not in err, "warnings for %s: %s" % (f, err))


# raw HTTP --------------------------------------------------------------------------------------
def test_strict_duplicate_fields():
    body = ('{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"dup"},'
            '"spec":{"replicas":1,"replicas":3,"selector":{"matchLabels":{"app":"dup"}},"foo":1,'
            '"template":{"metadata":{"labels":{"app":"dup"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}')
    r = admin().post(DEPLOY + q(fieldValidation="Strict"), body)
    expect_status(r, 400, "Strict with a duplicate and an unknown field", "BadRequest")
    eq(r.json["message"], 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
       'duplicate field "spec.replicas", unknown field "spec.foo"', "message")
    r = admin().post(DEPLOY, body)  # Warn by default: the last value wins
    expect_status(r, 201, "Warn with a duplicate")
    w = warnings(r)
    check('299 - "duplicate field \\"spec.replicas\\""' in w and '299 - "unknown field \\"spec.foo\\""' in w,
          "Warning header: %r" % w)
    eq(r.json["spec"]["replicas"], 3, "the last of the duplicates")
    check("foo" not in r.json["spec"], "spec.foo returned")
    check("foo" not in get("Deployment", "dup")["spec"], "spec.foo stored")
    body2 = body.replace('"name":"dup"', '"name":"dup2"')
    r = admin().post(DEPLOY + q(fieldValidation="Ignore"), body2)
    expect_status(r, 201, "Ignore with a duplicate")
    check(not warnings(r), "no warnings with Ignore: %r" % warnings(r))
    check("foo" not in r.json["spec"], "spec.foo returned with Ignore")
    r = admin().post(DEPLOY + q(fieldValidation="Strict"), body2.replace('"replicas":1,', ''))
    expect_status(r, 400, "Strict with only an unknown field", "BadRequest")
    # outside create/update/patch nothing changes: a duplicate key stays a 400
    r = admin().request("DELETE", DEPLOY + "/dup2", '{"kind":"DeleteOptions","kind":"DeleteOptions"}')
    expect_status(r, 400, "DeleteOptions with a duplicate key")


def test_invalid_parameter():
    r = admin().post(DEPLOY + q(fieldValidation="strict"), H.deployment_manifest("badparam"))
    expect_status(r, 422, "fieldValidation=strict (wrong case)", "Invalid")
    eq(r.json["message"], 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "strict": '
       'supported values: "", "Ignore", "Strict", "Warn"', "message")
    eq(r.json["details"]["kind"], "CreateOptions", "details.kind")
    eq(r.json["details"]["group"], "meta.k8s.io", "details.group")
    eq(r.json["details"]["causes"][0]["field"], "fieldValidation", "cause field")
    r = admin().patch(DEPLOY + "/warn" + q(fieldValidation="x"), {})
    expect_status(r, 422, "PATCH with fieldValidation=x", "Invalid")
    check(r.json["message"].startswith("PatchOptions.meta.k8s.io"), r.json["message"])
    r = admin().post(DEPLOY + q(fieldValidation=""), H.deployment_manifest("emptyparam"))
    expect_status(r, 201, "an empty fieldValidation is Warn")


def test_update_and_patches():
    d = get("Deployment", "warn")
    d["spec"]["foo"] = 1
    r = admin().put(DEPLOY + "/warn" + q(fieldValidation="Strict"), d)
    expect_status(r, 400, "PUT Strict", "BadRequest")
    eq(r.json["message"], 'Deployment in version "v1" cannot be handled as a Deployment: strict decoding error: '
       'unknown field "spec.foo"', "PUT message")
    r = admin().put(DEPLOY + "/warn", d)
    expect_status(r, 200, "PUT Warn")
    check('unknown field \\"spec.foo\\"' in warnings(r), "PUT warning: %r" % warnings(r))
    check("foo" not in get("Deployment", "warn")["spec"], "PUT stored spec.foo")
    for ct, body in (("application/merge-patch+json", {"spec": {"foo": 1}}),
                     ("application/strategic-merge-patch+json", {"spec": {"foo": 1}}),
                     ("application/json-patch+json", [{"op": "add", "path": "/spec/foo", "value": 1}])):
        r = admin().patch(DEPLOY + "/warn" + q(fieldValidation="Strict"), body, content_type=ct)
        expect_status(r, 400, "PATCH %s Strict" % ct, "BadRequest")
        eq(r.json["message"], 'strict decoding error: unknown field "spec.foo"', "PATCH %s message" % ct)
        r = admin().patch(DEPLOY + "/warn", body, content_type=ct)
        expect_status(r, 200, "PATCH %s Warn" % ct)
        check('unknown field \\"spec.foo\\"' in warnings(r), "PATCH %s warning: %r" % (ct, warnings(r)))
        check("foo" not in r.json["spec"], "PATCH %s returned spec.foo" % ct)
    r = admin().patch(DEPLOY + "/warn" + q(fieldValidation="Strict"), '{"spec":{"paused":false,"paused":true}}',
                      content_type="application/merge-patch+json")
    expect_status(r, 400, "merge patch with a duplicate key, Strict", "BadRequest")
    eq(r.json["message"], 'strict decoding error: duplicate field "spec.paused"', "duplicate in a patch")
    r = admin().patch(DEPLOY + "/warn", {"spec": {"paused": True}}, content_type="application/merge-patch+json")
    expect_status(r, 200, "a valid merge patch")
    check(not warnings(r), "no warnings for a valid patch: %r" % warnings(r))
    # apply (server-side) refuses unknown fields whatever the mode, with a bare 500 as Kubernetes
    apply = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "warn", "namespace": "default"},
             "spec": {"foo": 1}}
    r = admin().patch(DEPLOY + "/warn" + q(fieldManager="t", fieldValidation="Ignore"), json.dumps(apply),
                      content_type="application/apply-patch+yaml")
    eq(r.status, 500, "apply with an unknown field: %r" % r)
    eq(r.json["message"], "failed to create typed patch object (default/warn; apps/v1, Kind=Deployment): "
       ".spec.foo: field not declared in schema", "apply message")


def test_status_and_scale_subresources():
    d = get("Deployment", "warn")
    d.setdefault("status", {})["bogus"] = 1
    r = admin().put(DEPLOY + "/warn/status" + q(fieldValidation="Strict"), d)
    expect_status(r, 400, "status PUT Strict", "BadRequest")
    check('unknown field "status.bogus"' in r.json["message"], r.json["message"])
    r = admin().patch(DEPLOY + "/warn/status" + q(fieldValidation="Strict"), {"status": {"bogus": 1}})
    expect_status(r, 400, "status PATCH Strict", "BadRequest")
    r = admin().patch(DEPLOY + "/warn/status", {"status": {"bogus": 1}})
    expect_status(r, 200, "status PATCH Warn")
    check('unknown field \\"status.bogus\\"' in warnings(r), "status warning: %r" % warnings(r))
    check("bogus" not in (get("Deployment", "warn").get("status") or {}), "status.bogus stored")
    r = admin().put(DEPLOY + "/warn/scale" + q(fieldValidation="Strict"),
                    '{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"warn"},'
                    '"spec":{"replicas":1,"replicas":2}}')
    expect_status(r, 400, "scale PUT Strict with a duplicate", "BadRequest")
    check('duplicate field "spec.replicas"' in r.json["message"], r.json["message"])


def test_yaml_body():
    body = ("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yamlcm\ndata:\n  a: '1'\nbogus: true\n")
    r = admin().post(PATHS["ConfigMap"] + q(fieldValidation="Strict"), body, content_type="application/yaml")
    expect_status(r, 400, "YAML body Strict", "BadRequest")
    eq(r.json["message"], 'ConfigMap in version "v1" cannot be handled as a ConfigMap: strict decoding error: '
       'unknown field "bogus"', "YAML message")
    r = admin().post(PATHS["ConfigMap"], body, content_type="application/yaml")
    expect_status(r, 201, "YAML body Warn")
    eq(r.json["data"], {"a": "1"}, "YAML data")
    check("bogus" not in r.json, "bogus returned")


def test_full_manifests_strict_http():
    for f in ("configmap.json", "service.json", "deployment.json", "statefulset.json", "job.json", "cronjob.json",
              "pod.json"):
        m = manifest(f)
        r = admin().post(PATHS[m["kind"]] + q(fieldValidation="Strict"), m)
        check(r.status == 201, "Strict create of the full %s manifest %s refused: %r" % (m["kind"], f, r))


def test_stored_objects_pass_strict():
    """What the controllers made and wrote (statuses, pods, replica sets, revisions, claims) read back
    and PUT unchanged with Strict: an unknown field here means a type table lacks it."""
    wait_until(lambda: (get("Deployment", "web").get("status") or {}).get("observedGeneration"), 30,
               "the deployment controller writes the full deployment's status")
    wait_until(lambda: (get("StatefulSet", "db").get("status") or {}).get("observedGeneration") is not None, 30,
               "the statefulset controller writes a status")
    wait_until(lambda: (get("Job", "pi").get("status") or {}).get("startTime"), 30, "the job controller starts pi")
    time.sleep(1)
    refused = []
    seen = 0
    for kind, path in PATHS.items():
        r = admin().get(path)
        expect_status(r, 200, "list %s" % kind)
        for o in r.json.get("items") or []:
            o["apiVersion"] = r.json["apiVersion"]
            o["kind"] = kind
            name = o["metadata"]["name"]
            sub = "/status" if kind in ("Deployment", "StatefulSet", "Job", "CronJob", "Pod", "ReplicaSet") else ""
            for s in ("", sub) if sub else ("",):
                for _ in range(5):
                    cur = admin().get(path + "/" + name)
                    if cur.status != 200:
                        break
                    w = admin().put(path + "/" + name + s + q(fieldValidation="Strict"), cur.json)
                    if w.status != 409:
                        break
                if cur.status != 200:
                    continue
                seen += 1
                if w.status == 400:
                    refused.append("%s %s%s: %s" % (kind, name, s, w.json.get("message")))
                elif w.status not in (200, 201, 422):
                    refused.append("%s %s%s: unexpected %r" % (kind, name, s, w))
    check(seen >= 20, "only %d objects round-tripped" % seen)
    check(not refused, "stored objects refused under Strict (fields missing from the tables):\n  " +
          "\n  ".join(refused))


def test_no_controller_write_pruned():
    """The server logs what it drops; only this test's own mistakes may be there."""
    dropped = set()
    with open(S["api"].log) as f:
        for line in f:
            m = re.search(r'msg="unknown fields dropped" kind=(\S+) fields="([^"]*)" user="([^"]*)"', line)
            if m:
                for p in m.group(2).split(","):
                    if p not in DELIBERATE:
                        dropped.add("%s %s (by %s)" % (m.group(1), p, m.group(3)))
    check(not dropped, "fields dropped from writes this test did not make (missing from the tables):\n  " +
          "\n  ".join(sorted(dropped)))


if __name__ == "__main__":
    H.run(globals())
