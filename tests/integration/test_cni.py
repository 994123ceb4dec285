#!/usr/bin/python3
"""ursa-cni against a real containerd: a bridge and address blocks per tenant on a CRI node.

Set-up as in test_kubelet_cri.py (tests/lib/ursa_cri.py: images in a local docker-registry, a
containerd node whose CNI network is the one local-up writes, containerd_write_cni, i.e. ursa-cni
with a /24 range of an unused 10.X split into blocks, bridges ut-<hex>-N; tests/lib/ursa_region.py:
etcd + resource manager + tenant partition; an ursa-kubelet --runtime cri node). The blocks are /29s (5 pod addresses each, where local-up's /26s hold 61) so that a
handful of pods outgrow one.

Checks: pods of tenants acme and beta get addresses from different blocks on different bridges;
a busybox pod of acme fetches the page of acme's httpd:1 pod but not beta's; the node fetches
both over HTTP; acme's sixth pod gets a second block on acme's bridge (its gateway on the bridge,
its pod routed through it), reaches acme's pod in the first block but not beta's and is reached
from the node; the second block is given back when its pod goes; deleting beta's last pod removes
beta's bridge and rule; bridges keep their MAC (set, not taken from a port); an address handed
out again is announced (the node's neighbour entry names the new pod's MAC at once, not the MAC
of the pod that had it before, which the node talked to); the front door: pods reach a TLS server standing in for the node's
front door (127.0.0.1:<port>, the config's frontDoor; its certificate made by deploy's
ensure_server_cert with the SANs local-up gives HAProxy's) at 10.96.0.1:443 through ursa-cni's
DNAT (a rule per bridge in URSA-CNI of the nat table, route_localnet on the bridge): a busybox
pod sees KUBERNETES_SERVICE_HOST/PORT 10.96.0.1/443 from the kubelet and connects with nc (busybox
1.36's wget https fails its TLS handshake with an ECDSA certificate, alert 40, and verifies
nothing anyway), and from the pod's own network namespace (nsenter -n) python verifies the
certificate against the CA for host 10.96.0.1 and fetches a page, seen by the server as coming
from the pod's address; the rule goes with the bridge; a node out of blocks fails ADD with a clear CNI error; after
containerd_teardown and containerd_remove_network no bridge, iptables rule, lease, state or
libcni cache is left.
Needs root (containerd, runc, mounts, bridges, iptables).

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_cni.py"""

import glob
import ipaddress
import json
import os
import http.server
import ssl
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

CNI_BIN = cri.CNI_PLUGIN
NODE = "cni-node-1"
BLOCK = 29  # containerd_write_cni's LEN: 5 pod addresses a block
HOSTS = 2 ** (32 - BLOCK) - 3
S = {}
sh = cri.sh


def links():
    return sorted(os.listdir("/sys/class/net"))


def chain_rules(table="filter"):
    rc, out, _ = h.run_cmd(["iptables", "-w", "5", "-t", table, "-S", "URSA-CNI"])
    return out.splitlines() if rc == 0 else []


FRONT_SANS = "IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"


class FrontDoor(http.server.BaseHTTPRequestHandler):
    """The stand-in front door: answers every GET with "front-door <path>"."""

    def do_GET(self):  # noqa: N802 - http.server's name
        S.setdefault("front_peers", []).append(self.client_address[0])
        body = ("front-door %s\n" % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def start_front_door():
    """A TLS server on 127.0.0.1:<free port> with a certificate of its own CA (deploy's
    ensure_ca/ensure_server_cert, the SANs local-up gives HAProxy's)."""
    pki = h.make_tmpdir("cni-pki")
    common = os.path.join(h.SOURCE_DIR, "deploy", "lib", "common.sh")
    rc, out, err = h.run_cmd(["bash", "-c", 'source "$0"; ensure_ca "$1"; ensure_server_cert "$1" "$1" front "$2"',
                              common, pki, FRONT_SANS], 60)
    h.eq(rc, 0, "front door certificate: %s %s" % (out, err))
    port = h.free_port()
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), FrontDoor)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(pki, "front.crt"), os.path.join(pki, "front.key"))
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    h.at_cleanup(srv.shutdown)
    S.update(front_port=port, front_ca=os.path.join(pki, "ca.crt"))
    return "127.0.0.1:%d" % port


