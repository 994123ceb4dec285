#!/usr/bin/python3
"""CustomResourceDefinitions per tenant, as a new user meets them: stock kubectl and Debian's
python3-kubernetes through HAProxy -> gateway -> tenant partition, in a local-up region of its own
(tests/lib/ursa_local.py; process runtime: no container is needed here).

1. alice (tenant acme) applies the CronTab CRD of the Kubernetes documentation (with printer
   columns, a short name, the `all` category, status and scale subresources, two versions);
   `kubectl get crd` lists it and it becomes Established.
2. A CronTab from YAML: `kubectl get crontabs` prints the printer columns; the schema's default
   is filled in; `kubectl get all` and `kubectl get ct` find it; `kubectl explain crontab.spec`
   prints the schema's fields.
3. Bad custom resources: a value the schema forbids is refused with the field's path (422); an
   unknown field is pruned (and refused under --validate=strict); a version the CRD does not serve
   is 404; a strategic merge patch is 415.
4. `kubectl get crontabs -w` sees an edit; `kubectl patch --subresource=status` and
   `kubectl scale` work; an object written through v1beta1 is stored and read back as v1.
   Field selectors on the CRD's selectableFields, label selectors, server-side apply and
   deletecollection.
5. Bad CRDs: a non-structural schema, an upper-case plural, a group without a dot, a clashing
   short name: 422 with causes. A CRD whose kind another CRD of the group has is stored but
   reported (NamesAccepted=False) and not served.
6. A second tenant (bob, zeta) does not see acme's CRD in `kubectl api-resources`, and defines
   crontabs.stable.example.com its own way (cluster scoped, another schema) without touching acme's.
7. python3-kubernetes' CustomObjectsApi creates, lists, watches and patches CronTabs.
8. A CRD of the system tenant serves every tenant.
9. `kubectl delete crd` removes the CRD's custom resources, then the CRD.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_crds.py
The steps build on each other and run in file order."""

import json
import os
import select
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_local as L  # noqa: E402

S = {}

CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    shortNames: [ct]
    categories: [all]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - {name: Spec, type: string, description: The cron spec defining the interval a CronJob is run, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, description: The number of jobs launched by the CronJob, jsonPath: .spec.replicas}
    - {name: Age, type: date, jsonPath: .metadata.creationTimestamp}
    selectableFields:
    - {jsonPath: .spec.image}
    schema:
      openAPIV3Schema:
        type: object
        description: A CronTab runs an image on a cron schedule.
        properties:
          spec:
            type: object
            description: What to run and when.
            required: [cronSpec]
            properties:
              cronSpec:
                type: string
                description: The schedule, in cron format.
                pattern: '^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$'
              image:
                type: string
                description: The image to run.
              replicas:
                type: integer
                description: How many copies run.
                minimum: 1
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              replicas: {type: integer}
              lastRun: {type: string}
  - name: v1beta1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            x-kubernetes-preserve-unknown-fields: true
          status:
            type: object
            x-kubernetes-preserve-unknown-fields: true
"""

CT = """apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
"""

# zeta's own crontabs.stable.example.com: cluster scoped, another schema
ZETA_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Cluster
  names: {plural: crontabs, singular: crontab, kind: CronTab}
  versions:
  - name: v2
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              every: {type: string, enum: [hour, day]}
"""


def kubectl(args, kubeconfig=None, timeout=60, input_text=None):
    """The kubectl on PATH -> (rc, stdout, stderr)."""
    full = ["kubectl", "--kubeconfig", kubeconfig or S["alice"], "--cache-dir", os.path.join(S["tmp"], "kcache")]
    return h.run_cmd(full + list(args), timeout, input_text)


def ok(args, **kw):
    rc, out, err = kubectl(args, **kw)
    h.check(rc == 0, "kubectl %s: rc %d\n%s%s" % (" ".join(args), rc, out, err))
    return out


def fails(args, **kw):
    rc, out, err = kubectl(args, **kw)
    h.check(rc != 0, "kubectl %s should fail: %s%s" % (" ".join(args), out, err))
    return err


def setup():
    S["tmp"] = h.make_tmpdir("crds")
    R = S["region"] = L.LocalRegion(S["tmp"], runtime="process")
    R.up()
    admin = S["admin"] = R.admin_kubeconfig()
    for t in ("acme", "zeta"):
        ok(["create", "-f", "-"], kubeconfig=admin, input_text="apiVersion: v1\nkind: Tenant\nmetadata:\n  name: %s\n" % t)
    S["alice"] = R.kubeconfig("acme", "alice")
    S["bob"] = R.kubeconfig("zeta", "bob")
    h.wait_until(lambda: kubectl(["get", "namespace", "default"])[0] == 0, 30, "acme's default namespace")


