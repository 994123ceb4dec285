#!/usr/bin/python3
"""Image pull secrets reach a registry that asks for credentials.

Set-up: a CRI node (tests/lib/ursa_cri.py: containerd, CNI, the test registry for pause:3.9), a
second docker-registry (the CNCF Distribution registry) on a free loopback port with htpasswd
auth (a bcrypt hash made by Python's crypt) holding busybox:1.36 pushed with skopeo and
credentials, a certs.d hosts.toml so the node's containerd reaches it over plain HTTP, a region
(ursa_region.start()) and ursa-kubelet --runtime cri.

Checks: a pod naming 127.0.0.1:<port>/library/busybox:1.36 with a docker-registry secret holding
the right password runs (its log; the registry's log shows the authenticated pull by
containerd); one whose secret holds a wrong password and one without a secret get ErrImagePull
with the registry's refusal (401 Unauthorized), then ImagePullBackOff, and a kubelet Warning
Failed event saying so; the good pod stays Running meanwhile. Needs root.

Run alone: URSA_BUILD_DIR=build /usr/bin/python3 tests/integration/test_pull_auth.py"""

import base64
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402
import ursa_region  # noqa: E402

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import crypt  # noqa: E402 - deprecated in 3.11 (removed in 3.13); Debian's libxcrypt gives $2b$

NODE = "pauth-node-1"
USER = "puller"
PASSWORD = "s3cret-" + h.uniq("pw")
S = {}
q = cri.q


class AuthRegistry:
    """docker-registry on a free 127.0.0.1 port asking for htpasswd credentials (USER/PASSWORD),
    with busybox:1.36 pushed; access log on (info) to see who pulled what."""

    def __init__(self):
        self.dir = h.make_tmpdir("authreg")
        self.port = None
        self.log = os.path.join(self.dir, "registry.log")
        h._logs.append(("auth registry", self.log))

    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    def _write_config(self):
        with open(os.path.join(self.dir, "htpasswd"), "w") as f:
            f.write("%s:%s\n" % (USER, crypt.crypt(PASSWORD, crypt.mksalt(crypt.METHOD_BLOWFISH))))
        with open(os.path.join(self.dir, "config.yml"), "w") as f:
            f.write("""version: 0.1
log:
  level: info
storage:
  filesystem:
    rootdirectory: {d}/storage
  cache:
    blobdescriptor: inmemory
http:
  addr: 127.0.0.1:{port}
  secret: {secret}
auth:
  htpasswd:
    realm: ursa-test
    path: {d}/htpasswd
""".format(d=self.dir, port=self.port, secret=h.uniq("s")))
        with open(os.path.join(self.dir, "policy.json"), "w") as f:
            f.write('{"default":[{"type":"insecureAcceptAnything"}]}\n')

    def _code(self, creds=None):
        args = ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "2"]
        if creds:
            args += ["-u", creds]
        _, out, _ = h.run_cmd(args + ["http://%s/v2/" % self.host], 10)
        return out.strip()

    def start(self, layout):
        h.at_cleanup(self.stop)
        for _ in range(3):  # the free port may be taken before the registry binds it
            self.port = h.free_port()
            self._write_config()
            cri.sh("_node_spawn %s %s \"$(command -v docker-registry)\" serve %s"
                   % (q(self.pidfile), q(self.log), q(os.path.join(self.dir, "config.yml"))))
            try:
                h.wait_until(lambda: self._code() == "401", 20, "auth registry on %s asks for credentials" % self.host)
                break
            except Exception:  # noqa: BLE001 - next port
                self.stop()
        else:
            raise h.HarnessError("the auth registry did not start: %s" % h.log_tail(self.log))
        # the bcrypt hash of Python's crypt is one the registry accepts
        h.eq(self._code("%s:%s" % (USER, PASSWORD)), "200", "/v2/ with the right credentials")
        h.eq(self._code("%s:wrong" % USER), "401", "/v2/ with a wrong password")
        cri.sh("skopeo --policy %s copy --quiet --dest-tls-verify=false --dest-creds %s %s %s >&2"
               % (q(os.path.join(self.dir, "policy.json")), q("%s:%s" % (USER, PASSWORD)),
                  q("oci:%s:busybox-1.36" % layout), q("docker://%s/library/busybox:1.36" % self.host)),
               timeout=120)
        return self

    @property
    def pidfile(self):
        return os.path.join(self.dir, "registry.pid")

    def stop(self):
        cri.sh("_node_stop %s \"$(command -v docker-registry || echo /usr/bin/docker-registry)\" docker-registry"
               % q(self.pidfile), check=False)

    def log_text(self):
        with open(self.log, errors="replace") as f:
            return f.read()


