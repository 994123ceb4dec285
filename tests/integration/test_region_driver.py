"""ursa-region (bench/ursa-region.c, issue 21's load driver) against a small real region: a gateway
(with its etcd), one tenant partition with its controller manager and scheduler, one resource
manager with 20 hollow nodes. `tenants` creates tenants (and again: idempotent), `load` drives a
short load through the gateway with the tenants' own signed tokens and writes calls.tsv, pods.tsv,
acked.jsonl and load.json, `verify` passes; then verify must fail when an acknowledged ConfigMap is
deleted behind its back, another's data changed, and a pod is added to a Deployment (more Running
pods than replicas)."""
import json
import os
import secrets
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_region  # noqa: E402

B = h.BUILD_DIR
REGION_BIN = os.path.join(B, "bench", "ursa-region")
RM_BIN = os.path.join(B, "src", "resource-manager", "ursa-rm-apiserver")
KL_BIN = os.path.join(B, "src", "kubelet", "ursa-kubelet")
SCHED_BIN = os.path.join(B, "src", "scheduler", "ursa-scheduler")
GW_BIN = os.path.join(B, "src", "gateway", "ursa-gateway")
NODES = 20
TENANTS = 4
S = {}


def proc(name, args):
    d = h.make_tmpdir(name)
    log = os.path.join(d, name + ".log")
    h._logs.append((name, log))
    return h.spawn(args, log)


def region(*args, timeout=300):
    """Runs ursa-region; returns (exit code, stdout, the RESULT line's JSON or None)."""
    p = subprocess.run([REGION_BIN] + list(args), capture_output=True, text=True, timeout=timeout)
    result = None
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            result = json.loads(line[7:])
    if p.returncode not in (0, 1):
        print(p.stdout[-3000:], p.stderr[-3000:])
    return p.returncode, p.stdout + p.stderr, result