def setup():
    cri.require()
    front = start_front_door()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-cni", block=BLOCK, front_door=front).start()
    S.update(node=node, cdir=node.dir, endpoint=node.endpoint, range=ipaddress.ip_network(node.subnet),
             prefix=node.bridge, net=node.network)
    S.update(ursa_region.start(tenants=("acme", "beta")))
    node_kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(node_kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi",
                                            "--api-front-door", front] +
                                  node.kubelet_args(), label="kubelet-cni").start()
    h.wait_until(node_ready, 60, "node %s Ready" % NODE)


def teardown():
    if S.get("kl"):
        S["kl"].stop()
    if S.get("node"):
        S["node"].teardown()
    # anything a failed run left: the test's bridges and rules
    for link in links():
        if S.get("prefix") and link.startswith(S["prefix"] + "-"):
            h.run_cmd(["ip", "link", "del", link])
    for table in ("filter", "nat"):
        for rule in chain_rules(table):
            if S.get("prefix") and (" %s-" % S["prefix"]) in rule:
                h.run_cmd(["iptables", "-w", "5", "-t", table] + rule.replace("-A", "-D", 1).split())


def node_ready():
    return ursa_region.node_ready(S["admin"], NODE)


def create(tenant, name, image, command=None):
    c = {"name": "c", "image": image}
    if command:
        c["command"] = command
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
           "spec": {"containers": [c], "terminationGracePeriodSeconds": 1, "nodeName": NODE}}
    r = S["tpadmin"].post(h.pods_path(tenant), pod)
    h.expect_status(r, 201, "create pod %s/%s" % (tenant, name))


def status(tenant, name):
    r = S["tpadmin"].get(h.pods_path(tenant, name=name))
    return r.json.get("status", {}) if r.status == 200 else None


def running_ip(tenant, name):
    st = h.wait_until(lambda: (lambda s: s if s and s.get("phase") == "Running" and s.get("podIP") else None)(
        status(tenant, name)), 120, "pod %s/%s Running with an IP" % (tenant, name))
    return ipaddress.ip_address(st["podIP"])


def state():
    """ursa-cni's state file: {network index: (tenant, {block: [container ids]})}."""
    try:
        with open(os.path.join(S["cdir"], "cni", "ursa-cni.state")) as f:
            lines = [line.split() for line in f if line.strip()]
    except FileNotFoundError:
        return {}
    h.eq(lines[:1], [["v2"]], "state file version line")
    out = {}
    for w in lines[1:]:
        blocks = {}
        for b in w[2:]:
            blk, cids = b.split(":")
            blocks[int(blk)] = [c for c in cids.split(",") if c]
        out[int(w[0])] = (w[1], blocks)
    return out


def tenant_net(tenant):
    """(network index, {block: [container ids]}) of tenant, or (None, {})."""
    for idx, (t, blocks) in state().items():
        if t == tenant:
            return idx, blocks
    return None, {}


def subnet(blk, plen=BLOCK):
    return list(S["range"].subnets(new_prefix=plen))[blk]


def bridge_addrs(br):
    _, out, _ = h.run_cmd(["ip", "-o", "-4", "addr", "show", "dev", br])
    return out


def test_tenants_get_own_bridge_and_subnet():
    create("acme", "web-a", "httpd:1")
    create("beta", "web-b", "httpd:1")
    ipa, ipb = running_ip("acme", "web-a"), running_ip("beta", "web-b")
    st = state()
    idx = {t: i for i, (t, _) in st.items()}
    blk = {t: list(blocks) for t, blocks in st.values()}
    h.eq(sorted(idx), ["acme", "beta"], "tenants in ursa-cni's state %r" % st)
    h.check(idx["acme"] != idx["beta"], "different network indexes %r" % idx)
    h.check(len(blk["acme"]) == 1 and len(blk["beta"]) == 1 and blk["acme"] != blk["beta"],
            "one block each, different ones %r" % st)
    blk = {t: b[0] for t, b in blk.items()}
    h.check(ipa in subnet(blk["acme"]), "web-a %s in acme's block %s" % (ipa, subnet(blk["acme"])))
    h.check(ipb in subnet(blk["beta"]), "web-b %s in beta's block %s" % (ipb, subnet(blk["beta"])))
    for t in ("acme", "beta"):
        br = "%s-%d" % (S["prefix"], idx[t])
        h.check(br in links(), "bridge %s of %s exists" % (br, t))
        with open("/sys/class/net/%s/addr_assign_type" % br) as f:
            h.eq(f.read().strip(), "3", "%s's MAC is set, not taken from a port that may go" % br)
        out = bridge_addrs(br)
        gw = str(subnet(blk[t]).network_address + 1)
        h.check(" %s/%d " % (gw, BLOCK) in out, "gateway %s on %s: %r" % (gw, br, out))
        h.check("-A URSA-CNI -i %s -o %s -j RETURN" % (br, br) in chain_rules(), "rule of %s" % br)
    h.check("-A URSA-CNI -j DROP" in chain_rules(), "URSA-CNI ends in DROP: %r" % chain_rules())
    rc, out, _ = h.run_cmd(["iptables", "-w", "5", "-S", "FORWARD"])
    h.check("-A FORWARD -i ut-+ -o ut-+ -j URSA-CNI" in out, "FORWARD jumps to URSA-CNI: %r" % out)
    S["ipa"], S["ipb"], S["idx"], S["blk"] = ipa, ipb, idx, blk


