#!/usr/bin/python3
"""The systemd units of deploy/systemd, installed by deploy/install.sh into a temporary root.

1. `systemd-analyze verify --root=ROOT` accepts every unit (as instances) and the haproxy.service
   drop-in without a word: unknown keys, bad values, a missing binary or a missing dependency
   would be reported. ROOT holds what install.sh installed plus copies of this machine's
   /usr/lib/systemd/system, /usr/bin/etcd, /usr/sbin/haproxy and /usr/bin/containerd (Debian's
   containerd.service, which ursa-kubelet-cri@ requires), which the units rely on.
2. Every unit's settings are exactly those of its example env file, and every flag its
   ExecStart passes is in its daemon's --help.
3. A small region runs from the units: each daemon is started with the command line systemd
   would run, ExecStart of the installed unit with its specifiers and the variables of
   /etc/ursa/<kind>/<instance>.env (the example with ports and paths filled in) expanded as
   systemd expands them, the unit's environment only, and for a unit with User= as an
   unprivileged user. Each must become healthy: etcd /health, API servers and the gateway
   /readyz, leases held by the controller managers and the scheduler, the kubelets' nodes
   Ready, and a request through HAProxy and the gateway answered by the tenant partition.
Every server listens on 127.0.0.1.
"""

import base64
import grp
import os
import pwd
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib"))
import ursa_harness as h  # noqa: E402

INSTALL = os.path.join(h.SOURCE_DIR, "deploy", "install.sh")
UNIT_SRC = os.path.join(h.SOURCE_DIR, "deploy", "systemd")
UNIT_DIR = "/etc/systemd/system"
SYSTEMD_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# unit template -> (settings kind, instance used here)
UNITS = {
    "ursa-etcd@.service": ("etcd", None),
    "ursa-tp-apiserver@.service": ("tp-apiserver", "tp-1"),
    "ursa-rm-apiserver@.service": ("rm-apiserver", "rm-az-1"),
    "ursa-tp-controller-manager@.service": ("tp-controller-manager", "tp-1"),
    "ursa-rm-controller-manager@.service": ("rm-controller-manager", "rm-az-1"),
    "ursa-scheduler@.service": ("scheduler", "tp-1"),
    "ursa-kubelet@.service": ("kubelet", "az-1-host-1"),
    "ursa-kubelet-cri@.service": ("kubelet-cri", "az-1-host-2"),
    "ursa-hollow-kubelet@.service": ("hollow-kubelet", "az-1-hollow"),
    "ursa-gateway@.service": ("gateway", "1"),
}
# settings kind -> its directory /etc/ursa/<dir>/ when not its own (a node runs one kubelet unit
# or the other, with the same /etc/ursa/kubelet/<node>.env)
ENV_DIRS = {"kubelet-cri": "kubelet"}
ETCDS = ("tp-1", "rm-az-1", "gateway")
HOLLOW_NODES = 2

S = {}   # state shared by the tests: root, tmp, ports, pki paths, processes


# ---------------------------------------------------------------------------------------------
# systemd's unit and environment file syntax, the parts the units use

def parse_unit(path):
    """{section: [(key, value)]} of a unit file; continuation lines joined as systemd does."""
    sections, cur, pending = {}, None, ""
    with open(path) as f:
        for raw in f:
            line = raw.rstrip("\n")
            if not pending and (not line.strip() or line.lstrip()[0] in "#;"):
                continue
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            line, pending = pending + line, ""
            s = line.strip()
            if s.startswith("[") and s.endswith("]"):
                cur = s[1:-1]
                sections.setdefault(cur, [])
                continue
            key, sep, value = s.partition("=")
            h.check(sep and cur, "%s: cannot parse line %r" % (path, s))
            sections[cur].append((key.strip(), value.strip()))
    return sections


def unit_values(unit, section, key):
    return [v for k, v in unit.get(section, []) if k == key]


def unit_value(unit, section, key):
    vals = unit_values(unit, section, key)
    h.eq(len(vals), 1, "number of %s= in [%s]" % (key, section))
    return vals[0]


def specifiers(text, instance):
    """%i, %I and %% as systemd expands them; any other specifier is a test failure."""
    def one(m):
        c = m.group(1)
        if c in "iI":
            h.check(instance is not None, "specifier %%%s in a unit without instance" % c)
            return instance
        if c == "%":
            return "%"
        raise AssertionError("specifier %%%s not supported by this test: %r" % (c, text))
    return re.sub(r"%(.)", one, text)