def setup():
    for b in (REGION_BIN, RM_BIN, KL_BIN, SCHED_BIN, GW_BIN):
        h.require_binary(b, os.path.basename(b))
    idkey = os.path.join(h.make_tmpdir("idkey"), "identity.key")
    with open(idkey, "w") as f:
        f.write(secrets.token_hex(32))
    ida = ["--identity-key-file", idkey]
    gw_etcd = h.Etcd(name="etcd-gw")
    gw_etcd.start()
    e = h.Etcd(name="etcd-rm1")
    e.start()
    rm = ursa_region.RmServer(e, partition_id="rm-1", extra_args=ida, log_level="warn")
    rm.start()
    e = h.Etcd(name="etcd-tp1")
    e.start()
    tp = h.ApiServer(e, partition_id="tp-1", extra_args=ida, log_level="warn")
    ursa_region.share_credentials(tp, rm)
    tp.start()
    for pid, kind, url, zone in (("tp-1", "tp", tp.url, None), ("rm-1", "rm", rm.url, "z-1")):
        a = [h.URSACTL_BIN, "register", "--region-file", os.path.join(tp.dir, "region.json"), "--signing-key",
             tp.signing_key, "--certificate-authority", tp.ca_file, "--gateway-etcd", gw_etcd.endpoints, "--kind",
             kind, "--name", pid, "--endpoints", url]
        if zone:
            a += ["--zone", zone]
        h.must_run(a, 60)
    tp.admin().post("/apis/ursa.io/v1/resourcemanagers", {"apiVersion": "ursa.io/v1", "kind": "ResourceManager",
                    "metadata": {"name": "rm-1"}, "spec": {"endpoints": [rm.url], "zone": "z-1"}})
    rm.admin().post("/apis/ursa.io/v1/tenantpartitions", {"apiVersion": "ursa.io/v1", "kind": "TenantPartition",
                    "metadata": {"name": "tp-1"}, "spec": {"endpoints": [tp.url]}})
    token = os.path.join(tp.dir, "admin.token")
    with open(token, "w") as f:
        f.write(tp.admin_token + "\n")
    gw_args = ["--etcd-servers", gw_etcd.endpoints, "--tls-cert-file", tp.cert_file, "--tls-private-key-file",
               tp.key_file, "--token-auth-file", tp.token_file, "--token-signing-public-key", tp.signing_pub,
               "--partition-ca-file", tp.ca_file, "--partition-token-file", token, "--log-level", "warn"] + ida
    S["gateway"] = lambda name, extra: start_gateway(name, gw_args + extra, tp)
    gw, admin = S["gateway"]("gateway", [])
    proc("kubelet", [KL_BIN, "--kubeconfig", rm.admin_kubeconfig(), "--port", "0", "--root-dir",
                     h.make_tmpdir("klroot"), "--hollow-nodes", str(NODES), "--hollow-prefix", "rm-1-n", "--zone",
                     "z-1", "--cpu", "8", "--memory", "64Gi", "--max-pods", "110", "--log-level", "warn"])
    h.wait_until(lambda: len(rm.admin().get("/api/v1/nodes").json.get("items", [])) >= NODES, 120,
                 "%d hollow nodes" % NODES, interval=1)
    kc = tp.admin_kubeconfig()
    proc("tp-controller-manager", [h.TP_CM_BIN, "--kubeconfig", kc, "--log-level", "warn"])
    proc("scheduler", [SCHED_BIN, "--kubeconfig", kc, "--partition-id", "tp-1", "--identity", "t",
                       "--log-level", "warn"])
    out = h.make_tmpdir("region-out")
    env = os.path.join(out, "region.env")
    with open(env, "w") as f:
        f.write("GATEWAY_URL=%s\nCA_FILE=%s\nSIGNING_KEY=%s\nADMIN_TOKEN_FILE=%s\nTP_URLS=\"tp-1=%s\"\n"
                "RM_URLS=\"rm-1=%s\"\nNODES=%d TENANTS=%d\n"
                % (gw, tp.ca_file, tp.signing_key, token, tp.url, rm.url, NODES, TENANTS))
    S.update(out=out, env=env, admin=admin, tp=tp)


def start_gateway(name, args, tp):
    port = h.free_port()
    proc(name, [GW_BIN, "--listen", "127.0.0.1:%d" % port] + args)
    url = "https://127.0.0.1:%d" % port
    admin = h.Client(url, tp.ca_file, tp.admin_token, 60)
    h.wait_ok(admin, "/readyz")
    return url, admin


def read_tsv(name):
    with open(os.path.join(S["out"], name)) as f:
        lines = f.read().splitlines()
    return lines[0].split("\t"), [ln.split("\t") for ln in lines[1:]]


def test_tenants_created_and_idempotent():
    rc, out, res = region("tenants", "--env", S["env"], "--concurrency", "3")
    h.eq(rc, 0, "exit code: " + out[-2000:])
    h.eq((res["created"], res["existed"], res["failed"]), (TENANTS, 0, 0), "first run")
    for i in range(1, TENANTS + 1):
        h.expect_status(S["admin"].get("/api/v1/tenants/t-%05d/namespaces/default" % i), 200, "default namespace")
    rc, out, res = region("tenants", "--env", S["env"])
    h.eq(rc, 0, "second run: " + out[-2000:])
    h.eq((res["created"], res["existed"]), (0, TENANTS), "second run: every tenant exists")