def test_node_reaches_every_tenant_over_http():
    for ip in (S["ipa"], S["ipb"]):
        body = h.wait_until(lambda: fetch(ip), 30, "http://%s/ from the node" % ip)
        h.check("<" in body, "page of %s: %r" % (ip, body[:200]))


def pod_mac(ip):
    """The MAC of the httpd:1 pod that has address ip (found by its process's network namespace)."""
    rc, out, _ = h.run_cmd(["pgrep", "-f", "httpd -f -p 80"])
    for pid in out.split():
        rc, addrs, _ = h.run_cmd(["nsenter", "-t", pid, "-n", "ip", "-o", "-4", "addr", "show", "eth0"])
        if rc == 0 and (" %s/" % ip) in addrs:
            with open("/proc/%s/root/sys/class/net/eth0/address" % pid) as f:
                return f.read().strip()
    return None


def node_neigh_mac(ip):
    """The MAC the node's neighbour table holds for ip, or None."""
    _, out, _ = h.run_cmd(["ip", "neigh", "show", "to", str(ip)])
    w = out.split()
    return w[w.index("lladdr") + 1] if "lladdr" in w else None


def fetch(ip, port=80):
    try:
        with urllib.request.urlopen("http://%s:%d/" % (ip, port), timeout=3) as r:
            return r.read().decode(errors="replace")
    except OSError:
        return None


def test_pod_reaches_own_tenant_not_other():
    script = ("for i in 1 2 3 4 5; do wget -q -T 3 -O /dev/null http://%s/ && break; sleep 1; done"
              " && echo own=ok || echo own=fail; "
              "wget -q -T 3 -O /dev/null http://%s/ && echo other=ok || echo other=fail; sleep 3600") % (S["ipa"], S["ipb"])
    create("acme", "client-a", "busybox:1.36", ["sh", "-c", script])
    ipc = running_ip("acme", "client-a")
    h.check(ipc in subnet(S["blk"]["acme"]), "client-a %s in acme's block" % ipc)

    def logs():
        rc, out, _ = h.kubectl(["logs", "client-a"], S["tp"].kubeconfig("acme", "alice"))
        return out if rc == 0 and "other=" in out else None
    out = h.wait_until(logs, 60, "client-a tried both pods")
    h.check("own=ok" in out, "acme's pod reaches acme's web pod: %r" % out)
    h.check("other=fail" in out, "acme's pod does not reach beta's web pod: %r" % out)
    S["tpadmin"].delete(h.pods_path("acme", name="client-a"))


def dnat_rule(br):
    return [r for r in chain_rules("nat") if " -i %s " % br in r]


