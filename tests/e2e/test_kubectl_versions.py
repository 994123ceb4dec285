#!/usr/bin/python3
"""Every kubectl since 1.27 against ursa-tp-apiserver: kubectl 1.27, 1.28, 1.30 and 1.33 (bundled
next to the dispatcher on PATH) each run the same flow over the everyday kinds as a tenant user:
create -f, apply -f twice (the second unchanged), apply --server-side, get -o wide, explain of
the kind and of a nested field, and delete. Each version keeps its own discovery and OpenAPI cache,
so each fetches the documents itself (OpenAPI v2 in protobuf for 1.27 and 1.28, v3 later).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/e2e/test_kubectl_versions.py"""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
from ursa_harness import ApiServer, Etcd, check, create_tenant, run, run_cmd, uniq  # noqa: E402

S = {}
VERSIONS = ("1.27", "1.28", "1.30", "1.33")

# kind, resource for get/explain, manifest, a nested field for explain and a word its output holds
KINDS = [
    ("Deployment", "deployments", """apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 0}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        ports:
        - {name: http, containerPort: 80}
        env:
        - {name: MODE, value: prod}
        resources:
          requests: {cpu: 100m, memory: 64Mi}
        readinessProbe:
          httpGet: {path: /, port: http}
""", "deployment.spec.strategy", "rollingUpdate"),
    ("StatefulSet", "statefulsets", """apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: busybox
        command: ["sleep", "3600"]
        volumeMounts:
        - {name: data, mountPath: /data}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
""", "statefulset.spec.volumeClaimTemplates", "spec"),
    ("Job", "jobs", """apiVersion: batch/v1
kind: Job
metadata:
  name: once
spec:
  backoffLimit: 2
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
        command: ["sh", "-c", "echo done"]
""", "job.spec.backoffLimit", "integer"),
    ("CronJob", "cronjobs", """apiVersion: batch/v1
kind: CronJob
metadata:
  name: tick
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - name: c
            image: busybox
            command: ["date"]
""", "cronjob.spec.concurrencyPolicy", "string"),
    ("Service", "services", """apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
""", "service.spec.ports", "targetPort"),
    ("ConfigMap", "configmaps", """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  mode: prod
""", "configmap.data", "string"),
    ("PodDisruptionBudget", "poddisruptionbudgets", """apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
""", "pdb.spec.minAvailable", "minAvailable"),
]


def bundled_kubectl(version):
    d = os.path.dirname(os.path.realpath(shutil.which("kubectl") or "/usr/bin/kubectl"))
    path = os.path.join(d, "kubectl." + version)
    check(os.access(path, os.X_OK), "no bundled %s" % path)
    return path


def setup():
    S["etcd"] = Etcd().start()
    S["api"] = ApiServer(S["etcd"]).start()
    admin = S["api"].admin()
    S["tenant"] = uniq("kv")
    create_tenant(admin, S["tenant"])
    S["kc"] = S["api"].kubeconfig(S["tenant"], "alice")
    S["tmp"] = tempfile.mkdtemp(prefix="ursa-kv-", dir=S["api"].dir)


def write(name, text):
    path = os.path.join(S["tmp"], name)
    with open(path, "w") as f:
        f.write(text)
    return path


def flow(version):
    exe = bundled_kubectl(version)
    cache = os.path.join(S["tmp"], "cache-" + version)
    ns = "v" + version.replace(".", "-")

    def k(args, ok=True):
        rc, out, err = run_cmd([exe, "--kubeconfig", S["kc"], "--cache-dir", cache, "-n", ns] + args, timeout=90)
        if ok:
            check(rc == 0, "kubectl %s %s: rc %d\n%s\n%s" % (version, " ".join(args), rc, out, err))
        return rc, out, err

    k(["create", "namespace", ns])
    for kind, resource, manifest, field, word in KINDS:
        path = write("%s-%s.yaml" % (kind, version), manifest)
        _, out, _ = k(["create", "-f", path])
        check("created" in out, "kubectl %s create %s: %s" % (version, kind, out))
        _, out, err = k(["apply", "-f", path])
        check("configured" in out or "unchanged" in out, "kubectl %s apply %s: %s %s" % (version, kind, out, err))
        _, out, _ = k(["apply", "-f", path])
        # A StatefulSet's claim templates are an atomic list the server defaults (volumeMode), so
        # kubectl patches them again each time, as against Kubernetes (kubernetes#66450); the
        # patch must still be accepted (volumeClaimTemplates are immutable).
        # kubectl before 1.30 builds the patch from its compiled-in types, where a budget's
        # selector has patchStrategy replace: it always sends the selector again.
        again = "configured" if kind == "StatefulSet" or kind == "PodDisruptionBudget" and version < "1.30" \
            else "unchanged"
        check(again in out, "kubectl %s second apply %s: %s" % (version, kind, out))
        _, out, _ = k(["apply", "--server-side", "--force-conflicts", "-f", path])
        check("serverside-applied" in out, "kubectl %s apply --server-side %s: %s" % (version, kind, out))
        _, out, _ = k(["get", resource, "-o", "wide"])
        check(out.startswith("NAME") and len(out.strip().splitlines()) == 2,
              "kubectl %s get %s -o wide: %s" % (version, resource, out))
        _, out, _ = k(["explain", resource])
        check("KIND:" in out and kind in out and "spec" in out or kind == "ConfigMap" and "data" in out,
              "kubectl %s explain %s: %s" % (version, resource, out))
        _, out, _ = k(["explain", field])
        check(word in out, "kubectl %s explain %s lacks %r: %s" % (version, field, word, out))
        _, out, _ = k(["delete", "-f", path])
        check("deleted" in out, "kubectl %s delete %s: %s" % (version, kind, out))


def test_kubectl_1_27():
    flow("1.27")


def test_kubectl_1_28():
    flow("1.28")


def test_kubectl_1_30():
    flow("1.30")


def test_kubectl_1_33():
    flow("1.33")


def test_unknown_field_is_refused_by_every_kubectl():
    """--validate=strict (kubectl's default): a field no Deployment has is an error."""
    bad = KINDS[0][2].replace("  replicas: 2\n", "  replicas: 2\n  replicaz: 3\n")
    path = write("bad.yaml", bad)
    for version in VERSIONS:
        exe = bundled_kubectl(version)
        rc, out, err = run_cmd([exe, "--kubeconfig", S["kc"], "--cache-dir", os.path.join(S["tmp"], "cache-" + version),
                                "create", "-f", path], timeout=90)
        check(rc != 0 and "replicaz" in err, "kubectl %s accepted spec.replicaz: %s %s" % (version, out, err))


if __name__ == "__main__":
    run(globals())