def test_load_writes_its_files():
    rc, out, res = region("load", "--env", S["env"], "--out", S["out"], "--duration", "8", "--rate", "10",
                          "--burst-rate", "20", "--burst-seconds", "2", "--active-share", "1", "--replicas", "2",
                          "--workers", "4", "--step-seconds", "2", "--wait", "60", timeout=200)
    h.eq(rc, 0, "exit code: " + out[-3000:])
    h.check("load: " in out and "pods scheduled" in out, "progress lines: " + out[-2000:])
    with open(os.path.join(S["out"], "load.json")) as f:
        load = json.load(f)
    h.eq(load["pods_scheduled"], res["pods_scheduled"], "RESULT and load.json agree")
    h.check(load["pods_scheduled"] >= 8 * 10 + 2 * 20, "pods scheduled: %s" % load["pods_scheduled"])
    h.check(load["writes_acked"] > 20, "writes acknowledged: %s" % load["writes_acked"])
    h.eq(load["observer"]["node_changes"], 0, "no pod changed nodes")
    h.check(load["pods_running"] >= 0.9 * load["pods_seen"] > 0, "pods ran: %s of %s" %
            (load["pods_running"], load["pods_seen"]))
    head, rows = read_tsv("calls.tsv")
    h.eq(head, ["t_ms", "verb", "resource", "scope", "latency_us", "code"], "calls.tsv header")
    h.check(len(rows) >= load["calls"] - 5, "calls.tsv holds every call: %d of %d" % (len(rows), load["calls"]))
    verbs = {r[1] for r in rows}
    for v in ("create", "patch", "update", "delete", "get", "list", "watch-start"):
        h.check(v in verbs, "verb %s in calls.tsv (%s)" % (v, sorted(verbs)))
    h.check(all(r[3] in ("resource", "namespace", "cluster") for r in rows), "scopes")
    h.check(["create", "deployments", "resource"] in [r[1:4] for r in rows], "a create is resource scope")
    h.check(["list", "pods", "namespace"] in [r[1:4] for r in rows], "a namespace's pods list")
    h.check(["list", "deployments", "cluster"] in [r[1:4] for r in rows], "a tenant's deployments list")
    head, pods = read_tsv("pods.tsv")
    h.eq(head, ["tenant", "namespace", "name", "uid", "created_ms", "running_ms", "node"], "pods.tsv header")
    h.eq(len(pods), load["pods_seen"], "a pods.tsv line per pod seen")
    ran = [p for p in pods if p[5]]
    h.check(ran and all(int(p[5]) >= int(p[4]) and p[6].startswith("rm-1-n") for p in ran), "Running pods' rows")
    h.check(all(p[0].startswith("t-0000") for p in pods), "only the load's pods")
    with open(os.path.join(S["out"], "acked.jsonl")) as f:
        acks = [json.loads(ln) for ln in f]
    h.eq(len([a for a in acks if a["op"] != "unknown"]), load["writes_acked"], "acked.jsonl lines")
    h.check({a["kind"] for a in acks} >= {"namespaces", "configmaps", "secrets", "services", "deployments"},
            "every kind acknowledged")
    h.check(any(a["op"] == "delete" for a in acks), "deletes acknowledged")
    S["acks"] = acks


def last_state():
    st = {}
    for a in S["acks"]:
        st[(a["kind"], a["tenant"], a["ns"], a["name"])] = a
    return st


def test_verify_passes():
    rc, out, res = region("verify", "--env", S["env"], "--out", S["out"], "--wait", "90", timeout=200)
    h.eq(rc, 0, "verify exit code: " + out[-3000:])
    with open(os.path.join(S["out"], "verify.json")) as f:
        v = json.load(f)
    h.check(v["pass"] and v["lost"] == 0 and v["missing"] == 0 and v["mismatched"] == 0, "verify.json: %s" % v)
    h.check(v["objects_checked"] > 10 and v["pods"]["deployments_checked"] > 0, "checked something: %s" % v)
    h.eq(v["pods"]["over_replicas"], 0, "no Deployment over its replicas")