def setup():
    cri.require()
    node = cri.CriNode(NODE, cgroup_prefix="ursa-pauth").start()
    S["node"] = node
    reg = AuthRegistry().start(node.reg.layout)
    S["reg"] = reg
    # containerd reads config_path's certs.d at each pull: plain HTTP to the auth registry
    cri.sh("mkdir -p %s; _hosts_toml %s %s >%s" % (
        q(os.path.join(node.dir, "certs.d", reg.host)), q("http://" + reg.host), q("http://" + reg.host),
        q(os.path.join(node.dir, "certs.d", reg.host, "hosts.toml"))))
    S["image"] = "%s/library/busybox:1.36" % reg.host
    S["log_mark"] = len(reg.log_text())  # the push's lines end here
    S.update(ursa_region.start(tenants=("acme",)))
    node_kc = S["rm"].kubeconfig("system", "system:node:" + NODE, ("system:nodes",))
    S["kl"] = ursa_region.Kubelet(node_kc, ["--node-name", NODE, "--cpu", "4", "--memory", "8Gi"] +
                                  node.kubelet_args(), label="kubelet-pauth").start()
    S["kc"] = S["tp"].kubeconfig("acme", "alice")
    h.wait_until(lambda: ursa_region.node_ready(S["admin"], NODE), 60, "node %s Ready" % NODE)


def teardown():
    if S.get("kl"):
        S["kl"].stop()
    if S.get("node"):
        S["node"].teardown()
    if S.get("reg"):
        S["reg"].stop()


def secret(name, password):
    auth = base64.b64encode(("%s:%s" % (USER, password)).encode()).decode()
    cfg = {"auths": {S["reg"].host: {"username": USER, "password": password, "auth": auth}}}
    r = S["tpadmin"].post("/api/v1/tenants/acme/namespaces/default/secrets", {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name},
        "type": "kubernetes.io/dockerconfigjson",
        "data": {".dockerconfigjson": base64.b64encode(json.dumps(cfg).encode()).decode()}})
    h.expect_status(r, 201, "create secret %s" % name)


def make_pod(name, pull_secret=None):
    c = {"name": "c", "image": S["image"], "command": ["sh", "-c", "echo pulled-with-auth; sleep 3600"],
         "imagePullPolicy": "Always"}
    p = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
         "spec": {"containers": [c], "terminationGracePeriodSeconds": 2, "nodeName": NODE}}
    if pull_secret:
        p["spec"]["imagePullSecrets"] = [{"name": pull_secret}]
    r = S["tpadmin"].post(h.pods_path("acme"), p)
    h.expect_status(r, 201, "create pod %s" % name)
    return r.json["metadata"]["uid"]


def status(name):
    r = S["tpadmin"].get(h.pods_path("acme", name=name))
    return r.json.get("status", {}) if r.status == 200 else {}


def cstatus(name):
    return (status(name).get("containerStatuses") or [{}])[0]


def kubelet_events(pod, reason):
    r = S["tpadmin"].get("/api/v1/tenants/acme/namespaces/default/events")
    h.expect_status(r, 200, "list events")
    return [e for e in r.json["items"] if (e.get("source") or {}).get("component") == "kubelet"
            and e["involvedObject"].get("name") == pod and e.get("reason") == reason]