def teardown():
    if "region" in S:
        S["region"].down()


def test_apply_crd():
    ok(["apply", "-f", "-"], input_text=CRD)
    ok(["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"], timeout=40)
    out = ok(["get", "crd"])
    h.check("crontabs.stable.example.com" in out and "CREATED AT" in out, "kubectl get crd: %s" % out)
    crd = json.loads(ok(["get", "crd", "crontabs.stable.example.com", "-o", "json"]))
    names = crd["status"]["acceptedNames"]
    h.eq(names["kind"], "CronTab", "acceptedNames.kind")
    h.check("customresourcecleanup.apiextensions.k8s.io" in crd["metadata"].get("finalizers", []),
            "the cleanup finalizer: %s" % crd["metadata"])


def test_custom_resource_from_yaml():
    ok(["apply", "-f", "-"], input_text=CT)
    out = ok(["get", "crontabs"])
    head = out.splitlines()[0].split()
    h.eq(head, ["NAME", "SPEC", "REPLICAS", "AGE"], "printer columns of kubectl get crontabs")
    row = out.splitlines()[1].split()
    h.check(row[0] == "my-new-cron-object" and "*" in row and "1" in row, "the CronTab's row: %s" % out)
    obj = json.loads(ok(["get", "ct", "my-new-cron-object", "-o", "json"]))
    h.eq(obj["spec"].get("replicas"), 1, "the schema's default for spec.replicas")
    h.eq(obj["apiVersion"], "stable.example.com/v1", "apiVersion")
    h.eq(obj["metadata"].get("generation"), 1, "generation")
    out = ok(["get", "all"])
    h.check("crontab.stable.example.com/my-new-cron-object" in out, "kubectl get all lists the CronTab: %s" % out)


def test_explain():
    out = ok(["explain", "crontab.spec"])
    for want in ("cronSpec", "image", "replicas", "What to run and when"):
        h.check(want in out, "kubectl explain crontab.spec shows %r:\n%s" % (want, out))
    out = ok(["explain", "crontab.spec.cronSpec"])
    h.check("The schedule, in cron format" in out, "kubectl explain crontab.spec.cronSpec:\n%s" % out)


def test_bad_custom_resources():
    bad = CT.replace("my-new-cron-object", "too-many") + "  replicas: 20\n"
    err = fails(["apply", "-f", "-"], input_text=bad)
    h.check("spec.replicas" in err and "less than or equal to 10" in err, "a forbidden value names its field: %s" % err)
    bad = CT.replace("my-new-cron-object", "bad-spec").replace("* * * * */5", "every minute")
    err = fails(["apply", "-f", "-"], input_text=bad)
    h.check("spec.cronSpec" in err, "a pattern mismatch names its field: %s" % err)
    unknown = CT.replace("my-new-cron-object", "pruned") + "  colour: blue\n"
    err = fails(["apply", "--validate=strict", "-f", "-"], input_text=unknown)
    h.check("unknown field" in err and "spec.colour" in err, "strict validation names the unknown field: %s" % err)
    ok(["apply", "--validate=false", "-f", "-"], input_text=unknown)
    obj = json.loads(ok(["get", "crontab", "pruned", "-o", "json"]))
    h.check("colour" not in obj["spec"] and obj["spec"]["image"] == "my-awesome-cron-image",
            "the unknown field was pruned, the rest kept: %s" % obj["spec"])
    c = S["region"].admin(6443)
    r = c.get("/apis/stable.example.com/v9/tenants/acme/namespaces/default/crontabs")
    h.eq(r.status, 404, "a version the CRD does not serve: %r" % r)
    err = fails(["patch", "crontab", "pruned", "-p", '{"spec":{"image":"x"}}'])
    h.check("UnsupportedMediaType" in err or "unknown format" in err, "strategic merge patch refused: %s" % err)