def test_verify_catches_loss_change_and_extra_pod():
    admin = S["admin"]
    cms = [a for k, a in last_state().items() if k[0] == "configmaps" and a["op"] == "put"]
    deps = [a for k, a in last_state().items() if k[0] == "deployments" and a["op"] == "put"]
    h.check(len(cms) >= 2 and deps, "live configmaps and deployments to tamper with")
    lost, changed, dep = cms[0], cms[1], deps[0]
    base = "/api/v1/tenants/%s/namespaces/%s/configmaps/" % (lost["tenant"], lost["ns"])
    h.expect_status(admin.delete(base + lost["name"]), 200, "delete a configmap behind the load's back")
    path = "/api/v1/tenants/%s/namespaces/%s/configmaps/%s" % (changed["tenant"], changed["ns"], changed["name"])
    h.expect_status(admin.patch(path, {"data": {"gen": "tampered"}}), 200, "change a configmap's data")
    node = next(p[6] for p in read_tsv("pods.tsv")[1] if p[6])
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "extra", "labels": {"app": dep["name"], "ursa-region": "load"}},
           "spec": {"nodeName": node, "tolerations": [{"key": "ursa.io/hollow", "operator": "Exists",
                                                            "effect": "NoSchedule"}],
                    "containers": [{"name": "c", "image": "pause"}]}}
    # a pod outside the ReplicaSet's selector ownership: bound, so it runs at once, one over replicas
    h.expect_status(admin.post("/api/v1/tenants/%s/namespaces/%s/pods" % (dep["tenant"], dep["ns"]), pod), 201,
                    "an extra Running pod of a Deployment")
    rc, out, res = region("verify", "--env", S["env"], "--out", S["out"], "--wait", "20", timeout=200)
    h.eq(rc, 1, "verify must fail: " + out[-3000:])
    with open(os.path.join(S["out"], "verify.json")) as f:
        v = json.load(f)
    h.check(not v["pass"], "pass false")
    h.eq(v["missing"], 1, "the deleted configmap is missing: %s" % v["examples"])
    h.eq(v["lost"], 1, "lost")
    h.eq(v["mismatched"], 1, "the changed configmap mismatches: %s" % v["examples"])
    h.check(v["pods"]["over_replicas"] >= 1, "a Deployment over its replicas: %s" % v["pods"])
    probs = {(e["object"], e["problem"]) for e in v["examples"]}
    h.check(("configmaps/%s/%s/%s" % (lost["tenant"], lost["ns"], lost["name"]), "missing") in probs,
            "the lost object named: %s" % probs)


def test_writes_retried_after_429():
    """A gateway that lets each tenant 4 requests/s: the load's writes meet 429s, wait as the
    gateway says and retry; every acknowledged write is there (verified through the first gateway)."""
    slow, _ = S["gateway"]("gateway-slow", ["--tenant-qps", "4", "--tenant-burst", "4"])
    out = h.make_tmpdir("region-out-429")
    env = os.path.join(out, "region.env")
    with open(S["env"]) as f:
        text = f.read()
    with open(env, "w") as f:
        f.write(text.replace("GATEWAY_URL=", "GATEWAY_URL=%s\nOLD_GATEWAY_URL=" % slow, 1))
    rc, log, res = region("load", "--env", env, "--out", out, "--duration", "4", "--rate", "8", "--burst-seconds",
                          "0", "--active-share", "0.5", "--replicas", "1", "--workers", "2", "--read-rate", "1",
                          "--watches", "0", "--run", "slow", "--wait", "60", timeout=250)
    h.eq(rc, 0, "exit code: " + log[-3000:])
    with open(os.path.join(out, "load.json")) as f:
        load = json.load(f)
    h.check(load["status_429"] > 0 and load["retries"] > 0, "429s met and retried: %s %s" %
            (load["status_429"], load["retries"]))
    h.eq(load["writes_unknown"], 0, "every write's outcome known")
    with open(os.path.join(out, "region.env"), "w") as f:
        f.write(text)
    rc, log, res = region("verify", "--env", os.path.join(out, "region.env"), "--out", out, "--wait", "60",
                          timeout=200)
    h.eq(rc, 0, "verify after 429s: " + log[-3000:])
    h.check(res["pass"] and res["writes_acknowledged"] > 10, "verify: %s" % res)


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=300)