def test_pod_with_right_credentials_runs():
    secret("good-cred", PASSWORD)
    S["good_uid"] = make_pod("good", "good-cred")
    h.wait_until(lambda: status("good").get("phase") == "Running", 60, "pod good Running")
    cs = cstatus("good")
    h.check(cs.get("ready") and "running" in cs.get("state", {}), "container status %s" % cs)
    S["good_cid"] = cs["containerID"]
    out = h.wait_until(lambda: (lambda o: o if "pulled-with-auth" in o else None)(
        h.kubectl(["logs", "good"], S["kc"])[1]), 30, "kubectl logs good")
    h.eq(out, "pulled-with-auth\n", "log of pod good")
    log = S["kl"].log_text()
    h.check('msg="image pull credentials" pod="default/good" container=c registry=' in log,
            "the kubelet found credentials for %s in good-cred" % S["reg"].host)
    # the registry saw containerd fetch the manifest with credentials it accepted (after the push's
    # lines; it answers anyone else 401, as the other tests show)
    pulls = [line for line in S["reg"].log_text()[S["log_mark"]:].splitlines()
             if 'msg="authorized request"' in line and "/v2/library/busybox/manifests/1.36" in line
             and 'useragent="containerd/' in line]
    h.check(pulls, "the registry's log shows the authenticated pull by containerd:\n%s"
            % S["reg"].log_text()[S["log_mark"]:][-3000:])


def _fails_with_unauthorized(name):
    seen = []

    def reason():
        w = cstatus(name).get("state", {}).get("waiting", {})
        r = w.get("reason")
        if r and (not seen or seen[-1][0] != r):
            seen.append((r, w.get("message", "")))
        return r == "ImagePullBackOff" and any(s[0] == "ErrImagePull" for s in seen)
    h.wait_until(reason, 60, "%s: ErrImagePull then ImagePullBackOff" % name, interval=0.1)
    msg = dict(seen)["ErrImagePull"]
    h.check("failed to pull" in msg and S["image"] in msg and "401 Unauthorized" in msg,
            "ErrImagePull message of %s carries the registry's refusal: %r" % (name, msg))
    h.eq(dict(seen)["ImagePullBackOff"], 'Back-off pulling image "%s"' % S["image"], "back-off message")
    h.eq(status(name).get("phase"), "Pending", "phase of %s" % name)
    failed = h.wait_until(lambda: [e for e in kubelet_events(name, "Failed")
                                   if e["message"].startswith('Failed to pull image "%s": ' % S["image"])],
                          20, "Failed event of %s" % name)
    h.check(all(e["type"] == "Warning" for e in failed), "Failed events are warnings")
    h.check(any("401 Unauthorized" in e["message"] for e in failed),
            "the Failed event carries the refusal: %r" % [e["message"] for e in failed])
    h.check(kubelet_events(name, "BackOff"), "BackOff event of %s" % name)
    return msg


def test_wrong_password_is_refused():
    secret("bad-cred", "not-the-password")
    mark = len(S["reg"].log_text())
    make_pod("wrongpw", "bad-cred")
    _fails_with_unauthorized("wrongpw")
    log = S["kl"].log_text()
    h.check('msg="image pull credentials" pod="default/wrongpw" container=c registry=' in log,
            "the kubelet handed the (wrong) credentials of bad-cred to the pull")
    # the registry refused USER's wrong password (htpasswd: "authentication failure"), not merely
    # a missing one ("invalid authorization credential")
    refused = [line for line in S["reg"].log_text()[mark:].splitlines()
               if "authentication failure" in line and "containerd" in line]
    h.check(refused, "registry log shows a refused credential:\n%s" % S["reg"].log_text()[mark:][-3000:])


def test_no_secret_is_refused():
    make_pod("nosecret")
    _fails_with_unauthorized("nosecret")
    h.check('pod="default/nosecret" container=c registry=' not in S["kl"].log_text(),
            "no credentials for a pod without pull secrets")


def test_good_pod_undisturbed():
    time.sleep(2)
    cs = cstatus("good")
    h.eq(status("good").get("phase"), "Running", "phase of good")
    h.eq((cs.get("containerID"), cs.get("restartCount")), (S["good_cid"], 0), "good's container unchanged")
    h.check(S["node"].task_pid(S["good_cid"]), "good's container still runs on the node")
    for name in ("good", "wrongpw", "nosecret"):
        r = S["tpadmin"].delete(h.pods_path("acme", name=name), {"gracePeriodSeconds": 0})
        h.check(r.status in (200, 202), "delete %s: %s" % (name, r.status))


if __name__ == "__main__":
    h.run(globals())
