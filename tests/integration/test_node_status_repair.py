"""A live kubelet notices that someone else changed its node's status (the node lifecycle
controller marking it Ready=Unknown after a late heartbeat) and posts its status again within
seconds, not at its next periodic report (--node-status-report-seconds, 300 s): the kubelet watches
its nodes (a real node by name, a hollow process's nodes by their ursa.io/kubelet-id label) and its
heartbeat workers post a stale node's status again between renewals, at most at the renewals'
pace. Here an admin's status patch plays the controller (etcd + resource manager, no controller
manager), for a real node (fake runtime) and for hollow nodes."""

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

REAL = "nsr-real"
HOLLOW_PREFIX = "nsr-h"
HOLLOW_N = 200
REPAIR_S = 15  # Kubernetes' kubelet: within nodeStatusUpdateFrequency (10 s); a renew period here

S = {}


def setup():
    etcd = h.Etcd(name="etcd-rm").start()
    rm = ursa_region.RmServer(etcd)
    rm.start()
    kc = rm.kubeconfig("system", "kubelet-nsr", ("system:nodes",))
    real = ursa_region.Kubelet(kc, ["--node-name", REAL, "--runtime", "fake", "--cpu", "2", "--memory", "4Gi"],
                               label="kubelet-real").start()
    hollow = ursa_region.Kubelet(kc, ["--hollow-nodes", str(HOLLOW_N), "--hollow-prefix", HOLLOW_PREFIX,
                                      "--port", "0"], label="kubelet-hollow").start()
    S.update(rm=rm, admin=rm.admin(), real=real, hollow=hollow)


def teardown():
    ursa_region.kill_containers()


def get_node(name):
    r = S["admin"].get("/api/v1/nodes/" + name)
    h.expect_status(r, 200, "get node %s" % name)
    return r.json


def ready_status(name):
    r = S["admin"].get("/api/v1/nodes/" + name)
    return ready_of(r.json).get("status") if r.status == 200 else None


def ready_of(node):
    for c in (node or {}).get("status", {}).get("conditions", []):
        if c.get("type") == "Ready":
            return c
    return {}


def hollow_nodes():
    r = S["admin"].get("/api/v1/nodes?labelSelector=node-role.kubernetes.io/hollow")
    h.expect_status(r, 200, "list hollow nodes")
    return {n["metadata"]["name"]: n for n in r.json["items"] if n["metadata"]["name"].startswith(HOLLOW_PREFIX + "-")}


def mark_unknown(name, node=None):
    """What the node lifecycle controller writes: every condition Unknown, one status patch."""
    node = node or get_node(name)
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    conds = []
    for c in node["status"]["conditions"]:
        c = dict(c)
        c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                 lastTransitionTime=now)
        conds.append(c)
    r = S["admin"].patch("/api/v1/nodes/%s/status" % name, {"status": {"conditions": conds}})
    h.expect_status(r, 200, "mark %s Ready=Unknown" % name)
    h.eq(ready_of(r.json).get("status"), "Unknown", "%s Ready after the patch" % name)


def test_real_node_marked_unknown_is_ready_again():
    h.wait_until(lambda: ready_status(REAL) == "True", 30, "node %s Ready" % REAL)
    time.sleep(2)  # past the registration's own posts
    mark_unknown(REAL)
    t0 = time.monotonic()
    h.wait_until(lambda: ready_of(get_node(REAL)).get("status") == "True", REPAIR_S,
                 "node %s Ready=True again within %d s of being marked Unknown" % (REAL, REPAIR_S))
    took = time.monotonic() - t0
    c = ready_of(get_node(REAL))
    h.eq(c.get("reason"), "KubeletReady", "Ready reason")
    print("real node Ready again after %.1f s" % took)
    h.check("posting it again" in S["real"].log_text(), "the kubelet says why it posted the status")


def test_hollow_nodes_marked_unknown_are_ready_again():
    h.wait_until(lambda: sum(ready_of(n).get("status") == "True" for n in hollow_nodes().values()) == HOLLOW_N,
                 60, "%d hollow nodes Ready" % HOLLOW_N)
    time.sleep(2)
    marked = ["%s-%d" % (HOLLOW_PREFIX, i) for i in range(0, HOLLOW_N, 5)]  # 40 of 200, every worker's
    before = {name: ready_of(n).get("lastHeartbeatTime") for name, n in hollow_nodes().items()}
    for name in marked:
        mark_unknown(name)
    t0 = time.monotonic()

    def all_ready():
        now = hollow_nodes()
        return all(ready_of(now[name]).get("status") == "True" for name in marked)

    h.wait_until(all_ready, REPAIR_S, "%d marked hollow nodes Ready=True again within %d s" % (len(marked), REPAIR_S))
    print("%d hollow nodes Ready again after %.1f s" % (len(marked), time.monotonic() - t0))
    after = hollow_nodes()
    others = [name for name in after if name not in marked]
    unchanged = [name for name in others if ready_of(after[name]).get("lastHeartbeatTime") == before[name]]
    h.eq(len(unchanged), len(others), "nodes nobody marked were not posted again (status report every 300 s)")
    # the process's node watch selects its nodes by this label
    ids = {n["metadata"]["labels"].get("ursa.io/kubelet-id") for n in after.values()}
    h.eq(len(ids), 1, "one kubelet-id label on every hollow node of the process")
    h.eq(ids.pop(), after[HOLLOW_PREFIX + "-0"]["metadata"]["annotations"].get("ursa.io/kubelet-id"),
         "the label is the kubelet-id annotation")


def test_mass_mark_is_spread():
    """All nodes marked at once: each worker posts again at most one node per renewal slot (its
    renewals' pace), so the posts spread over seconds instead of a burst; all are back within a
    renew period (10 s) and a bit."""
    nodes = hollow_nodes()
    with ThreadPoolExecutor(16) as pool:  # all marked within about a second
        list(pool.map(lambda name: mark_unknown(name, nodes[name]), sorted(nodes)))
    t0 = time.monotonic()
    h.wait_until(lambda: all(ready_of(n).get("status") == "True" for n in hollow_nodes().values()), REPAIR_S + 5,
                 "all %d hollow nodes Ready=True again" % HOLLOW_N)
    took = time.monotonic() - t0
    beats = sorted(ready_of(n)["lastHeartbeatTime"] for n in hollow_nodes().values())
    spread = time.mktime(time.strptime(beats[-1], "%Y-%m-%dT%H:%M:%SZ")) - \
        time.mktime(time.strptime(beats[0], "%Y-%m-%dT%H:%M:%SZ"))
    print("%d hollow nodes Ready again after %.1f s, their posts spread over %d s" % (HOLLOW_N, took, spread))
    h.check(spread >= 3, "the posts spread over seconds, not one burst (%d s)" % spread)
    h.check(S["hollow"].alive() and S["real"].alive(), "kubelets alive")


def test_kubelets_exit_cleanly():
    h.eq(S["hollow"].stop(), 0, "hollow kubelet exits cleanly on SIGTERM")
    h.eq(S["real"].stop(), 0, "real kubelet exits cleanly on SIGTERM")


if __name__ == "__main__":
    h.run(globals())
