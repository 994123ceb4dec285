"""deploy/local-up.sh's region in a temporary directory, for end-to-end tests: its own state
directory (URSA_STATE), every port moved by a free offset (URSA_PORT_OFFSET) and pod addresses
from an unused 10.X.0.0/16 (URSA_POD_CIDR), so the usual region on 6443/7101/... and .ursa/ is
not touched. Needs root when the nodes run on containerd."""

import os
import random
import shutil
import socket
import subprocess
import time

import ursa_harness as h

DEPLOY = os.path.join(h.SOURCE_DIR, "deploy")
URSACTL = os.path.join(h.BUILD_DIR, "src", "ursactl", "ursactl")
# Every port of deploy/lib/components.sh's table (before the offset).
PORTS = (6443, 7001, 7002, 7101, 7102, 7201, 7202, 7401, 10251, 10252, 10261, 10262, 10271, 10272,
         10281, 10282, 23791, 23792, 23801, 23802, 23891, 23892, 23901, 23902, 23991, 24001)


def port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def pick_offset():
    for _ in range(200):
        off = random.randrange(1000, 8500, 10)
        if all(port_free(p + off) for p in PORTS):
            return off
    raise h.HarnessError("no free port offset")


def pick_cidr():
    used = h.must_run(["ip", "-4", "addr"]) + h.must_run(["ip", "-4", "route"])
    links = h.must_run(["ip", "-o", "link"])
    for _ in range(100):
        x = random.randrange(200, 250)
        if " 10.%d." % x not in used and "ursa-%d-" % x not in links and "ut-%d-" % x not in links:
            return x
    raise h.HarnessError("no unused 10.X.0.0/16")


class LocalRegion:
    """One local-up region under tmp/state. up() starts it (raises with local-up's output when it
    fails), down() purges it (safe to call when up() never ran or failed)."""

    def __init__(self, tmp, runtime="auto"):
        self.tmp = tmp
        self.state = os.path.join(tmp, "state")
        self.off = pick_offset()
        self.x = pick_cidr()
        self.runtime = runtime
        self.up_out = ""
        self.token = None

    def env(self, extra=None):
        e = dict(os.environ, URSA_STATE=self.state, URSA_PORT_OFFSET=str(self.off),
                 URSA_POD_CIDR="10.%d.0.0/16" % self.x, URSA_BUILD_DIR=h.BUILD_DIR,
                 URSA_IMAGE_CACHE=os.path.join(self.tmp, "images"), URSA_RUNTIME=self.runtime)
        e.update(extra or {})
        return e

    def script(self, name, *args, timeout=600, extra=None):
        """Runs deploy/NAME ARGS; returns (rc, stdout, stderr), logged to tmp/scripts.log."""
        t0 = time.monotonic()
        p = subprocess.run(["bash", os.path.join(DEPLOY, name)] + list(args), capture_output=True, text=True,
                           timeout=timeout, env=self.env(extra))
        with open(os.path.join(self.tmp, "scripts.log"), "a") as f:
            f.write("=== %s %s: rc %d in %.1fs\n%s%s\n" % (name, " ".join(args), p.returncode,
                                                          time.monotonic() - t0, p.stdout, p.stderr))
        return p.returncode, p.stdout, p.stderr

    def up(self, extra=None):
        t0 = time.monotonic()
        rc, out, err = self.script("local-up.sh", "--no-build", extra=extra)
        self.up_out = out + err
        with open(os.path.join(self.tmp, "local-up.out"), "w") as f:
            f.write(self.up_out)
        h.check(rc == 0, "local-up.sh failed (rc %d):\n%s" % (rc, self.up_out[-6000:]))
        print("local-up.sh took %.1fs" % (time.monotonic() - t0), flush=True)
        self.token = open(os.path.join(self.state, "tokens.csv")).read().split(",")[0]
        return self

    def down(self):
        if os.path.isdir(self.state):
            # the daemons' logs outlive --purge in the temporary directory, which a failed run
            # keeps: a daemon that died during the tests can be looked at afterwards
            for root, _dirs, files in os.walk(self.state):
                for name in files:
                    if name.endswith(".log"):
                        src = os.path.join(root, name)
                        dst = os.path.join(self.tmp, "logs", os.path.relpath(src, self.state))
                        os.makedirs(os.path.dirname(dst), exist_ok=True)
                        try:
                            shutil.copyfile(src, dst)
                        except OSError as e:
                            print("could not keep %s: %s" % (src, e))
            rc, out, err = self.script("local-down.sh", "--purge")
            print("teardown local-down.sh --purge: rc %d\n%s" % (rc, (out + err)[-3000:]))

    def port(self, base):
        return base + self.off

    def admin(self, base):
        """An admin client of the component on base port (7101: tp-1, 7201: rm-az-1, 6443: HAProxy)."""
        return h.Client("https://127.0.0.1:%d" % self.port(base), os.path.join(self.state, "ca.crt"),
                        self.token, timeout=10)

    def admin_kubeconfig(self):
        """The admin kubeconfig local-up wrote: tenant system, through HAProxy."""
        return os.path.join(self.state, "admin.kubeconfig")

    def kubeconfig(self, tenant, user, groups=None):
        """A kubeconfig for user of tenant through HAProxy, made by ursactl (tenant admin without groups)."""
        path = os.path.join(self.tmp, "%s-%s.kubeconfig" % (tenant, user))
        args = [URSACTL, "kubeconfig", "--tenant", tenant, "--user", user]
        if groups:
            args += ["--groups", groups]
        out = subprocess.run(args, capture_output=True, text=True, timeout=30, env=self.env({"URSA_HOME": self.state}))
        h.check(out.returncode == 0, "ursactl kubeconfig: %s" % out.stderr)
        with open(path, "w") as f:
            f.write(out.stdout)
        return path
