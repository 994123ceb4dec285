"""A kubelet follows its pods between tenant partitions (docs/migration.md, "Pods keep running"):
a kubelet with the process runtime and two tenant partitions, tp-1 (A) and tp-2 (B), each with its
own etcd. A tenant move copies a pod's key byte for byte from A's etcd to B's and later deletes
A's with a raw etcd delete (no deletionTimestamp first): the container goes on (same process,
restartCount 0) and the kubelet's status updates and deletions go to B. An undone move deletes
B's copy instead: the container goes on and A stays the pod's partition."""

import atexit
import base64
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

NODE = "kl-move-1"
TENANT = "acme"
S = {}


def teardown():
    ursa_region.kill_containers()  # before the harness removes the directories


atexit.register(ursa_region.kill_containers)  # also when the run is cut short


def setup():
    r = ursa_region.start(tenants=(TENANT,))
    etcd_b = h.Etcd(name="etcd-tp2").start()
    tp_b = h.ApiServer(etcd_b, partition_id="tp-2")
    ursa_region.share_credentials(tp_b, r["rm"])
    tp_b.start()
    h.expect_status(r["admin"].post(ursa_region.REGISTRY, {
        "apiVersion": "ursa.io/v1", "kind": "TenantPartition", "metadata": {"name": "tp-2"},
        "spec": {"endpoints": [tp_b.url]}}), 201, "register tp-2")
    kc = r["rm"].kubeconfig("system", "kubelet-move", ("system:nodes",))
    kl = ursa_region.Kubelet(kc, ["--node-name", NODE, "--cpu", "2", "--memory", "4Gi"]).start()
    h.wait_until(lambda: ursa_region.node_ready(r["admin"], NODE), 20, "node Ready")
    h.wait_until(lambda: "partition=\"tp-2\"" in kl.log_text(), 20, "the kubelet follows tp-2")
    S.update(a=r["tpadmin"], b=tp_b.admin(), etcd_a=r["tp"].etcd, etcd_b=etcd_b, kl=kl)


# --- etcd behind the API servers' backs, as a move does it ---------------------------------------

def b64(s):
    return base64.b64encode(s.encode() if isinstance(s, str) else s).decode()


def kvs(etcd, prefix):
    end = bytearray(prefix.encode())
    end[-1] += 1
    r = etcd.v3("kv/range", {"key": b64(prefix), "range_end": b64(bytes(end))})
    return [(base64.b64decode(kv["key"]), base64.b64decode(kv.get("value", ""))) for kv in r.get("kvs", [])]


def copy_keys(src, dst, prefix):
    """Every key under prefix, byte for byte; returns how many."""
    items = kvs(src, prefix)
    for k, v in items:
        dst.v3("kv/put", {"key": b64(k), "value": b64(v)})
    return len(items)


def pod_key(name):
    return "/registry/pods/%s/default/%s" % (TENANT, name)


def raw_delete(etcd, key):
    r = etcd.v3("kv/deleterange", {"key": b64(key)})
    h.eq(int(r.get("deleted", 0)), 1, "raw delete of %s" % key)


# --- pods -------------------------------------------------------------------------------------------

def run_pod(name):
    """A pod of TENANT bound to NODE on A, Running: (uid, container pid)."""
    a = S["a"]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [{"name": "c", "image": "busybox:1.36", "command": ["sleep", "300"]}],
                    "terminationGracePeriodSeconds": 5}}
    h.expect_status(a.post(h.pods_path(TENANT), pod), 201, "create pod %s" % name)
    binding = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
               "target": {"apiVersion": "v1", "kind": "Node", "name": NODE}}
    h.wait_until(lambda: a.post(h.pods_path(TENANT, name=name) + "/binding", binding).status in (200, 201), 10,
                 "bind %s" % name)
    h.wait_until(lambda: phase(a, name) == "Running", 30, "%s Running on A" % name)
    uid = a.get(h.pods_path(TENANT, name=name)).json["metadata"]["uid"]
    return uid, ursa_region.container_pid(S["kl"], uid)


def phase(client, name):
    r = client.get(h.pods_path(TENANT, name=name))
    return r.json.get("status", {}).get("phase") if r.status == 200 else None


def restarts(client, name):
    return client.get(h.pods_path(TENANT, name=name)).json["status"]["containerStatuses"][0]["restartCount"]


def logged(text):
    return text in S["kl"].log_text()


def log_lines(uid, msg):
    """How many of the kubelet's log lines say msg about the pod with this uid."""
    return sum(1 for ln in S["kl"].log_text().splitlines() if 'msg="%s"' % msg in ln and "uid=" + uid in ln)