def parse_env_file(path):
    """KEY=VALUE lines of an EnvironmentFile: comments, blank lines, "quoted" values."""
    env = {}
    with open(path) as f:
        for n, raw in enumerate(f, 1):
            s = raw.strip()
            if not s or s[0] in "#;":
                continue
            key, sep, value = s.partition("=")
            h.check(sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key),
                    "%s:%d: not KEY=VALUE: %r" % (path, n, s))
            value = value.strip()
            if value and value[0] in "\"'":
                h.check(len(value) >= 2 and value[-1] == value[0] and "\\" not in value,
                        "%s:%d: quoting this test does not follow: %r" % (path, n, value))
                value = value[1:-1]
            env[key] = value
    return env


def unit_variables(exec_start):
    """Names of the variables an ExecStart line uses, as ${NAME} or $NAME."""
    return set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?", exec_start))


def expand_exec(exec_start, env, instance):
    """ExecStart= to argv: words split at whitespace, specifiers, then a word "$NAME" replaced
    by NAME's value split at whitespace (none if empty) and "${NAME}" by the value as is."""
    h.check(exec_start[0] not in "-@+!:", "ExecStart prefixes are not supported: %r" % exec_start)
    h.check(not re.search(r"[\"'\\]", exec_start), "quotes or escapes in ExecStart: %r" % exec_start)
    argv = []
    for word in exec_start.split():
        word = specifiers(word, instance)
        m = re.fullmatch(r"\$([A-Za-z_][A-Za-z0-9_]*)", word)
        if m:
            argv += env.get(m.group(1), "").split()
            continue
        h.check(not re.search(r"\$(?!\{)", word), "$NAME inside a word is not expanded: %r" % word)
        argv.append(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda x: env.get(x.group(1), ""), word))
    return argv


# ---------------------------------------------------------------------------------------------
# The installed root

def rooted(path):
    return S["root"] + path


def run_install():
    return h.run_cmd(["bash", INSTALL, "--root", S["root"], "--build-dir", h.BUILD_DIR, "--haproxy"],
                     timeout=60)


def snapshot(top):
    """Every file's mtime, inode, mode and owner, and every directory's mode and owner."""
    out = {}
    for d, _, files in os.walk(top):
        st = os.lstat(d)
        out[d] = (st.st_mode, st.st_uid, st.st_gid)
        for f in files:
            st = os.lstat(os.path.join(d, f))
            out[os.path.join(d, f)] = (st.st_mtime_ns, st.st_ino, st.st_mode, st.st_uid, st.st_gid)
    return out


def setup():
    S["tmp"] = h.make_tmpdir("units")
    os.chmod(S["tmp"], 0o755)  # the unprivileged daemons reach their files through it
    S["root"] = os.path.join(S["tmp"], "root")
    os.mkdir(S["root"])
    rc, out, err = run_install()
    h.check(rc == 0, "install.sh failed (rc %d):\n%s\n%s" % (rc, out, err))
    # What the units rely on from Debian: systemd's own units, etcd and haproxy.
    shutil.copytree("/usr/lib/systemd/system", rooted("/usr/lib/systemd/system"), symlinks=True)
    for path in ("/usr/bin/etcd", "/usr/sbin/haproxy", "/usr/bin/containerd"):
        os.makedirs(os.path.dirname(rooted(path)), exist_ok=True)
        shutil.copy2(path, rooted(path))
    S["units"] = {name: parse_unit(rooted(os.path.join(UNIT_DIR, name))) for name in UNITS}
    make_identity()


# ---------------------------------------------------------------------------------------------
# 1. install.sh and systemd-analyze verify

def test_install_is_idempotent():
    before = snapshot(S["root"])
    rc, out, err = run_install()
    h.check(rc == 0, "second install.sh failed (rc %d): %s %s" % (rc, out, err))
    h.check("nothing to do" in out and "installed" not in out,
            "a second install changed something:\n%s" % out)
    h.eq(snapshot(S["root"]), before, "files after a second install")
    for name in ("ursa-tp-apiserver", "ursa-gateway", "ursa-kubelet", "ursactl"):
        p = rooted("/usr/local/bin/" + name)
        h.check(os.access(p, os.X_OK), "%s is not installed as an executable" % p)
    for kind in ("etcd", "gateway", "kubelet", "haproxy"):
        h.check(os.path.isdir(rooted("/etc/ursa/" + kind)), "/etc/ursa/%s was not created" % kind)


def verify(root, units):
    return h.run_cmd(["systemd-analyze", "verify", "--root=" + root] + units, timeout=30)


