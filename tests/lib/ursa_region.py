"""A small real region for kubelet tests: etcd + resource manager (ursa-rm-apiserver) + one
tenant partition registered with each other, and ursa-kubelet processes against them.

    import ursa_harness as h
    import ursa_region as region

    r = region.start(tenants=("acme",))          # {"rm", "tp", "admin", "tpadmin"}
    kc = r["rm"].kubeconfig("system", "system:node:n1", ("system:nodes",))
    kl = region.Kubelet(kc, ["--node-name", "n1", ...]).start()
    kl.stop(); kl.start()                         # same root dir: a kubelet restart

The TP trusts the RM's credentials (share_credentials), as the kubelet uses its RM kubeconfig's
token and CA for every tenant partition, and gets the RM admin token as its region token (the TP
asks the RM for the node when it proxies `kubectl logs`)."""

import glob
import json
import os
import secrets
import signal

import ursa_harness as h

RM_BIN = os.path.join(h.BUILD_DIR, "src", "resource-manager", "ursa-rm-apiserver")
KUBELET_BIN = os.path.join(h.BUILD_DIR, "src", "kubelet", "ursa-kubelet")
GW_BIN = os.path.join(h.BUILD_DIR, "src", "gateway", "ursa-gateway")
REGISTRY = "/apis/ursa.io/v1/tenantpartitions"


class RmServer(h.ApiServer):
    """ursa-rm-apiserver, started like the harness starts a TP."""

    def __init__(self, etcd, partition_id="rm-1", extra_args=(), log_level="debug"):
        h.require_binary(RM_BIN, "ursa-rm-apiserver")
        super().__init__(etcd, partition_id=partition_id, extra_args=extra_args, log_level=log_level)

    def args(self):
        a = super().args()
        a[0] = RM_BIN
        return a


def share_credentials(tp, rm):
    """The kubelet uses its RM kubeconfig's token and CA for every TP: give the TP the RM's."""
    for attr in ("ca_file", "cert_file", "key_file", "signing_key", "signing_pub", "admin_token", "token_file"):
        setattr(tp, attr, getattr(rm, attr))


ALL_KUBELETS = []  # every Kubelet made by this process, for kill_containers()


class Kubelet:
    """One ursa-kubelet process with its own root dir and port; start() again after stop() is a
    kubelet restart (same root dir). extra: more flags; args may be changed between runs."""

    def __init__(self, kubeconfig, extra=(), label="kubelet"):
        h.require_binary(KUBELET_BIN, "ursa-kubelet")
        self.dir = h.make_tmpdir(label)
        ALL_KUBELETS.append(self)
        self.port = h.free_port()
        self.args = [KUBELET_BIN, "--kubeconfig", kubeconfig, "--root-dir", self.dir, "--port", str(self.port),
                     "--address", "127.0.0.1", "--zone", "az-1"] + list(extra)
        self.log = os.path.join(self.dir, "kubelet.log")
        h._logs.append((label, self.log))
        self.proc = None

    def start(self):
        self.proc = h.spawn(self.args, self.log)
        return self

    def stop(self):
        return h.terminate(self.proc)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def start(tenants=("acme",), zone="az-1"):
    """etcd x2, the RM (rm-1) and a TP (tp-1) registered with each other, tenants created."""
    etcd_rm = h.Etcd(name="etcd-rm").start()
    etcd_tp = h.Etcd(name="etcd-tp").start()
    rm = RmServer(etcd_rm)
    rm.start()
    token = os.path.join(h.make_tmpdir("region"), "region.token")
    with open(token, "w") as f:
        f.write(rm.admin_token + "\n")
    tp = h.ApiServer(etcd_tp, partition_id="tp-1", extra_args=("--region-token-file", token,
                                                               "--region-ca-file", rm.ca_file))
    share_credentials(tp, rm)
    tp.start()
    admin = rm.admin()
    r = admin.post(REGISTRY, {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                              "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    h.expect_status(r, 201, "register tp-1")
    r = tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {
        "apiVersion": "ursa.io/v1", "kind": "ResourceManager", "metadata": {"name": "rm-1"},
        "spec": {"endpoints": [rm.url], "zone": zone}})
    h.expect_status(r, 201, "register rm-1 with the TP")
    for t in tenants:
        h.create_tenant(tp.admin(), t)
    return {"rm": rm, "tp": tp, "admin": admin, "tpadmin": tp.admin()}


def node_ready(admin, node):
    r = admin.get("/api/v1/nodes/" + node)
    if r.status != 200:
        return False
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in r.json.get("status", {}).get("conditions", []))