def test_pod_reaches_front_door_at_service_address():
    """A CRI pod's KUBERNETES_SERVICE_HOST:PORT is 10.96.0.1:443, DNATed from its bridge to the
    node's front door (the TLS stand-in on 127.0.0.1): busybox's nc connects; python, in the pod's
    own network namespace, verifies the certificate against the CA for host 10.96.0.1."""
    br = "%s-%d" % (S["prefix"], S["idx"]["acme"])
    rules = dnat_rule(br)
    h.eq(len(rules), 1, "one DNAT rule for %s: %r" % (br, chain_rules("nat")))
    h.check("-d 10.96.0.1/32" in rules[0] and "--dport 443" in rules[0] and
            "--to-destination 127.0.0.1:%d" % S["front_port"] in rules[0], rules[0])
    rc, out, _ = h.run_cmd(["iptables", "-w", "5", "-t", "nat", "-S", "PREROUTING"])
    h.check("-A PREROUTING -i ut-+ -j URSA-CNI" in out, "PREROUTING jumps to URSA-CNI: %r" % out)
    with open("/proc/sys/net/ipv4/conf/%s/route_localnet" % br) as f:
        h.eq(f.read().strip(), "1", "route_localnet of %s" % br)
    script = ("echo KSH=$KUBERNETES_SERVICE_HOST; echo KSP=$KUBERNETES_SERVICE_PORT; "
              "for i in 1 2 3 4 5; do echo | timeout 5 nc $KUBERNETES_SERVICE_HOST $KUBERNETES_SERVICE_PORT "
              ">/dev/null && break; sleep 1; done && echo NC=ok || echo NC=fail; echo END=1; sleep 3600")
    create("acme", "fd-a", "busybox:1.36", ["sh", "-c", script])
    try:
        pod_reaches_front_door()
    finally:
        S["tpadmin"].delete(h.pods_path("acme", name="fd-a"))


def pod_reaches_front_door():
    ip = running_ip("acme", "fd-a")

    def logs():
        rc, out, _ = h.kubectl(["logs", "fd-a"], S["tp"].kubeconfig("acme", "alice"))
        return out if rc == 0 and "END=1" in out else None
    out = h.wait_until(logs, 60, "fd-a tried the front door")
    got = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    h.eq(got.get("KSH"), "10.96.0.1", "KUBERNETES_SERVICE_HOST of a CRI pod: %r" % out)
    h.eq(got.get("KSP"), "443", "KUBERNETES_SERVICE_PORT of a CRI pod")
    h.eq(got.get("NC"), "ok", "the pod connects to 10.96.0.1:443: %r" % out)
    cid = status("acme", "fd-a")["containerStatuses"][0]["containerID"]
    pid = S["node"].task_pid(cid)
    h.check(pid, "fd-a's container runs: %s" % cid)
    check = ("import os, socket, ssl\n"
             "ctx = ssl.create_default_context(cafile=%r)\n"
             "with socket.create_connection(('10.96.0.1', 443), timeout=5) as s:\n"
             "    with ctx.wrap_socket(s, server_hostname='10.96.0.1') as t:\n"
             "        t.sendall(b'GET /verified HTTP/1.0\\r\\nHost: 10.96.0.1\\r\\n\\r\\n')\n"
             "        data = b''\n"
             "        while True:\n"
             "            d = t.recv(4096)\n"
             "            if not d:\n"
             "                break\n"
             "            data += d\n"
             "        print(data.decode().split('\\r\\n\\r\\n', 1)[1].strip())\n") % S["front_ca"]
    rc, out, err = h.run_cmd(["nsenter", "-t", str(pid), "-n", "/usr/bin/python3", "-c", check], 30)
    h.eq((rc, out.strip()), (0, "front-door /verified"), "TLS verified from the pod's network namespace: %s" % err)
    h.eq(S.get("front_peers", [])[-1:], [str(ip)], "the front door saw the pod's own address (DNAT, no masquerade)")


