# shellcheck shell=bash
# Shared helpers for deploy/local-up.sh, deploy/local-down.sh and tests/run.sh.
# Sourced, never executed. Callers run under `set -euo pipefail`.
#
# Variables set here (each may be overridden from the environment):
#   URSA_ROOT       the repository root (the parent of deploy/)
#   URSA_STATE      the local region's state directory (default $URSA_ROOT/.ursa)
#   URSA_BUILD_DIR  the normal build directory (default $URSA_ROOT/build; relative to the root)

URSA_ROOT=${URSA_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
URSA_STATE=${URSA_STATE:-$URSA_ROOT/.ursa}
URSA_BUILD_DIR=${URSA_BUILD_DIR:-$URSA_ROOT/build}
case $URSA_BUILD_DIR in /*) ;; *) URSA_BUILD_DIR=$URSA_ROOT/$URSA_BUILD_DIR ;; esac
URSA_PIDS=$URSA_STATE/pids

# Debian packages needed to build, run and test Ursa (systemd: systemd-analyze verifies the units).
URSA_PACKAGES=(build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev
	libcurl4-openssl-dev libuv1-dev libyaml-dev libcmocka-dev libssl-dev libhttp-parser-dev
	etcd-server etcd-client haproxy python3-kubernetes openssl curl systemd
	containerd runc containernetworking-plugins docker-registry umoci skopeo busybox-static
	protobuf-c-compiler libprotobuf-c-dev libwslay-dev zlib1g-dev tmux python3-matplotlib iproute2)

say()  { printf '==> %s\n' "$*"; }
warn() { printf 'WARNING: %s\n' "$*" >&2; }
die()  { printf 'ERROR: %s\n' "$*" >&2; exit 1; }

# --- packages ------------------------------------------------------------------------------

pkg_installed() {
	[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null || true)" = installed ]
}

# Debian's etcd-server enables and starts a system etcd on 127.0.0.1:2379. Ursa runs its own
# etcd processes on other ports, so the packaged service is masked: it never starts and is
# never needed. Masking works without a running systemd (it is a symlink to /dev/null).
keep_debian_etcd_quiet() {
	if command -v systemctl >/dev/null 2>&1; then
		systemctl mask etcd.service >/dev/null 2>&1 || true
		if [ -d /run/systemd/system ]; then
			systemctl stop etcd.service >/dev/null 2>&1 || true
		fi
	fi
	if [ -x /etc/init.d/etcd ] && command -v update-rc.d >/dev/null 2>&1; then
		update-rc.d etcd disable >/dev/null 2>&1 || true
	fi
}

# Installs whatever in URSA_PACKAGES is missing; runs apt-get only when something is.
ensure_packages() {
	local missing=() p
	for p in "${URSA_PACKAGES[@]}"; do
		pkg_installed "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		return 0
	fi
	[ "$(id -u)" -eq 0 ] || die "missing packages (${missing[*]}); run as root or install them"
	say "installing Debian packages: ${missing[*]}"
	# While installing, forbid maintainer scripts from starting services (etcd, haproxy).
	local made_policy=0
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		made_policy=1
	fi
	keep_debian_etcd_quiet
	local rc=0
	{ DEBIAN_FRONTEND=noninteractive apt-get update -q &&
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; } || rc=$?
	[ $made_policy -eq 1 ] && rm -f /usr/sbin/policy-rc.d
	[ $rc -eq 0 ] || die "apt-get failed (exit $rc)"
	keep_debian_etcd_quiet
}

# --- build ---------------------------------------------------------------------------------

# build_tree DIR [cmake -D options...]: configures (once) and builds the whole tree with -j2.
build_tree() {
	local dir=$1
	shift
	say "building $dir"
	cmake -S "$URSA_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j2
}

# --- certificates --------------------------------------------------------------------------

# ensure_ca DIR: DIR/ca.key and DIR/ca.crt (10 years), created only if absent.
ensure_ca() {
	local dir=$1
	[ -s "$dir/ca.crt" ] && [ -s "$dir/ca.key" ] && return 0
	mkdir -p "$dir"
	say "creating certificate authority in $dir"
	( umask 077; openssl genrsa -out "$dir/ca.key" 2048 2>/dev/null )
	openssl req -x509 -new -key "$dir/ca.key" -sha256 -days 3650 -subj "/CN=ursa-local-ca" \
		-addext "basicConstraints=critical,CA:TRUE" \
		-addext "keyUsage=critical,keyCertSign,cRLSign" \
		-addext "subjectKeyIdentifier=hash" \
		-out "$dir/ca.crt" 2>/dev/null
}

# ensure_server_cert CADIR OUTDIR NAME SAN: OUTDIR/NAME.crt and NAME.key (ECDSA P-256) signed by
# the CA, with SAN like "IP:127.0.0.1,DNS:localhost". Created if absent, or issued anew when it
# lacks an entry of SAN (a SAN added since it was made).
ensure_server_cert() {
	local cadir=$1 dir=$2 name=$3 san=$4 have e lacking=""
	if [ -s "$dir/$name.crt" ] && [ -s "$dir/$name.key" ]; then
		# openssl prints "IP Address:127.0.0.1, DNS:localhost"
		have=$(openssl x509 -in "$dir/$name.crt" -noout -ext subjectAltName 2>/dev/null | tail -n +2 |
			sed 's/IP Address:/IP:/g; s/ //g')
		for e in ${san//,/ }; do
			[[ ,$have, == *,$e,* ]] || lacking+=" $e"
		done
		[ -z "$lacking" ] && return 0
		say "$dir/$name.crt lacks$lacking: issuing it anew"
		rm -f "$dir/$name.crt" "$dir/$name.key"
	fi
	mkdir -p "$dir"
	say "creating certificate $dir/$name.crt ($san)"
	local ext
	ext=$(mktemp)
	cat >"$ext" <<-EOF
		basicConstraints=critical,CA:FALSE
		keyUsage=critical,digitalSignature
		extendedKeyUsage=serverAuth,clientAuth
		subjectKeyIdentifier=hash
		authorityKeyIdentifier=keyid,issuer
		subjectAltName=$san
	EOF
	# ECDSA P-256: a server signs in every TLS handshake, and P-256 signs some 25 times faster
	# than RSA-2048 (openssl speed); the CA may stay RSA, its signature is only verified.
	( umask 077; openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$dir/$name.key" 2>/dev/null )
	openssl req -new -key "$dir/$name.key" -subj "/CN=$name" -out "$dir/$name.csr" 2>/dev/null
	openssl x509 -req -in "$dir/$name.csr" -CA "$cadir/ca.crt" -CAkey "$cadir/ca.key" \
		-CAcreateserial -days 825 -sha256 -extfile "$ext" -out "$dir/$name.crt" 2>/dev/null
	rm -f "$ext" "$dir/$name.csr"
}

# --- processes -----------------------------------------------------------------------------
# A daemon NAME has .ursa/pids/NAME.pid (its PID), NAME.exe (the binary path) and NAME.sig
# (a fingerprint of the binary and the command line, to notice rebuilds and flag changes).

pidfile() { printf '%s/%s.pid' "$URSA_PIDS" "$1"; }

# pid_matches PID EXE: true if PID is alive and runs EXE, judged by its first command-line
# words (EXE itself, or an interpreter or setsid/nohup before it). Guards against a reused PID.
pid_matches() {
	local pid=$1 exe=$2 word
	[ -n "$pid" ] && [ -n "$exe" ] && kill -0 "$pid" 2>/dev/null || return 1
	while IFS= read -r word; do
		[ "$word" = "$exe" ] && return 0
	done < <(tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | head -n 3)
	return 1
}

# daemon_pid NAME: prints the PID of a running daemon NAME, or fails.
daemon_pid() {
	local name=$1 pf pid exe
	pf=$(pidfile "$name")
	[ -f "$pf" ] || return 1
	pid=$(cat "$pf")
	exe=$(cat "$URSA_PIDS/$name.exe" 2>/dev/null || true)
	pid_matches "$pid" "$exe" || return 1
	printf '%s\n' "$pid"
}

daemon_signature() {
	local exe=$1
	shift
	{ stat -L -c '%s %Y %i' "$exe"; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1
}

# start_daemon NAME LOGFILE CMD...: starts CMD in its own session with nohup, output appended
# to LOGFILE, and records its PID. If NAME already runs with the same binary (size, mtime,
# inode) and the same arguments, it is left alone; if either changed, it is restarted.
start_daemon() {
	local name=$1 log=$2
	shift 2
	local exe sig pid
	exe=$(command -v "$1") || die "$name: $1 not found (not built?)"
	shift
	set -- "$exe" "$@"
	sig=$(daemon_signature "$exe" "$@")
	mkdir -p "$URSA_PIDS" "$(dirname "$log")"
	if pid=$(daemon_pid "$name"); then
		if [ "$(cat "$URSA_PIDS/$name.sig" 2>/dev/null)" = "$sig" ]; then
			say "$name already running (pid $pid)"
			return 0
		fi
		say "$name: binary or flags changed, restarting (pid $pid)"
		stop_daemon "$name"
	fi
	printf '\n--- %s starting: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$log"
	# A background job of a non-interactive shell is not a process-group leader, so setsid
	# and nohup exec in place and $! is the daemon's own PID.
	# 9>&-: the daemon must not keep the region lock (lock_region) held after this script ends.
	setsid nohup "$@" >>"$log" 2>&1 </dev/null 9>&- &
	pid=$!
	printf '%s\n' "$pid" >"$(pidfile "$name")"
	printf '%s\n' "$exe" >"$URSA_PIDS/$name.exe"
	printf '%s\n' "$sig" >"$URSA_PIDS/$name.sig"
	sleep 0.2
	if ! kill -0 "$pid" 2>/dev/null; then
		tail -n 30 "$log" >&2 || true
		die "$name exited right after start; log: $log"
	fi
	say "$name started (pid $pid), log $log"
}

# stop_pid PID NAME: TERM, wait up to 10 s, then KILL (and wait up to 5 s more).
stop_pid() {
	local pid=$1 name=$2 i
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	warn "$name (pid $pid) did not stop in 10 s; sending KILL"
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
}

# stop_daemon NAME: TERM, wait up to 10 s, then KILL; removes NAME's pid files.
stop_daemon() {
	local name=$1 pid
	if pid=$(daemon_pid "$name"); then
		stop_pid "$pid" "$name"
		say "stopped $name (pid $pid)"
	fi
	rm -f "$(pidfile "$name")" "$URSA_PIDS/$name.exe" "$URSA_PIDS/$name.sig"
}

# wait_http URL SECONDS NAME [curl options...]: waits until URL answers 200. Fails with the
# tail of NAME's log if the daemon dies or time runs out.
wait_http() {
	local url=$1 secs=$2 name=$3 log=$4 i code
	shift 4
	for ((i = 0; i < secs * 5; i++)); do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$@" "$url" 2>/dev/null || true)
		[ "$code" = 200 ] && return 0
		if ! daemon_pid "$name" >/dev/null; then
			tail -n 30 "$log" >&2 || true
			die "$name died while waiting for $url; log: $log"
		fi
		sleep 0.2
	done
	tail -n 30 "$log" >&2 || true
	die "$url did not answer 200 within ${secs}s (last status ${code:-none}); log: $log"
}

# lock_region: one region script at a time (local-up, local-down, local-zone). Two at once would
# race on the PID files and leave daemons no script knows about; the second one waits.
lock_region() {
	mkdir -p "$URSA_STATE"
	exec 9>"$URSA_STATE/.lock"
	if ! flock -n 9; then
		say "another region script is running; waiting for it"
		flock -w 900 9 || die "timed out waiting for $URSA_STATE/.lock"
	fi
}