def test_verify_every_unit():
    instances = ["ursa-etcd@tp-1.service", "ursa.target", "haproxy.service"]
    instances += [name.replace("@.", "@%s." % inst) for name, (_, inst) in UNITS.items() if inst]
    rc, out, err = verify(S["root"], instances)
    h.check(rc == 0 and not out.strip() and not err.strip(),
            "systemd-analyze verify (rc %d) reports:\n%s%s" % (rc, out, err))
    # The same check sees a binary missing from the root: it does look at the installed files.
    bogus = rooted(os.path.join(UNIT_DIR, "ursa-bogus.service"))
    with open(bogus, "w") as f:
        f.write("[Service]\nExecStart=/usr/local/bin/ursa-not-installed\n")
    try:
        rc, out, err = verify(S["root"], ["ursa-bogus.service"])
    finally:
        os.unlink(bogus)
    h.check(rc != 0 and "ursa-not-installed" in out + err,
            "verify did not notice a missing binary (rc %d): %s%s" % (rc, out, err))


def test_cri_kubelet_needs_containerd():
    """ursa-kubelet-cri@ starts after Debian's containerd.service, stops with it, runs the cri
    runtime on the socket of its settings, and excludes the process-runtime unit of its node."""
    unit = S["units"]["ursa-kubelet-cri@.service"]
    h.check("containerd.service" in unit_value(unit, "Unit", "Requires").split(), "Requires=containerd.service")
    h.check("containerd.service" in unit_value(unit, "Unit", "After").split(), "After=containerd.service")
    h.eq(unit_value(unit, "Unit", "Conflicts"), "ursa-kubelet@%i.service", "Conflicts=")
    argv = expand_exec(unit_value(unit, "Service", "ExecStart"), example_env("kubelet-cri"), "az-1-host-2")
    h.eq(argv[argv.index("--runtime") + 1], "cri", "--runtime")
    h.eq(argv[argv.index("--cri-endpoint") + 1], "unix:///run/containerd/containerd.sock", "--cri-endpoint")
    # systemd resolves the dependency: containerd.service is loaded with the kubelet's instance.
    rc, out, err = h.run_cmd(["systemd-analyze", "verify", "--root=" + S["root"],
                              "ursa-kubelet-cri@az-1-host-2.service"], timeout=30)
    h.check(rc == 0 and not (out + err).strip(), "verify (rc %d): %s%s" % (rc, out, err))
    # The same check sees a missing containerd.service: the dependency is real.
    unit_path = rooted("/usr/lib/systemd/system/containerd.service")
    hidden = unit_path + ".hidden"
    os.rename(unit_path, hidden)
    try:
        rc, out, err = h.run_cmd(["systemd-analyze", "verify", "--root=" + S["root"],
                                  "ursa-kubelet-cri@az-1-host-2.service"], timeout=30)
    finally:
        os.rename(hidden, unit_path)
    h.check(rc != 0 or "containerd.service" in out + err,
            "verify did not notice containerd.service missing (rc %d): %s%s" % (rc, out, err))


def test_prefix_is_substituted():
    other = os.path.join(S["tmp"], "root-opt")
    os.mkdir(other)
    rc, out, err = h.run_cmd(["bash", INSTALL, "--root", other, "--prefix", "/opt/ursa",
                              "--build-dir", h.BUILD_DIR], timeout=60)
    h.check(rc == 0, "install.sh --prefix /opt/ursa failed: %s %s" % (out, err))
    unit = parse_unit(os.path.join(other, UNIT_DIR.lstrip("/"), "ursa-gateway@.service"))
    h.check(unit_value(unit, "Service", "ExecStart").startswith("/opt/ursa/bin/ursa-gateway "),
            "ExecStart does not name the prefix: %r" % unit_value(unit, "Service", "ExecStart"))
    h.check(not os.path.exists(os.path.join(other, "etc/systemd/system/haproxy.service.d")),
            "the haproxy.service drop-in was put in place without --haproxy")
    dropin = open(os.path.join(other, "opt/ursa/share/ursa/haproxy.service.d/ursa.conf")).read()
    h.check("/usr/local" not in dropin and "/opt/ursa/lib/ursa/ursa-haproxy-config" in dropin,
            "haproxy drop-in does not name the prefix:\n%s" % dropin)
    shutil.rmtree(other)


# ---------------------------------------------------------------------------------------------
# 2. settings and flags

def example_env(kind):
    return parse_env_file(rooted("/usr/local/share/ursa/env/%s.env.example" % kind))


def test_settings_match_examples():
    for name, (kind, _) in UNITS.items():
        unit = S["units"][name]
        used = unit_variables(unit_value(unit, "Service", "ExecStart"))
        documented = set(example_env(kind))
        h.eq(sorted(documented - used), [], "%s: settings of %s.env.example the unit ignores" % (name, kind))
        h.eq(sorted(used - documented), [], "%s: variables not in %s.env.example" % (name, kind))
        h.eq(unit_value(unit, "Service", "EnvironmentFile"), "/etc/ursa/%s/%%i.env" % ENV_DIRS.get(kind, kind),
             name + " EnvironmentFile")
    # The HAProxy renderer's settings.
    script = open(os.path.join(UNIT_SRC, "haproxy", "ursa-haproxy-config")).read()
    used = set(re.findall(r"URSA_HAPROXY_[A-Z_]+", script)) - {"URSA_HAPROXY_BIN"}
    h.eq(sorted(set(example_env("haproxy"))), sorted(used), "haproxy.env.example settings")


