#!/usr/bin/python3
"""The SPDY/3.1 codec (ursa/spdy.h, through tests/integration/spdy_probe) against a real containerd's
streaming server: CRI Exec gives a URL; the probe upgrades to SPDY/3.1 with
X-Stream-Protocol-Version v4.channel.k8s.io, opens the error/stdin/stdout/stderr streams, writes
stdin then FIN, and reads stdout, stderr and the exit status (a metav1.Status on the error stream).
containerd's server is Go's spdystream: header blocks compressed with the SPDY/3 dictionary both
ways, its PING answered, its streams replied to.

Run alone: URSA_BUILD_DIR=build-x URSA_SOURCE_DIR=$PWD /usr/bin/python3 tests/integration/test_spdy_exec.py"""

import json
import os
import secrets
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402
import ursa_cri as cri  # noqa: E402

SPDY_PROBE = os.path.join(h.BUILD_DIR, "tests", "spdy_probe")
S = {}


def setup():
    h.require_binary(SPDY_PROBE, "spdy_probe")
    node = cri.CriNode("spdy-1", cgroup_prefix="ursa-spdy").start()
    S["node"] = node
    node.probe("pull", "busybox:1.36")
    logdir = os.path.join(node.top, "logs")
    os.makedirs(logdir)
    pod = ("spdy-exec", secrets.token_hex(8), "default", logdir, 0)
    sb = node.probe("run-pod", *pod)["id"]
    cid = node.probe("create", sb, *pod, "app", "busybox:1.36", "app.log", 64 << 20, "sleep", "600")["id"]
    node.probe("start", cid)
    h.wait_until(lambda: node.probe("cstatus", cid)["state"] == "RUNNING", 30, "container running")
    S["cid"] = cid


def teardown():
    if "node" in S:
        S["node"].teardown()


def spdy_exec(stdin, *cmd):
    rc, out, err = h.run_cmd([SPDY_PROBE, S["node"].endpoint, "exec", S["cid"], stdin] + list(cmd), 60)
    h.check(rc == 0, "spdy_probe rc %d: %s %s" % (rc, out, err))
    return json.loads(out)


def status_of(r):
    h.check(r["error"], "a Status on the error stream: %r" % r)
    return json.loads(r["error"])


def test_exec_stdin_stdout_exit_code():
    """sh -c 'cat; echo done; exit 3' with stdin: stdout has stdin then done, the error stream's
    Status says NonZeroExitCode with cause ExitCode 3."""
    r = spdy_exec("hello from stdin\nsecond line\n", "sh", "-c", "cat; echo done; echo oops >&2; exit 3")
    h.eq(r["http_status"], 101, "upgrade answered")
    h.eq(r["protocol"], "v4.channel.k8s.io", "negotiated stream protocol")
    h.check(r["all_replied"], "SYN_REPLY for all four streams")
    h.eq(r["stdout"], "hello from stdin\nsecond line\ndone\n", "stdout: stdin echoed by cat, then done")
    h.eq(r["stderr"], "oops\n", "stderr stream")
    st = status_of(r)
    h.eq(st.get("status"), "Failure", "status of a non-zero exit")
    h.eq(st.get("reason"), "NonZeroExitCode", "reason")
    causes = st.get("details", {}).get("causes", [])
    h.eq([(c.get("reason"), c.get("message")) for c in causes], [("ExitCode", "3")], "exit code cause")
    h.eq(r["pings"], 1, "our PING answered by spdystream")


def test_exec_success_and_large_output():
    """Exit 0 gives a Success status; 300 KB of stdout arrives whole (several DATA frames, beyond the
    64 KiB initial window: our WINDOW_UPDATEs do not upset the server)."""
    r = spdy_exec("", "sh", "-c", "head -c 300000 /dev/zero | tr '\\0' x")
    h.eq(len(r["stdout"]), 300000, "stdout length")
    h.check(set(r["stdout"]) == {"x"}, "stdout content")
    h.eq(status_of(r).get("status"), "Success", "status of exit 0")


def test_exec_missing_command():
    """A command that does not exist: a Failure status on the error stream, no crash."""
    r = spdy_exec("", "/no/such/binary")
    st = status_of(r)
    h.eq(st.get("status"), "Failure", "status of a missing command")
    h.check("no such file" in st.get("message", "").lower() or "not found" in st.get("message", "").lower(),
            "message names the missing file: %r" % st.get("message"))


if __name__ == "__main__":
    h.run(globals())