def test_tenant_grows_into_a_second_block():
    """acme fills its block (HOSTS pods); its next pod gets the node's lowest free block on acme's
    bridge, reaches acme's first pod through the gateways, not beta's; the node reaches it. When
    that pod goes, the block is given back and acme keeps its bridge and first block."""
    idx, blk0 = S["idx"]["acme"], S["blk"]["acme"]
    br = "%s-%d" % (S["prefix"], idx)
    # client-a (deleted by the test before) gone from acme's block: web-a is alone in it
    h.wait_until(lambda: [len(c) for c in tenant_net("acme")[1].values()] == [1], 60,
                 "client-a's address given back (acme: one block, web-a alone in it)")
    fill = ["web-a%d" % i for i in range(2, HOSTS + 1)]
    for name in fill:
        create("acme", name, "httpd:1")
    ips = {name: running_ip("acme", name) for name in fill}
    for name, ip in ips.items():
        h.check(ip in subnet(blk0), "%s %s in acme's first block %s" % (name, ip, subnet(blk0)))
    h.eq(list(tenant_net("acme")[1]), [blk0], "acme's blocks with %d pods" % (HOSTS,))
    # addresses of client-a and fd-a, gone a moment ago, are handed out again: the node may still
    # hold their old MACs (the node talked to fd-a), which the new pods' gratuitous ARPs replace
    for name, ip in ips.items():
        held = node_neigh_mac(ip)
        if held:
            h.eq(held, pod_mac(ip), "the node's neighbour entry for %s (%s) names its new pod's MAC" % (ip, name))

    script = ("mkdir -p /tmp/w && echo grown > /tmp/w/index.html && httpd -p 8080 -h /tmp/w; "
              "for i in 1 2 3 4 5; do wget -q -T 3 -O /dev/null http://%s/ && break; sleep 1; done"
              " && echo own=ok || echo own=fail; "
              "wget -q -T 3 -O /dev/null http://%s/ && echo other=ok || echo other=fail; sleep 3600"
              ) % (S["ipa"], S["ipb"])
    create("acme", "grown", "busybox:1.36", ["sh", "-c", script])
    ipg = running_ip("acme", "grown")
    nidx, blocks = tenant_net("acme")
    h.eq(nidx, idx, "acme's network index after growing")
    h.eq(len(blocks), 2, "acme's blocks %r" % blocks)
    blk1 = [b for b in blocks if b != blk0][0]
    h.check(blk1 != S["blk"]["beta"], "acme's second block %d is not beta's" % blk1)
    h.check(ipg in subnet(blk1), "grown %s in acme's second block %s" % (ipg, subnet(blk1)))
    h.eq(len(blocks[blk0]), HOSTS, "containers in acme's first block")
    h.eq(len(blocks[blk1]), 1, "containers in acme's second block")
    out = bridge_addrs(br)
    for b in (blk0, blk1):
        gw = str(subnet(b).network_address + 1)
        h.check(" %s/%d " % (gw, BLOCK) in out, "gateway %s of block %d on %s: %r" % (gw, b, br, out))
    h.eq([link for link in links() if link.startswith(S["prefix"] + "-")],
         sorted("%s-%d" % (S["prefix"], i) for i in (idx, S["idx"]["beta"])), "bridges: still one per tenant")
    h.eq(len([r for r in chain_rules() if " %s " % br in r]), 1, "acme's bridge rule, once: %r" % chain_rules())

    # the node reaches every acme pod, in both blocks
    for name, ip in list(ips.items()) + [("web-a", S["ipa"])]:
        h.check(h.wait_until(lambda: fetch(ip), 30, "http://%s/ (%s) from the node" % (ip, name)),
                "page of %s" % name)
    body = h.wait_until(lambda: fetch(ipg, 8080), 30, "http://%s:8080/ (grown) from the node" % ipg)
    h.check("grown" in body, "page of grown: %r" % body)

    def logs():
        rc, out, _ = h.kubectl(["logs", "grown"], S["tp"].kubeconfig("acme", "alice"))
        return out if rc == 0 and "other=" in out else None
    out = h.wait_until(logs, 60, "grown tried both pods")
    h.check("own=ok" in out, "acme's pod in the second block reaches web-a in the first: %r" % out)
    h.check("other=fail" in out, "acme's pod in the second block does not reach beta's web pod: %r" % out)

    # its last pod gone, the second block is given back; the first stays
    r = S["tpadmin"].delete(h.pods_path("acme", name="grown"))
    h.check(r.status in (200, 202), "delete grown: %s" % r.status)
    h.wait_until(lambda: list(tenant_net("acme")[1]) == [blk0], 60, "acme's second block given back")
    gw1 = str(subnet(blk1).network_address + 1)
    h.check(" %s/" % gw1 not in bridge_addrs(br), "second gateway %s off %s: %r" % (gw1, br, bridge_addrs(br)))
    h.check(not os.path.exists(os.path.join(S["cdir"], "cni", "ipam", "%s-%d" % (S["net"], blk1))),
            "leases of the second block removed")
    h.check(br in links(), "acme's bridge still there")
    h.check(fetch(S["ipa"]), "web-a still serves")
    for name in fill:
        S["tpadmin"].delete(h.pods_path("acme", name=name))
    h.wait_until(lambda: len(tenant_net("acme")[1].get(blk0, [])) == 1, 90, "acme's filler pods gone")