def daemon_help(binary):
    rc, out, err = h.run_cmd([binary, "--help"], timeout=20)
    return out + err


def test_flags_exist_in_daemons():
    helps = {}
    for name, (kind, inst) in UNITS.items():
        unit = S["units"][name]
        argv = expand_exec(unit_value(unit, "Service", "ExecStart"), example_env(kind), inst or "x")
        binary = rooted(argv[0])
        if binary not in helps:
            helps[binary] = daemon_help(binary)
        flags = {a.split("=")[0] for a in argv[1:] if a.startswith("--")}
        h.check(flags, "%s passes no flags" % name)
        for flag in sorted(flags):
            h.check(re.search(r"(^|\s)%s(\s|=|$)" % re.escape(flag), helps[binary], re.M),
                    "%s passes %s, which %s --help does not list" % (name, flag, argv[0]))


# ---------------------------------------------------------------------------------------------
# 3. a region from the units

def unprivileged():
    """uid and gid for units with User=: nobody and nogroup."""
    return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid


def write_env(kind, instance, overrides):
    """/etc/ursa/<kind>/<instance>.env in the root: the example with overrides, each of which
    must name a setting the example has."""
    env = example_env(kind)
    for k in overrides:
        h.check(k in env, "%s.env.example has no setting %s" % (kind, k))
    env.update(overrides)
    path = rooted("/etc/ursa/%s/%s.env" % (kind, instance))
    with open(path, "w") as f:
        for k, v in env.items():
            f.write('%s="%s"\n' % (k, v) if " " in v else "%s=%s\n" % (k, v))
    return path


def start_unit(name, instance, overrides):
    """Starts NAME@INSTANCE as systemd would; returns (process, log path)."""
    kind = UNITS[name][0]
    write_env(kind, instance, overrides)
    unit = S["units"][name]
    env_path = rooted(specifiers(unit_value(unit, "Service", "EnvironmentFile"), instance))
    env = parse_env_file(env_path)
    argv = expand_exec(unit_value(unit, "Service", "ExecStart"), env, instance)
    argv[0] = rooted(argv[0])
    h.check(os.access(argv[0], os.X_OK), "%s is not installed" % argv[0])
    proc_env = dict(env, PATH=SYSTEMD_PATH)
    service_type = unit_value(unit, "Service", "Type")
    h.check(service_type in ("exec", "notify"), "%s: Type=%s" % (name, service_type))
    if service_type == "notify":
        # What systemd gives a Type=notify service: a datagram socket for READY=1.
        path = os.path.join(S["tmp"], "notify-%s-%s.sock" % (kind, instance))
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(path)
        os.chmod(path, 0o777)
        proc_env["NOTIFY_SOCKET"] = path
        S.setdefault("notify", {})["%s@%s" % (name, instance)] = notify
    user = unit_values(unit, "Service", "User")
    ids = unprivileged() if user and os.geteuid() == 0 else None
    log = os.path.join(S["tmp"], "%s-%s.log" % (kind, instance))
    h._logs.append(("%s@%s" % (name.split("@")[0], instance), log))

    def child():
        h._child_setup()
        if ids:
            os.setgroups([])
            os.setgid(ids[1])
            os.setuid(ids[0])
    with open(log, "ab") as lf:
        lf.write(("--- %s\n" % " ".join(argv)).encode())
        lf.flush()
        p = subprocess.Popen(argv, env=proc_env, stdin=subprocess.DEVNULL, stdout=lf,
                             stderr=subprocess.STDOUT, preexec_fn=child, start_new_session=True)
    h._children.append(p)
    S.setdefault("procs", {})["%s@%s" % (name, instance)] = (p, log)
    return p, log


def state_dir(path, private=True, root_owned=False):
    """A directory systemd's StateDirectory= would make: owned by the unit's user."""
    os.makedirs(path, exist_ok=True)
    os.chmod(path, 0o700 if private else 0o750)
    if os.geteuid() == 0 and not root_owned:
        uid, gid = unprivileged()
        os.chown(path, uid, gid)
    return path


def wait_http(client, path, what, proc, log, timeout=30, ok=(200,)):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError("%s exited with %s; log %s:\n%s"
                                 % (what, proc.returncode, log, h.log_tail(log)))
        try:
            last = client.get(path)
            if last.status in ok:
                return last
        except OSError as e:
            last = e
        time.sleep(0.1)
    raise AssertionError("%s: %s not 200 after %ss (last %r); log %s:\n%s"
                         % (what, path, timeout, last, log, h.log_tail(log)))


