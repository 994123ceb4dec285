#!/usr/bin/python3
"""The kubelet's own /metrics (Prometheus text, src/kubelet/klmetrics.c): the pod start latency
histogram (first seen -> Running) and the probe duration histogram by probe type and result.

Set-up: a region (etcd x2, RM, TP) and one kubelet on the process runtime (no containerd needed),
two pods with exec readiness probes, one succeeding and one failing.
Run alone: URSA_BUILD_DIR=build-x URSA_SOURCE_DIR=$PWD /usr/bin/python3 tests/integration/test_kubelet_metrics.py"""

import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

NODE = "metrics-node-1"
S = {}


def setup():
    S.update(ursa_region.start(tenants=("acme",)))
    node_kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(node_kc, ["--node-name", NODE, "--cpu", "2", "--memory", "4Gi",
                                            "--runtime", "process"], label="kubelet-metrics").start()
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], NODE), 60, "node %s Ready" % NODE)


def teardown():
    ursa_region.kill_containers()  # the process runtime's containers outlive their kubelet
    if S.get("kl"):
        S["kl"].stop()


def pod(name, probe_cmd):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": NODE, "terminationGracePeriodSeconds": 1, "containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sh", "-c", "exec sleep 3600"],
                "readinessProbe": {"exec": {"command": probe_cmd}, "periodSeconds": 1}}]}}


def status(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def scrape():
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % S["kl"].port, timeout=10) as r:
        h.eq(r.status, 200, "GET /metrics")
        h.check(r.headers.get("Content-Type", "").startswith("text/plain; version=0.0.4"),
                "Prometheus content type: %r" % r.headers.get("Content-Type"))
        return r.read().decode()


def samples(text):
    """{(name, labels string): value} of every sample line."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$', line)
        h.check(m, "sample line in Prometheus text format: %r" % line)
        out[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return out


def test_pod_start_and_probe_histograms():
    before = samples(scrape())
    h.eq(before[("kubelet_pod_start_duration_seconds_count", "")], 0, "no pod started yet")
    for name, cmd in (("ok", ["true"]), ("bad", ["false"])):
        r = S["tpadmin"].post(h.pods_path("acme"), pod(name, cmd))
        h.expect_status(r, 201, "create pod %s" % name)
    t0 = time.monotonic()
    h.wait_until(lambda: status("ok").get("phase") == "Running" and status("bad").get("phase") == "Running",
                 60, "both pods Running")
    elapsed = time.monotonic() - t0
    succ = '{probe_type="Readiness",result="successful"}'
    fail = '{probe_type="Readiness",result="failed"}'
    h.wait_until(lambda: (lambda s: s[("prober_probe_duration_seconds_count", succ)] >= 2 and
                          s[("prober_probe_duration_seconds_count", fail)] >= 2)(samples(scrape())),
                 30, "probe runs counted")
    text = scrape()
    s = samples(text)
    h.check("# TYPE kubelet_pod_start_duration_seconds histogram" in text, "pod start family typed histogram")
    h.check("# TYPE prober_probe_duration_seconds histogram" in text, "probe family typed histogram")
    h.eq(s[("kubelet_pod_start_duration_seconds_count", "")], 2, "two pods started")
    total = s[("kubelet_pod_start_duration_seconds_sum", "")]
    h.check(0 < total <= 2 * (elapsed + 5), "pod start sum %.3f s for two pods Running within %.1f s" % (total, elapsed))
    h.eq(s[('kubelet_pod_start_duration_seconds_bucket', '{le="+Inf"}')], 2, "+Inf bucket = count")
    # buckets are cumulative: never decreasing
    bk = [v for (n, lab), v in s.items() if n == "kubelet_pod_start_duration_seconds_bucket"]
    h.eq(bk, sorted(bk), "cumulative buckets in order")
    # exec probes of `true`/`false` on the process runtime take well under a second each
    for lab in (succ, fail):
        cnt = s[("prober_probe_duration_seconds_count", lab)]
        h.check(0 < s[("prober_probe_duration_seconds_sum", lab)] < cnt * 1.0, "probe durations %s" % lab)
        h.eq(s[("prober_probe_duration_seconds_bucket", lab[:-1] + ',le="+Inf"}')], cnt, "+Inf bucket %s" % lab)
    h.eq(s[("prober_probe_duration_seconds_count", '{probe_type="Liveness",result="successful"}')], 0,
         "no liveness probe ran")
    h.check(status("ok").get("conditions") and
            any(c["type"] == "Ready" and c["status"] == "True" for c in status("ok")["conditions"]), "pod ok Ready")
    for name in ("ok", "bad"):
        S["tpadmin"].delete(h.pods_path("acme", name=name))


if __name__ == "__main__":
    h.run(globals())