def test_watch_sees_edit_and_subresources():
    args = ["kubectl", "--kubeconfig", S["alice"], "--cache-dir", os.path.join(S["tmp"], "kcache2"),
            "get", "crontabs", "-w", "--output-watch-events", "-o", "jsonpath={.type} {.object.spec.image}{\"\\n\"}"]
    w = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = {"seen": ""}

    def read_until(want, seconds):
        deadline = time.time() + seconds
        while time.time() < deadline and want not in out["seen"]:
            r, _, _ = select.select([w.stdout], [], [], 0.2)
            if r:
                chunk = os.read(w.stdout.fileno(), 65536)
                if not chunk:
                    break
                out["seen"] += chunk.decode("utf-8", "replace")
        return want in out["seen"]
    try:
        h.check(read_until("ADDED my-awesome-cron-image", 30), "kubectl get -w listed the CronTabs: %r" % out["seen"])
        ok(["patch", "crontab", "my-new-cron-object", "--type=merge", "-p", '{"spec":{"image":"edited-image"}}'])
        h.check(read_until("MODIFIED edited-image", 15), "kubectl get -w saw the edit: %r" % out["seen"])
    finally:
        w.kill()
        w.wait()
    ok(["patch", "crontab", "my-new-cron-object", "--subresource=status", "--type=merge",
        "-p", '{"status":{"replicas":2,"lastRun":"now"}}'])
    obj = json.loads(ok(["get", "crontab", "my-new-cron-object", "-o", "json"]))
    h.eq(obj["status"], {"replicas": 2, "lastRun": "now"}, "status written through the status subresource")
    h.eq(obj["metadata"]["generation"], 2, "generation counts the spec edit, not the status")
    ok(["apply", "-f", "-"], input_text=CT.replace("my-new-cron-object", "spec-only") + "status: {replicas: 9}\n")
    obj = json.loads(ok(["get", "crontab", "spec-only", "-o", "json"]))
    h.check("status" not in obj or obj["status"].get("replicas") != 9, "the main resource ignores status: %s" % obj)
    ok(["scale", "crontab", "my-new-cron-object", "--replicas=3"])
    obj = json.loads(ok(["get", "crontab", "my-new-cron-object", "-o", "json"]))
    h.eq(obj["spec"]["replicas"], 3, "kubectl scale through the scale subresource")
    # written as v1beta1, stored (and read back as v1) in the storage version
    ok(["apply", "-f", "-"], input_text=CT.replace("stable.example.com/v1", "stable.example.com/v1beta1")
       .replace("my-new-cron-object", "from-beta") + "  anything: goes\n")
    c = S["region"].admin(6443)
    r = c.get("/apis/stable.example.com/v1/tenants/acme/namespaces/default/crontabs/from-beta")
    h.check(r.status == 200 and r.json["apiVersion"] == "stable.example.com/v1", "read as v1: %r" % r)
    r = c.get("/apis/stable.example.com/v1beta1/tenants/acme/namespaces/default/crontabs/from-beta")
    h.check(r.status == 200 and r.json["apiVersion"] == "stable.example.com/v1beta1", "read as v1beta1: %r" % r)


def crd_variant(name, group, plural, kind, extra_names="", schema=None):
    schema = schema or "type: object\n        properties:\n          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}"
    return ("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: %s\n"
            "spec:\n  group: %s\n  scope: Namespaced\n  names: {plural: %s, kind: %s%s}\n  versions:\n"
            "  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        %s\n"
            % (name, group, plural, kind, extra_names, schema))


def test_bad_crds():
    err = fails(["apply", "-f", "-"], input_text=crd_variant("widgets.example.com", "example.com", "widgets", "Widget",
                                                              schema="type: object\n        properties:\n          spec: {}"))
    h.check("spec.versions[0].schema.openAPIV3Schema.properties[spec].type" in err, "a node without a type: %s" % err)
    err = fails(["apply", "-f", "-"], input_text=crd_variant("Widgets.example.com", "example.com", "Widgets", "Widget"))
    h.check("spec.names.plural" in err, "an upper-case plural: %s" % err)
    err = fails(["apply", "-f", "-"], input_text=crd_variant("widgets.example", "example", "widgets", "Widget"))
    h.check("spec.group" in err, "a group without a dot: %s" % err)
    err = fails(["apply", "-f", "-"], input_text=crd_variant("gadgets.example.com", "example.com", "gadgets", "Gadget",
                                                              ", shortNames: [ct]"))
    h.check("spec.names.shortNames" in err and "ct" in err, "a short name another CRD has: %s" % err)
    err = fails(["apply", "-f", "-"], input_text=crd_variant("gadgets.example.com", "example.com", "gadgets", "Gadget",
                                                              ", shortNames: [po]"))
    h.check("spec.names.shortNames" in err, "a built-in kind's short name: %s" % err)