def start_gateway(rm, tp):
    """A gateway in front of rm and tp (as test_gateway.py does): the partitions learn the caller
    from its identity assertions, so both restart with a shared identity key first; both are
    recorded in the gateway's own etcd with `ursactl register`. Returns (process, url, admin
    client) once the gateway is ready."""
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    for srv in (rm, tp):
        srv.extra_args += ["--identity-key-file", idkey]
        srv.restart()
    gw_etcd = h.Etcd(name="etcd-gw").start()
    region = os.path.join(h.make_tmpdir("gwregion"), "region.json")
    for kind, pid, url, zone in (("tp", "tp-1", tp.url, None), ("rm", "rm-1", rm.url, "az-1")):
        args = [h.URSACTL_BIN, "register", "--region-file", region, "--signing-key", rm.signing_key,
                "--certificate-authority", rm.ca_file, "--gateway-etcd", gw_etcd.endpoints, "--kind", kind,
                "--name", pid, "--endpoints", url]
        if zone:
            args += ["--zone", zone]
        rc, out, err = h.run_cmd(args, 60)
        h.check(rc == 0, "ursactl register %s: %s %s" % (pid, out, err))
    d = h.make_tmpdir("gateway")
    token = os.path.join(d, "gw.token")
    with open(token, "w") as f:
        f.write(rm.admin_token)
    port = h.free_port()
    log = os.path.join(d, "gw.log")
    h._logs.append(("gateway", log))
    proc = h.spawn([GW_BIN, "--etcd-servers", gw_etcd.endpoints, "--tls-cert-file", rm.cert_file,
                    "--tls-private-key-file", rm.key_file, "--token-auth-file", rm.token_file,
                    "--token-signing-public-key", rm.signing_pub, "--partition-ca-file", rm.ca_file,
                    "--partition-token-file", token, "--identity-key-file", idkey,
                    "--listen", "127.0.0.1:%d" % port, "--log-level", "info"], log)
    url = "https://127.0.0.1:%d" % port
    gw = h.Client(url, rm.ca_file, rm.admin_token)

    def ready():
        try:
            return gw.get("/readyz").status == 200
        except OSError:
            return False
    h.wait_until(ready, 60, "gateway ready")
    return proc, url, gw


def state_pid(kl, uid, container="c"):
    """The pid of a process-runtime container of the pod with this uid, from its shim's state
    file under kl.dir, or None."""
    try:
        with open(os.path.join(kl.dir, "runtime", "pods", uid, "containers", container, "state.json")) as f:
            return json.load(f)["pid"]
    except (OSError, ValueError, KeyError):
        return None


def container_pid(kl, uid, container="c"):
    """state_pid, waited for: the kubelet says Running once the shim is spawned; the shim writes
    the file right after its fork, so a fresh pod's may lag a moment."""
    return h.wait_until(lambda: state_pid(kl, uid, container), 10, "state file of container %s" % uid)


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def kill_containers(kubelets=None):
    """Containers of the process runtime outlive their kubelet by design: ends those the given
    kubelets (anything with .dir, their root; default every Kubelet of this process) left
    behind, group and shim. Call it from teardown, before the harness removes the directories."""
    for kl in ALL_KUBELETS if kubelets is None else kubelets:
        for f in glob.glob(os.path.join(kl.dir, "runtime", "pods", "*", "containers", "*", "state.json")):
            try:
                with open(f) as fh:
                    st = json.load(fh)
            except (OSError, ValueError):
                continue
            for key, group in (("pid", True), ("shimPid", False)):
                pid = st.get(key)
                if isinstance(pid, int) and pid > 1:
                    try:
                        (os.killpg if group else os.kill)(pid, signal.SIGKILL)
                    except OSError:
                        pass