def delete_gracefully(client, where, name, pid):
    """A genuine deletion through the pod's partition: the kubelet stops the container and
    finishes the deletion there."""
    r = client.delete(h.pods_path(TENANT, name=name))
    h.check(r.status in (200, 202), "graceful delete through %s: %s %s" % (where, r.status, r.body[:200]))
    h.wait_until(lambda: client.get(h.pods_path(TENANT, name=name)).status == 404, 20,
                 "the kubelet finishes the deletion on %s" % where)
    h.wait_until(lambda: not ursa_region.pid_alive(pid), 10, "container process %d ended" % pid)


def test_move_hands_the_pod_to_the_target():
    a, b, ea, eb = S["a"], S["b"], S["etcd_a"], S["etcd_b"]
    uid, pid = run_pod("mover")
    # the copy: the tenant, its namespaces and service accounts, then the pod, byte for byte
    h.check(copy_keys(ea, eb, "/registry/tenants/" + TENANT) == 1, "tenant key copied")
    for plural in ("namespaces", "serviceaccounts"):
        copy_keys(ea, eb, "/registry/%s/%s/" % (plural, TENANT))
    h.eq(copy_keys(ea, eb, pod_key("mover")), 1, "pod key copied")
    h.wait_until(lambda: b.get(h.pods_path(TENANT, name="mover")).status == 200, 10, "B serves the pod")
    h.wait_until(lambda: logged('msg="pod copy seen" uid=%s' % uid), 10, "the kubelet sees B's copy")
    # a change of the copy is not the kubelet's business while A is the pod's home
    (_, raw), = kvs(eb, pod_key("mover"))
    stale = json.loads(raw)
    stale["status"]["phase"] = "Pending"
    stale["status"].pop("podIP", None)
    eb.v3("kv/put", {"key": b64(pod_key("mover")), "value": b64(json.dumps(stale))})
    time.sleep(1.5)
    h.eq(phase(b, "mover"), "Pending", "B's copy left alone while A is home")
    h.eq(ursa_region.state_pid(S["kl"], uid), pid, "no second start for B's copy")
    # the move's cleaning: A's copy goes with a raw delete
    raw_delete(ea, pod_key("mover"))
    h.wait_until(lambda: a.get(h.pods_path(TENANT, name="mover")).status == 404, 10, "A no longer serves the pod")
    h.wait_until(lambda: phase(b, "mover") == "Running", 10, "the kubelet's status lands on B")
    st = b.get(h.pods_path(TENANT, name="mover")).json
    h.eq(st["metadata"]["uid"], uid, "same uid on B")
    h.eq(st["status"].get("podIP"), "127.0.0.1", "podIP reported to B")
    h.eq(restarts(b, "mover"), 0, "restartCount on B")
    h.eq(ursa_region.state_pid(S["kl"], uid), pid, "same container process")
    h.check(ursa_region.pid_alive(pid), "container process %d alive" % pid)
    h.check(logged('msg="pod handed off" uid=%s' % uid), "the kubelet handed the pod off to B")
    h.eq(log_lines(uid, "pod started"), 1, "pod started once")
    h.eq(log_lines(uid, "pod gone"), 0, "pod not stopped as gone")
    # a genuine deletion, through B, the pod's partition now
    delete_gracefully(b, "B", "mover", pid)


def test_undone_move_keeps_the_pod_on_the_source():
    a, b, ea, eb = S["a"], S["b"], S["etcd_a"], S["etcd_b"]
    uid, pid = run_pod("stayer")
    h.eq(copy_keys(ea, eb, pod_key("stayer")), 1, "pod key copied")
    h.wait_until(lambda: b.get(h.pods_path(TENANT, name="stayer")).status == 200, 10, "B serves the pod")
    h.wait_until(lambda: logged('msg="pod copy seen" uid=%s' % uid), 10, "the kubelet sees B's copy")
    # the move is undone: B's copy goes with a raw delete
    raw_delete(eb, pod_key("stayer"))
    h.wait_until(lambda: b.get(h.pods_path(TENANT, name="stayer")).status == 404, 10, "B no longer serves the pod")
    h.wait_until(lambda: logged('msg="pod copy gone" uid=%s' % uid), 10, "the kubelet forgets B's copy")
    time.sleep(1)
    h.eq(ursa_region.state_pid(S["kl"], uid), pid, "same container process")
    h.check(ursa_region.pid_alive(pid), "container process %d alive" % pid)
    h.eq(phase(a, "stayer"), "Running", "phase on A")
    h.eq(restarts(a, "stayer"), 0, "restartCount on A")
    # A is still the pod's partition: a graceful deletion there stops it
    delete_gracefully(a, "A", "stayer", pid)


h.run(globals())