def test_selectors_apply_and_deletecollection():
    for name, image, label in (("sel-a", "img-a", "a"), ("sel-b", "img-b", "b"), ("sel-c", "img-a", "b")):
        ok(["apply", "-f", "-"], input_text=CT.replace("my-new-cron-object", name).replace(
            "my-awesome-cron-image", image).replace("metadata:\n", "metadata:\n  labels: {batch: %s}\n" % label))
    out = ok(["get", "crontabs", "--field-selector", "spec.image=img-a", "-o", "name"])
    h.eq(sorted(out.split()), ["crontab.stable.example.com/sel-a", "crontab.stable.example.com/sel-c"],
         "field selector on a selectable field")
    err = fails(["get", "crontabs", "--field-selector", "spec.cronSpec=x"])
    h.check("field label not supported" in err or "not supported" in err, "a field that is not selectable: %s" % err)
    out = ok(["get", "crontabs", "-l", "batch=b", "-o", "name"])
    h.eq(sorted(out.split()), ["crontab.stable.example.com/sel-b", "crontab.stable.example.com/sel-c"], "label selector")
    ssa = CT.replace("my-new-cron-object", "server-side").replace("my-awesome-cron-image", "ssa-image")
    ok(["apply", "--server-side", "-f", "-"], input_text=ssa)
    ok(["apply", "--server-side", "-f", "-"], input_text=ssa.replace("ssa-image", "ssa-image-2"))
    obj = json.loads(ok(["get", "crontab", "server-side", "-o", "json"]))
    h.eq((obj["spec"]["image"], obj["spec"]["replicas"]), ("ssa-image-2", 1), "server-side apply, defaulted")
    ok(["delete", "crontabs", "-l", "batch"])
    out = ok(["get", "crontabs", "-o", "name"])
    h.check("sel-" not in out and "my-new-cron-object" in out, "deletecollection by label: %s" % out)


def test_name_clash_is_reported():
    clash = crd_variant("cronjobs.stable.example.com", "stable.example.com", "cronjobs", "CronTab")
    ok(["apply", "-f", "-"], input_text=clash)

    def reported():
        crd = json.loads(ok(["get", "crd", "cronjobs.stable.example.com", "-o", "json"]))
        conds = {c["type"]: c for c in crd.get("status", {}).get("conditions", [])}
        return conds.get("NamesAccepted", {}).get("status") == "False" and conds
    conds = h.wait_until(reported, 20, "NamesAccepted=False on the clashing CRD")
    h.check("already in use" in conds["NamesAccepted"]["message"] and conds["Established"]["status"] == "False",
            "the clash is explained and the CRD not established: %s" % conds)
    c = S["region"].admin(6443)
    r = c.get("/apis/stable.example.com/v1/tenants/acme/namespaces/default/cronjobs")
    h.eq(r.status, 404, "a CRD whose names are not accepted is not served: %r" % r)
    ok(["delete", "crd", "cronjobs.stable.example.com"])


def test_second_tenant_defines_its_own():
    out = ok(["api-resources"], kubeconfig=S["bob"])
    h.check("crontabs" not in out, "bob does not see acme's CRD:\n%s" % out)
    ok(["apply", "-f", "-"], kubeconfig=S["bob"], input_text=ZETA_CRD)
    ok(["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"],
       kubeconfig=S["bob"], timeout=40)
    ok(["apply", "-f", "-"], kubeconfig=S["bob"],
       input_text="apiVersion: stable.example.com/v2\nkind: CronTab\nmetadata:\n  name: hourly\nspec:\n  every: hour\n")
    err = fails(["apply", "-f", "-"], kubeconfig=S["bob"],
                input_text="apiVersion: stable.example.com/v2\nkind: CronTab\nmetadata:\n  name: weekly\nspec:\n  every: week\n")
    h.check("spec.every" in err and "Unsupported value" in err, "zeta's schema applies to zeta: %s" % err)
    out = ok(["get", "crontabs"], kubeconfig=S["bob"])
    h.check("hourly" in out and "my-new-cron-object" not in out, "zeta sees its own CronTabs only: %s" % out)
    out = ok(["get", "crontabs"])
    h.check("my-new-cron-object" in out and "hourly" not in out, "acme still sees its own: %s" % out)
    rc, out, err = kubectl(["get", "crontabs.v2.stable.example.com"])
    h.check(rc != 0, "acme has no v2: %s%s" % (out, err))