def make_identity():
    """PKI, keys and tokens under /etc/ursa of the root, readable by group nogroup only."""
    etc = rooted("/etc/ursa")
    pki = os.path.join(etc, "pki")
    ca, crt, key = h.make_ca(pki)
    h.must_run([h.URSACTL_BIN, "keygen", "--out-dir", etc])
    with open(os.path.join(etc, "identity.key"), "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    S["admin_token"] = secrets.token_hex(24)
    with open(os.path.join(etc, "tokens.csv"), "w") as f:
        f.write('%s,admin,admin,"system:masters",system\n' % S["admin_token"])
    token = h.must_run([h.URSACTL_BIN, "token", "--tenant", "system", "--user", "region",
                        "--groups", "system:masters", "--ttl", "0",
                        "--signing-key", os.path.join(etc, "signing-key.pem")]).strip()
    with open(os.path.join(etc, "region.token"), "w") as f:
        f.write(token + "\n")
    with open(os.path.join(etc, "kubelet-client.token"), "w") as f:
        f.write(secrets.token_hex(32) + "\n")
    with open(os.path.join(etc, "backup.key"), "w") as f:
        f.write(base64.b64encode(secrets.token_bytes(32)).decode() + "\n")
    with open(os.path.join(etc, "haproxy", "haproxy.pem"), "w") as f:
        f.write(open(crt).read() + open(key).read())
    S.update(ca=ca, crt=crt, key=key, etc=etc)
    gid = unprivileged()[1] if os.geteuid() == 0 else -1
    for d, _, files in os.walk(etc):
        os.chmod(d, 0o750)
        os.chown(d, -1, gid)
        for f in files:
            os.chmod(os.path.join(d, f), 0o640)
            os.chown(os.path.join(d, f), -1, gid)
    for d in (S["root"], rooted("/etc")):
        os.chmod(d, 0o755)


def kubeconfig(user, server, group="system:masters"):
    path = rooted("/etc/ursa/kubeconfig/%s.kubeconfig" % user)
    out = h.must_run([h.URSACTL_BIN, "kubeconfig", "--tenant", "system", "--user", user,
                      "--groups", group, "--ttl", "0", "--server", server,
                      "--signing-key", os.path.join(S["etc"], "signing-key.pem"),
                      "--certificate-authority", S["ca"]])
    with open(path, "w") as f:
        f.write(out)
    if os.geteuid() == 0:
        os.chown(path, -1, unprivileged()[1])
    os.chmod(path, 0o640)
    return path


def common_tls():
    return {"URSA_TLS_CERT_FILE": S["crt"], "URSA_TLS_PRIVATE_KEY_FILE": S["key"],
            "URSA_TOKEN_AUTH_FILE": os.path.join(S["etc"], "tokens.csv"),
            "URSA_TOKEN_SIGNING_PUBLIC_KEY": os.path.join(S["etc"], "signing-key.pub"),
            "URSA_IDENTITY_KEY_FILE": os.path.join(S["etc"], "identity.key")}


def start_etcds():
    urls = {}
    for inst in ETCDS:
        client, peer = h.free_port(), h.free_port()
        c, p = "http://127.0.0.1:%d" % client, "http://127.0.0.1:%d" % peer
        urls[inst] = c
        start_unit("ursa-etcd@.service", inst, {
            "URSA_ETCD_NAME": inst + "-a",
            "URSA_ETCD_DATA_DIR": state_dir(rooted("/var/lib/ursa/etcd/" + inst)),
            "URSA_ETCD_LISTEN_CLIENT_URLS": c, "URSA_ETCD_ADVERTISE_CLIENT_URLS": c,
            "URSA_ETCD_LISTEN_PEER_URLS": p, "URSA_ETCD_INITIAL_ADVERTISE_PEER_URLS": p,
            "URSA_ETCD_INITIAL_CLUSTER": "%s-a=%s" % (inst, p),
            "URSA_ETCD_INITIAL_CLUSTER_TOKEN": "ursa-test-" + inst})
    for inst in ETCDS:
        p, log = S["procs"]["ursa-etcd@.service@" + inst]
        r = wait_http(h.Client(urls[inst], timeout=2), "/health", "ursa-etcd@" + inst, p, log)
        h.eq((r.json or {}).get("health"), "true", "etcd %s /health" % inst)
        wait_ready_notification("ursa-etcd@.service@" + inst)
    S["etcd"] = urls


def wait_ready_notification(key, timeout=10):
    """A Type=notify unit must send READY=1, or systemd would never consider it started."""
    sock = S["notify"][key]
    sock.settimeout(timeout)
    got = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = sock.recv(4096).decode(errors="replace")
        except socket.timeout:
            break
        got.append(msg)
        if "READY=1" in msg.split("\n"):
            S.setdefault("ready_seen", set()).add(key)
            return
    raise AssertionError("%s sent no READY=1 within %ss (got %r)" % (key, timeout, got))


def start_apiservers():
    S["api"] = {}
    for name, inst in (("ursa-tp-apiserver@.service", "tp-1"), ("ursa-rm-apiserver@.service", "rm-az-1")):
        port = h.free_port()
        kind = UNITS[name][0]
        env = dict(common_tls(), **{
            "URSA_LISTEN": "127.0.0.1:%d" % port, "URSA_ETCD_SERVERS": S["etcd"][inst],
            "URSA_REGION_TOKEN_FILE": os.path.join(S["etc"], "region.token"),
            "URSA_KUBELET_TOKEN_FILE": os.path.join(S["etc"], "kubelet-client.token"),
            "URSA_REGION_CA_FILE": S["ca"], "URSA_WORKERS": "4"})
        if kind == "tp-apiserver":
            env["URSA_SERVICE_ACCOUNT_SIGNING_KEY_FILE"] = os.path.join(S["etc"], "signing-key.pem")
        start_unit(name, inst, env)
        S["api"][inst] = "https://127.0.0.1:%d" % port
        p, log = S["procs"]["%s@%s" % (name, inst)]
        wait_http(admin(inst), "/readyz", kind + "@" + inst, p, log, timeout=45)


def admin(inst):
    return h.Client(S["api"][inst], S["ca"], S["admin_token"], timeout=5)


def register():
    for args in (["--kind", "tp", "--name", "tp-1", "--endpoints", S["api"]["tp-1"]],
                 ["--kind", "rm", "--name", "rm-az-1", "--endpoints", S["api"]["rm-az-1"],
                  "--zone", "az-1"]):
        h.must_run([h.URSACTL_BIN, "register"] + args + [
            "--region-file", os.path.join(S["tmp"], "region.json"),
            "--signing-key", os.path.join(S["etc"], "signing-key.pem"),
            "--certificate-authority", S["ca"], "--gateway-etcd", S["etcd"]["gateway"]])


def start_workers():
    tp, rm = S["api"]["tp-1"], S["api"]["rm-az-1"]
    S["health"] = {k: h.free_port() for k in ("tp-controller-manager", "scheduler", "rm-controller-manager")}

    def health(kind):
        return "127.0.0.1:%d" % S["health"][kind]
    start_unit("ursa-tp-controller-manager@.service", "tp-1", {
        "URSA_KUBECONFIG": kubeconfig("tp-1-controller-manager", tp),
        "URSA_HEALTH_LISTEN": health("tp-controller-manager"), "URSA_ROOT_CA_FILE": S["ca"],
        "URSA_BACKUP_KEY_FILE": os.path.join(S["etc"], "backup.key"),
        "URSA_FINAL_BACKUP_DIR": state_dir(rooted("/var/lib/ursa/final-backups"), private=False)})
    start_unit("ursa-scheduler@.service", "tp-1", {"URSA_KUBECONFIG": kubeconfig("tp-1-scheduler", tp),
                                                   "URSA_HEALTH_LISTEN": health("scheduler")})
    start_unit("ursa-rm-controller-manager@.service", "rm-az-1", {
        "URSA_KUBECONFIG": kubeconfig("rm-az-1-controller-manager", rm),
        "URSA_HEALTH_LISTEN": health("rm-controller-manager")})
    kc = kubeconfig("kubelet-az-1", rm, "system:nodes")  # the hollow kubelet's: names no node
    S["kubelet_port"] = h.free_port()
    start_unit("ursa-kubelet@.service", "az-1-host-1", {
        "URSA_KUBECONFIG": kubeconfig("system:node:az-1-host-1", rm, "system:nodes"), "URSA_ZONE": "az-1", "URSA_REGION": "test",
        "URSA_ROOT_DIR": state_dir(rooted("/var/lib/ursa/kubelet/az-1-host-1"), root_owned=True),
        "URSA_ADDRESS": "127.0.0.1", "URSA_PORT": str(S["kubelet_port"]),
        "URSA_TLS_CERT_FILE": S["crt"], "URSA_TLS_PRIVATE_KEY_FILE": S["key"],
        "URSA_CLIENT_TOKEN_FILE": os.path.join(S["etc"], "kubelet-client.token"),
        "URSA_API_FRONT_DOOR": "127.0.0.1:6443"})
    start_unit("ursa-hollow-kubelet@.service", "az-1-hollow", {
        "URSA_KUBECONFIG": kc, "URSA_ZONE": "az-1", "URSA_REGION": "test",
        "URSA_HOLLOW_NODES": str(HOLLOW_NODES),
        "URSA_ROOT_DIR": state_dir(rooted("/var/lib/ursa/hollow-kubelet/az-1-hollow"))})
    S["gateway_port"] = h.free_port()
    start_unit("ursa-gateway@.service", "1", dict(common_tls(), **{
        "URSA_LISTEN": "127.0.0.1:%d" % S["gateway_port"], "URSA_ETCD_SERVERS": S["etcd"]["gateway"],
        "URSA_PARTITION_CA_FILE": S["ca"],
        "URSA_PARTITION_TOKEN_FILE": os.path.join(S["etc"], "region.token"),
        "URSA_AUDIT_LOG_PATH": os.path.join(state_dir(rooted("/var/log/ursa/gateway-1"), False),
                                            "audit.log"),
        "URSA_THREADS": "4", "URSA_WORKERS": "2"}))


def start_haproxy():
    """Debian's haproxy.service with Ursa's drop-in: ExecStartPre renders the configuration,
    ExecStart is Debian's (pid file and master socket moved into the temporary directory)."""
    port = h.free_port()
    S["haproxy_port"] = port
    write_env("haproxy", "haproxy", {
        "URSA_HAPROXY_BIND": "127.0.0.1", "URSA_HAPROXY_PORT": str(port),
        "URSA_HAPROXY_PEM": rooted("/etc/ursa/haproxy/haproxy.pem"), "URSA_HAPROXY_CA_FILE": S["ca"],
        "URSA_HAPROXY_GATEWAYS": "127.0.0.1:%d 127.0.0.1:%d" % (S["gateway_port"], h.free_port())})
    dropin = parse_unit(rooted(UNIT_DIR + "/haproxy.service.d/ursa.conf"))
    env = parse_env_file(rooted(unit_value(dropin, "Service", "EnvironmentFile")))
    config = unit_value(dropin, "Service", "Environment")
    h.check(config.startswith("CONFIG="), "drop-in Environment= is not CONFIG: %r" % config)
    pre = [rooted(w) for w in unit_value(dropin, "Service", "ExecStartPre").split()]
    h.check(pre[-1] == rooted(config[len("CONFIG="):]), "ExecStartPre writes %s, not $CONFIG" % pre[-1])
    rc, out, err = h.run_cmd(pre, env=dict(env, PATH=SYSTEMD_PATH), timeout=30)
    h.check(rc == 0, "ExecStartPre %s failed (rc %d): %s%s" % (" ".join(pre), rc, out, err))
    debian = parse_unit(rooted("/usr/lib/systemd/system/haproxy.service"))
    start = unit_value(debian, "Service", "ExecStart")
    h.eq(start, "/usr/sbin/haproxy -Ws -f $CONFIG -p $PIDFILE $EXTRAOPTS", "Debian's haproxy ExecStart")
    argv = expand_exec(start, dict(env, CONFIG=pre[-1], PIDFILE=os.path.join(S["tmp"], "haproxy.pid"),
                                   EXTRAOPTS="-S " + os.path.join(S["tmp"], "haproxy-master.sock")), None)
    argv[0] = rooted(argv[0])
    log = os.path.join(S["tmp"], "haproxy.log")
    h._logs.append(("haproxy", log))
    p = h.spawn(argv, log, env={"PATH": SYSTEMD_PATH})
    S["procs"]["haproxy.service"] = (p, log)


def all_alive():
    """Fails at once, with its log, if a daemon started from a unit has exited."""
    for name, (p, log) in sorted(S["procs"].items()):
        h.check(p.poll() is None, "%s exited with %s; log %s:\n%s"
                % (name, p.returncode, log, h.log_tail(log)))


def lease_holder(inst, path):
    all_alive()
    r = admin(inst).get(path)
    if r.status != 200 or not r.json:
        return None
    return (r.json.get("spec") or {}).get("holderIdentity")


def ready_nodes():
    all_alive()
    r = admin("rm-az-1").get("/api/v1/nodes")
    if r.status != 200:
        return set()
    return {n["metadata"]["name"] for n in r.json.get("items") or []
            if any(c.get("type") == "Ready" and c.get("status") == "True"
                   for c in (n.get("status") or {}).get("conditions") or [])}


def test_region_from_units():
    t0 = time.monotonic()
    start_etcds()
    start_apiservers()
    register()
    start_workers()
    start_haproxy()

    p, log = S["procs"]["ursa-gateway@.service@1"]
    gw = h.Client("https://127.0.0.1:%d" % S["gateway_port"], S["ca"], S["admin_token"], timeout=5)
    wait_http(gw, "/readyz", "ursa-gateway@1", p, log)
    p, log = S["procs"]["ursa-kubelet@.service@az-1-host-1"]
    wait_http(h.Client("https://127.0.0.1:%d" % S["kubelet_port"], S["ca"], timeout=2), "/healthz",
              "ursa-kubelet@az-1-host-1", p, log)
    want = {"az-1-host-1"} | {"az-1-hollow-%d" % i for i in range(HOLLOW_NODES)}
    h.wait_until(lambda: want <= ready_nodes(), 30, "nodes %s Ready in rm-az-1" % sorted(want))

    leases = [("tp-1", "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/"
                       "ursa-tp-controller-manager"),
              ("tp-1", "/apis/coordination.k8s.io/v1/tenants/system/namespaces/kube-system/leases/"
                       "ursa-scheduler"),
              ("rm-az-1", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/"
                          "ursa-rm-controller-manager")]
    for inst, path in leases:
        h.wait_until(lambda: lease_holder(inst, path), 30, "lease %s held on %s" % (path, inst))
    # Each holds its lease, and its health endpoint says so.
    for kind, unit, inst in (("tp-controller-manager", "ursa-tp-controller-manager@.service", "tp-1"),
                             ("scheduler", "ursa-scheduler@.service", "tp-1"),
                             ("rm-controller-manager", "ursa-rm-controller-manager@.service", "rm-az-1")):
        p, log = S["procs"]["%s@%s" % (unit, inst)]
        probe = h.Client("http://127.0.0.1:%d" % S["health"][kind], timeout=2)
        wait_http(probe, "/healthz", "%s@%s" % (unit, inst), p, log)
        h.wait_until(lambda: re.search(r"^ursa_leader\{[^}]*\} 1$", probe.get("/metrics").text, re.M), 15,
                     "%s@%s reports ursa_leader 1" % (unit, inst))

    # The region's address: HAProxy -> the gateway -> tp-1, which holds tenant system's objects.
    p, log = S["procs"]["haproxy.service"]
    front = h.Client("https://127.0.0.1:%d" % S["haproxy_port"], S["ca"], S["admin_token"], timeout=5)
    wait_http(front, "/healthz", "haproxy", p, log)
    r = h.wait_until(lambda: (lambda x: x if x.status == 200 else None)(front.get("/api/v1/tenants")),
                     30, "GET /api/v1/tenants through HAProxy and the gateway")
    h.eq((r.json or {}).get("kind"), "TenantList", "kind of the list through the gateway")

    all_alive()
    if os.geteuid() == 0:
        uid = unprivileged()[0]
        for name, (p, _) in S["procs"].items():
            owner = os.stat("/proc/%d" % p.pid).st_uid
            want_uid = 0 if name.startswith(("ursa-kubelet@", "haproxy")) else uid
            h.eq(owner, want_uid, "user of %s" % name)
    print("region from units healthy after %.1fs" % (time.monotonic() - t0))


def test_every_notify_unit_said_ready():
    """Every unit is Type=notify, so every daemon must tell READY=1 (or systemd would time the
    start out and kill it); the region above is up, so each has had its chance."""
    assert "notify" in S, "test_region_from_units did not run"
    units = {k.split("@")[0] for k in S["notify"]}
    h.check(len(units) >= 9, "notify units seen: %s" % sorted(units))
    for key in sorted(S["notify"]):
        if key not in S.get("ready_seen", set()):
            wait_ready_notification(key, timeout=5)


def test_config_renderer_refuses_bad_settings():
    tmpl = rooted("/usr/local/share/ursa/haproxy.cfg.in")
    out = os.path.join(S["tmp"], "bad-haproxy.cfg")
    script = rooted("/usr/local/lib/ursa/ursa-haproxy-config")
    env = dict(example_env("haproxy"), PATH=SYSTEMD_PATH, URSA_HAPROXY_BIND="127.0.0.1",
               URSA_HAPROXY_PEM=rooted("/etc/ursa/haproxy/haproxy.pem"), URSA_HAPROXY_CA_FILE=S["ca"])
    env.pop("URSA_HAPROXY_GATEWAYS")
    rc, _, err = h.run_cmd([script, tmpl, out], env=env)
    h.check(rc != 0 and "URSA_HAPROXY_GATEWAYS" in err, "renderer without gateways: rc %d %s" % (rc, err))
    env["URSA_HAPROXY_GATEWAYS"] = "127.0.0.1:1"
    env["URSA_HAPROXY_PEM"] = os.path.join(S["tmp"], "missing.pem")
    rc, _, err = h.run_cmd([script, tmpl, out], env=env)
    h.check(rc != 0 and not os.path.exists(out), "renderer accepted a missing certificate: rc %d %s" % (rc, err))


if __name__ == "__main__":
    h.run(globals(), per_test_timeout=120)
