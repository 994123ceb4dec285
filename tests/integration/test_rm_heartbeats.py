"""Heartbeat writes in a resource manager (ursa-rm-apiserver against a real etcd): a node lease
renewal waits up to --etcd-heartbeat-linger-ms to share an etcd txn with other renewals, and any
other write sends it at once (docs/architecture.md, "Storage"). A 1 s linger makes the waits
unmistakable on a noisy machine."""

import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
LEASES = "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases"
LINGER_S = 1.0

S = {}


class RmServer(h.ApiServer):
    def __init__(self, etcd, extra_args):
        h.require_binary(RM_BIN, "ursa-rm-apiserver")
        super().__init__(etcd, partition_id="rm-1", extra_args=extra_args)

    def args(self):
        a = super().args()
        a[0] = RM_BIN
        return a


def setup():
    etcd = h.Etcd(name="etcd-rm")
    etcd.start()
    # 4 workers: a queue of 2 renewals (half of them) is sent without waiting the linger out
    rm = RmServer(etcd, ["--etcd-heartbeat-linger-ms", str(int(LINGER_S * 1000)), "--workers", "4"])
    rm.start()
    S.update(rm=rm, admin=rm.admin())


def lease(name):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"},
            "spec": {"holderIdentity": name, "leaseDurationSeconds": 40}}


def etcd_writes():
    """(txns, writes) the RM has sent to etcd."""
    text = S["admin"].get("/metrics").text
    out = []
    for name in ("ursa_etcd_write_txns_total", "ursa_etcd_writes_total"):
        line = [ln for ln in text.splitlines() if ln.startswith(name + " ")]
        h.check(line, "%s in the RM's /metrics" % name)
        out.append(int(line[0].split()[1]))
    return tuple(out)


def timed(fn):
    t0 = time.monotonic()
    r = fn()
    return r, time.monotonic() - t0


def test_lone_renewal_waits_the_linger():
    r, took = timed(lambda: S["admin"].post(LEASES, lease("hb-lone")))
    h.expect_status(r, 201, "create lease hb-lone")
    h.check(took >= LINGER_S * 0.9, "a lone lease write waited for company (%.3f s)" % took)
    r, took = timed(lambda: S["admin"].patch(LEASES + "/hb-lone", {"spec": {"leaseDurationSeconds": 41}}))
    h.expect_status(r, 200, "renew lease hb-lone")
    h.check(took >= LINGER_S * 0.9, "a lone renewal waited for company (%.3f s)" % took)
    h.eq(S["admin"].get(LEASES + "/hb-lone").json["spec"]["leaseDurationSeconds"], 41, "renewal stored")


def test_other_write_sends_renewal_at_once():
    before = etcd_writes()
    out = {}

    def renew():
        out["r"], out["took"] = timed(lambda: S["admin"].post(LEASES, lease("hb-mixed")))

    t = threading.Thread(target=renew)
    t.start()
    time.sleep(0.15)  # the renewal is queued and waiting
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "hb-node"}}
    r, took = timed(lambda: S["admin"].post("/api/v1/nodes", node))
    t.join()
    h.expect_status(r, 201, "create node hb-node")
    h.expect_status(out["r"], 201, "create lease hb-mixed")
    h.check(took < LINGER_S * 0.5, "the node write did not wait (%.3f s)" % took)
    h.check(out["took"] < LINGER_S * 0.8, "the node write sent the waiting renewal (%.3f s)" % out["took"])
    after = etcd_writes()
    h.eq(after[1] - before[1], 2, "etcd writes")
    h.eq(after[0] - before[0], 1, "etcd txns: the renewal and the node shared one")


def test_renewals_share_a_txn():
    before = etcd_writes()
    results = []

    def renew(i):
        results.append(timed(lambda: S["admin"].post(LEASES, lease("hb-pair-%d" % i))))

    ts = [threading.Thread(target=renew, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for r, took in results:
        h.expect_status(r, 201, "create lease")
        h.check(took < LINGER_S * 0.8, "two renewals (half the workers) went without waiting (%.3f s)" % took)
    after = etcd_writes()
    h.eq(after[1] - before[1], 2, "etcd writes")
    h.eq(after[0] - before[0], 1, "etcd txns: the two renewals shared one")


if __name__ == "__main__":
    h.run(globals())