PY_CLIENT = r"""
import json, sys, threading
from kubernetes import client, config, watch
config.load_kube_config(sys.argv[1])
api = client.CustomObjectsApi()
G, V, P = "stable.example.com", "v1", "crontabs"
body = {"apiVersion": "stable.example.com/v1", "kind": "CronTab", "metadata": {"name": "from-python"},
        "spec": {"cronSpec": "*/5 * * * *", "image": "py-image"}}
created = api.create_namespaced_custom_object(G, V, "default", P, body)
items = api.list_namespaced_custom_object(G, V, "default", P)["items"]
events = []
w = watch.Watch()
def patch_later():
    import time
    time.sleep(1)
    api.patch_namespaced_custom_object(G, V, "default", P, "from-python", {"spec": {"image": "py-patched"}})
threading.Thread(target=patch_later).start()
for ev in w.stream(api.list_namespaced_custom_object, G, V, "default", P,
                   resource_version=created["metadata"]["resourceVersion"], timeout_seconds=10):
    events.append((ev["type"], ev["object"]["metadata"]["name"], ev["object"]["spec"].get("image")))
    if ev["type"] == "MODIFIED":
        w.stop()
got = api.get_namespaced_custom_object(G, V, "default", P, "from-python")
print(json.dumps({"created": created["spec"], "names": sorted(i["metadata"]["name"] for i in items),
                  "events": events, "image": got["spec"]["image"]}))
"""


def test_python_custom_objects_api():
    script = os.path.join(S["tmp"], "custom_objects.py")
    with open(script, "w") as f:
        f.write(PY_CLIENT)
    rc, out, err = h.run_cmd(["/usr/bin/python3", script, S["alice"]], 60)
    h.check(rc == 0, "python3-kubernetes CustomObjectsApi: rc %d\n%s%s" % (rc, out, err[-3000:]))
    r = json.loads(out.strip().splitlines()[-1])
    h.eq(r["created"].get("replicas"), 1, "the default in the created object")
    h.check("from-python" in r["names"] and "my-new-cron-object" in r["names"], "list: %s" % r["names"])
    h.check(["MODIFIED", "from-python", "py-patched"] in [list(e) for e in r["events"]], "watch: %s" % r["events"])
    h.eq(r["image"], "py-patched", "patched")


def test_system_crd_serves_every_tenant():
    sys_crd = crd_variant("backups.ops.example.com", "ops.example.com", "backups", "Backup", ", shortNames: [bk]")
    ok(["apply", "-f", "-"], kubeconfig=S["admin"], input_text=sys_crd)
    ok(["wait", "--for=condition=Established", "crd/backups.ops.example.com", "--timeout=30s"],
       kubeconfig=S["admin"], timeout=40)
    h.wait_until(lambda: "backups" in kubectl(["api-resources"], kubeconfig=S["bob"])[1], 30,
                 "zeta sees the system tenant's CRD in discovery")
    ok(["apply", "-f", "-"], kubeconfig=S["bob"],
       input_text="apiVersion: ops.example.com/v1\nkind: Backup\nmetadata:\n  name: nightly\nspec:\n  at: '02:00'\n")
    out = ok(["get", "bk"], kubeconfig=S["bob"])
    h.check("nightly" in out, "zeta's Backup through the system CRD: %s" % out)
    out = ok(["get", "backups"])
    h.check("nightly" not in out, "acme does not see zeta's Backup: %s" % out)


def test_delete_crd_removes_its_resources():
    c = S["region"].admin(6443)
    ok(["delete", "crd", "crontabs.stable.example.com", "--timeout=60s"], timeout=70)
    r = c.get("/apis/apiextensions.k8s.io/v1/tenants/acme/customresourcedefinitions/crontabs.stable.example.com")
    h.eq(r.status, 404, "the CRD is gone: %r" % r)
    rc, out, err = kubectl(["get", "crontabs"])
    h.check(rc != 0, "acme's crontabs are no longer served: %s%s" % (out, err))
    # re-created, the old objects do not come back
    ok(["apply", "-f", "-"], input_text=CRD)
    ok(["wait", "--for=condition=Established", "crd/crontabs.stable.example.com", "--timeout=30s"], timeout=40)
    out = ok(["get", "crontabs", "-o", "name"])
    h.eq(out.strip(), "", "no CronTab survived the CRD's deletion")
    out = ok(["get", "crontabs"], kubeconfig=S["bob"])
    h.check("hourly" in out, "zeta's own CronTabs are untouched: %s" % out)


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=300)