def test_last_pod_of_tenant_frees_its_network():
    br = "%s-%d" % (S["prefix"], S["idx"]["beta"])
    r = S["tpadmin"].delete(h.pods_path("beta", name="web-b"))
    h.check(r.status in (200, 202), "delete web-b: %s" % r.status)
    # ursa-cni removes the bridge, then writes its state: wait for the state
    h.wait_until(lambda: "beta" not in [t for t, _ in state().values()], 60, "beta gone from ursa-cni's state")
    h.check(br not in links(), "beta's bridge %s deleted after its last pod" % br)
    h.check(all(" %s " % br not in r for r in chain_rules()), "beta's rule gone: %r" % chain_rules())
    h.eq(dnat_rule(br), [], "beta's DNAT rule gone")
    h.eq(len(dnat_rule("%s-%d" % (S["prefix"], S["idx"]["acme"]))), 1, "acme's DNAT rule stays")
    h.check(not os.path.exists(os.path.join(S["cdir"], "cni", "ipam", "%s-%d" % (S["net"], S["blk"]["beta"]))),
            "beta's leases removed")
    h.check("%s-%d" % (S["prefix"], S["idx"]["acme"]) in links(), "acme's bridge still there")
    h.check(fetch(S["ipa"]), "acme's web pod still serves")


def test_node_full_is_a_clear_error():
    """Straight to the binary: a /26 range holds one /26 block; a second tenant's ADD fails with
    CNI error 100 before anything is created. The state file is of ursa-cni's first version
    (no "v2" line), which still reads."""
    d = h.make_tmpdir("cni-full")
    with open(os.path.join(d, "ursa-cni.state"), "w") as f:
        f.write("0 acme c1\n")
    conf = {"cniVersion": "0.4.0", "name": "full", "type": "ursa-cni", "bridgePrefix": S["prefix"] + "f",
            "subnet": str(subnet(3, 26)), "tenantPrefixLength": 26, "dataDir": d,
            "runtimeConfig": {"io.kubernetes.cri.pod-annotations": {"ursa.io/tenant": "beta"}}}
    env = dict(os.environ, CNI_COMMAND="ADD", CNI_CONTAINERID="c2", CNI_NETNS="/proc/1/ns/net",
               CNI_IFNAME="eth0", CNI_PATH="/usr/lib/cni")
    p = subprocess.run([CNI_BIN], input=json.dumps(conf), capture_output=True, text=True, env=env, timeout=30)
    h.eq(p.returncode, 1, "exit status of a full node's ADD (%r)" % p.stdout)
    err = json.loads(p.stdout)
    h.eq(err["code"], 100, "CNI error code")
    h.check("no free /26" in err["msg"] and "tenant beta" in err["msg"] and "all 1 blocks" in err["msg"],
            "message %r" % err["msg"])
    h.check(not [link for link in links() if link.startswith(S["prefix"] + "f")], "no bridge made")
    with open(os.path.join(d, "ursa-cni.state")) as f:
        h.eq(f.read(), "0 acme c1\n", "state unchanged")
    # DEL of a container ursa-cni never saw succeeds (CNI: DEL of what is gone is no error)
    env["CNI_COMMAND"] = "DEL"
    p = subprocess.run([CNI_BIN], input=json.dumps(conf), capture_output=True, text=True, env=env, timeout=30)
    h.eq((p.returncode, p.stdout), (0, ""), "DEL of an unknown container")


def test_teardown_leaves_nothing():
    sb = [p["id"] for p in S["node"].probe("list-pods")]
    S.pop("kl").stop()
    sh('containerd_teardown "%s"; containerd_remove_network "%s"' % (S["cdir"], S["cdir"]))
    left = [link for link in links() if link.startswith(S["prefix"])]
    h.eq(left, [], "bridges left")
    h.eq([r for r in chain_rules() if S["prefix"] in r], [], "iptables rules left")
    h.eq([r for r in chain_rules("nat") if S["prefix"] in r], [], "iptables nat rules left")
    cni = os.path.join(S["cdir"], "cni")
    h.eq(sorted(os.listdir(cni)), ["bin", "net.d", "network"], "left in the node's cni dir")
    h.eq(glob.glob("/var/lib/cni/results/%s-*" % S["net"]), [], "libcni cached results")
    h.eq([f for f in glob.glob("/var/lib/cni/results/cni-loopback-*") if os.path.basename(f)[13:-3] in sb], [],
         "libcni cached loopback results")


if __name__ == "__main__":
    h.run(globals())
