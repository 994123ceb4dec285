# shellcheck shell=bash
# Small OCI images built without network from Debian's busybox-static with umoci, and a local
# registry (Debian's docker-registry, the CNCF Distribution registry) that serves them.
# Sourced, never executed; callers run under `set -euo pipefail`. Sources common.sh if the
# caller has not.
#
# Images (registry repository:tag <- tag in the OCI layout):
#   library/busybox:1.36 <- busybox-1.36  /bin/busybox from busybox-static, every applet as a
#                           symlink, /etc/passwd and /etc/group with root and nobody (65534),
#                           user root, no entrypoint, cmd ["sh"]. (The tag is the name users
#                           write; the binary is Debian's busybox-static, 1.35 on bookworm.)
#   library/pause:3.9    <- pause-3.9     the sandbox image of containerd's CRI: the busybox
#                           layer with entrypoint ["/bin/sh","-c",URSA_PAUSE_SCRIPT], which
#                           sleeps forever, reaps children and exits 0 on SIGTERM or SIGINT.
#   library/httpd:1      <- httpd-1       the busybox layer plus /www/index.html; cmd
#                           ["httpd","-f","-p","80","-h","/www"], exposes 80/tcp.
# pause and httpd share the busybox layer, so a registry and a node store it once.
# Pushed under a second tag (URSA_IMAGE_ALIASES): library/busybox:latest and library/httpd:latest,
# so that `--image=busybox` and `--image=httpd` name them as users are used to.
#
# Functions:
#   images_build CACHE_DIR         builds the layout once into CACHE_DIR/<key>/oci and sets
#                                  URSA_IMAGE_LAYOUT to it; <key> is busybox-static's version
#                                  and a hash of this file and deploy/images/.
#   registry_start DIR PORT        writes DIR/config.yml, starts docker-registry on
#                                  127.0.0.1:PORT with storage DIR/storage, log DIR/registry.log,
#                                  pid DIR/registry.pid, and waits until /v2/ answers 200.
#   registry_push LAYOUT PORT      copies every image of LAYOUT to 127.0.0.1:PORT with skopeo.
#   registry_stop DIR              TERM (KILL after 10 s) the registry of DIR.

if ! declare -F say >/dev/null; then
	# shellcheck source-path=SCRIPTDIR
	source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
fi

URSA_IMAGES_LIB=${BASH_SOURCE[0]}
URSA_IMAGES_SRC=$URSA_ROOT/deploy/images
URSA_BUSYBOX_BIN=${URSA_BUSYBOX_BIN:-/bin/busybox}
# Registry repository:tag of every image, in build order.
URSA_IMAGES=(library/busybox:1.36 library/pause:3.9 library/httpd:1)
# ALIAS=IMAGE: the image of URSA_IMAGES pushed again under ALIAS.
URSA_IMAGE_ALIASES=(library/busybox:latest=library/busybox:1.36 library/httpd:latest=library/httpd:1)
URSA_IMAGE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# PID 1 of the sandbox: without a handler PID 1 of a PID namespace ignores TERM, so the shell
# traps it; `wait` returns at once when a trapped signal arrives and reaps any child (orphans
# of a shared PID namespace included) meanwhile.
URSA_PAUSE_SCRIPT='trap "exit 0" TERM INT; while :; do sleep 2147483647 & wait $!; done'

# image_layout_tag REPO:TAG: the tag of REPO:TAG in the OCI layout (library/busybox:1.36 ->
# busybox-1.36); umoci's tags cannot hold ':' or '/'.
image_layout_tag() {
	local ref=${1##*/}
	printf '%s\n' "${ref/:/-}"
}

_images_need() {
	local b
	for b in "$@"; do
		command -v "$b" >/dev/null 2>&1 || [ -x "$b" ] || die "$b not found (Debian packages:" \
			"containerd runc containernetworking-plugins docker-registry umoci skopeo busybox-static)"
	done
}

# images_cache_key: busybox-static's version and a hash of the recipe (this file, deploy/images).
images_cache_key() {
	local ver sum
	ver=$(dpkg-query -W -f='${Version}' busybox-static 2>/dev/null || true)
	[ -n "$ver" ] || ver=sha-$(sha256sum "$URSA_BUSYBOX_BIN" | cut -c1-12)
	sum=$({
		cat "$URSA_IMAGES_LIB"
		(cd "$URSA_IMAGES_SRC" && find . -type f | LC_ALL=C sort | while IFS= read -r f; do
			printf '%s\n' "$f"
			cat "$f"
		done)
	} | sha256sum | cut -c1-12)
	printf 'busybox-static_%s_%s\n' "${ver//[^A-Za-z0-9.+-]/_}" "$sum"
}

# _images_fill_busybox ROOTFS: busybox, its applet links, the base files.
_images_fill_busybox() {
	local root=$1 p
	install -d -m 0755 "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,var}
	install -d -m 0700 "$root/root"
	install -d -m 1777 "$root/tmp"
	install -m 0755 "$URSA_BUSYBOX_BIN" "$root/bin/busybox"
	while IFS= read -r p; do
		[ -n "$p" ] && [ ! -e "$root/$p" ] && [ ! -L "$root/$p" ] && ln -s /bin/busybox "$root/$p"
	done < <("$URSA_BUSYBOX_BIN" --list-full)
	[ -L "$root/bin/sh" ] || die "busybox --list-full gave no bin/sh"
	install -m 0644 "$URSA_IMAGES_SRC/base/etc/passwd" "$URSA_IMAGES_SRC/base/etc/group" "$root/etc/"
}

# _images_build_into OUT: builds the three images into the OCI layout OUT/oci.
_images_build_into() {
	local out=$1 layout=$1/oci ver unpack=()
	[ "$(id -u)" -eq 0 ] || unpack=(--rootless)
	ver=$("$URSA_BUSYBOX_BIN" 2>&1 | head -n 1 | sed -n 's/^BusyBox \(v[^ ]*\).*/\1/p')
	local hist=(--history.author ursa --history.created_by "ursa deploy/lib/images.sh (busybox ${ver:-?})")

	umoci init --layout "$layout"
	umoci new --image "$layout:busybox-1.36"
	umoci unpack "${unpack[@]}" --image "$layout:busybox-1.36" "$out/b-busybox" >/dev/null
	_images_fill_busybox "$out/b-busybox/rootfs"
	umoci repack "${hist[@]}" --image "$layout:busybox-1.36" "$out/b-busybox"
	umoci config --no-history --image "$layout:busybox-1.36" --author ursa \
		--config.user root --config.env "PATH=$URSA_IMAGE_PATH" --config.cmd sh \
		--config.label "org.opencontainers.image.title=busybox" \
		--config.label "org.opencontainers.image.version=${ver:-unknown}"

	umoci config --no-history --image "$layout:busybox-1.36" --tag pause-3.9 \
		--clear config.cmd --clear config.labels \
		--config.entrypoint /bin/sh --config.entrypoint=-c --config.entrypoint "$URSA_PAUSE_SCRIPT" \
		--config.label "org.opencontainers.image.title=pause"

	umoci unpack "${unpack[@]}" --image "$layout:busybox-1.36" "$out/b-httpd" >/dev/null
	install -d -m 0755 "$out/b-httpd/rootfs/www"
	install -m 0644 "$URSA_IMAGES_SRC/httpd/www/"* "$out/b-httpd/rootfs/www/"
	umoci repack "${hist[@]}" --image "$layout:httpd-1" "$out/b-httpd"
	umoci config --no-history --image "$layout:httpd-1" --clear config.cmd --clear config.labels \
		--config.cmd httpd --config.cmd=-f --config.cmd=-p --config.cmd 80 --config.cmd=-h --config.cmd /www \
		--config.exposedports 80/tcp --config.label "org.opencontainers.image.title=httpd"

	rm -rf "$out/b-busybox" "$out/b-httpd"
	umoci gc --layout "$layout"
	local t
	for t in "${URSA_IMAGES[@]}"; do
		umoci stat --image "$layout:$(image_layout_tag "$t")" >/dev/null || die "image $t missing after build"
	done
}

# images_build CACHE_DIR: sets URSA_IMAGE_LAYOUT to the OCI layout holding every image of
# URSA_IMAGES, building it first unless CACHE_DIR already has one for this busybox-static and
# recipe. Concurrent callers serialise on CACHE_DIR/.lock; a failed build leaves nothing behind.
images_build() {
	local cache=$1 key dir tmp fd start
	_images_need umoci "$URSA_BUSYBOX_BIN" sha256sum
	key=$(images_cache_key)
	dir=$cache/$key
	URSA_IMAGE_LAYOUT=$dir/oci
	[ -f "$dir/complete" ] && return 0
	mkdir -p "$cache"
	exec {fd}>"$cache/.lock"
	flock -w 600 "$fd" || die "timed out waiting for $cache/.lock"
	if [ ! -f "$dir/complete" ]; then
		say "building images (${URSA_IMAGES[*]}) into $dir"
		start=$(date +%s%N)
		tmp=$(mktemp -d "$cache/.build.XXXXXX")
		if ! (set -e; _images_build_into "$tmp"); then
			rm -rf "$tmp"
			exec {fd}>&-
			die "building images failed"
		fi
		rm -rf "$dir"
		mv "$tmp" "$dir"
		# Layouts of older busybox-static versions or recipes are not used again.
		find "$cache" -mindepth 1 -maxdepth 1 -name 'busybox-static_*' ! -name "$key" -exec rm -rf {} +
		printf 'built %s in %d ms\n' "$(date -u +%FT%TZ)" $((($(date +%s%N) - start) / 1000000)) >"$dir/complete"
		say "images built: $URSA_IMAGE_LAYOUT"
	fi
	exec {fd}>&-
}

# --- local registry ------------------------------------------------------------------------

# registry_write_config DIR PORT: DIR/config.yml for docker-registry on 127.0.0.1:PORT.
registry_write_config() {
	local dir=$1 port=$2
	mkdir -p "$dir/storage"
	# A fixed secret (kept across restarts) silences the registry's warning about a random one.
	[ -s "$dir/http.secret" ] || (umask 077; od -An -N16 -tx1 /dev/urandom | tr -d ' \n' >"$dir/http.secret")
	cat >"$dir/config.yml" <<-EOF
		# Written by deploy/lib/images.sh: Ursa's local image registry.
		version: 0.1
		log:
		  level: warn
		  accesslog:
		    disabled: true
		storage:
		  filesystem:
		    rootdirectory: $dir/storage
		  delete:
		    enabled: true
		  cache:
		    blobdescriptor: inmemory
		http:
		  addr: 127.0.0.1:$port
		  secret: $(cat "$dir/http.secret")
		  headers:
		    X-Content-Type-Options: [nosniff]
	EOF
	# skopeo's signature policy for pushing our own unsigned images (not the system one).
	printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$dir/policy.json"
}

# _node_pid DIR/NAME.pid EXE: prints the PID recorded in the file if that process still runs EXE.
_node_pid() {
	local pf=$1 exe=$2 pid
	[ -f "$pf" ] || return 1
	pid=$(cat "$pf")
	pid_matches "$pid" "$exe" || return 1
	printf '%s\n' "$pid"
}

# _node_spawn PIDFILE LOG CMD...: CMD in its own session, output appended to LOG.
_node_spawn() {
	local pf=$1 log=$2 pid
	shift 2
	printf '\n--- %s starting: %s\n' "$(date -u +%FT%TZ)" "$*" >>"$log"
	setsid nohup "$@" >>"$log" 2>&1 </dev/null 9>&- &
	pid=$!
	printf '%s\n' "$pid" >"$pf"
}

# _node_stop PIDFILE EXE NAME: TERM, wait up to 10 s, KILL; removes PIDFILE.
_node_stop() {
	local pf=$1 exe=$2 name=$3 pid
	if pid=$(_node_pid "$pf" "$exe"); then
		stop_pid "$pid" "$name"
	fi
	rm -f "$pf"
}

# registry_start DIR PORT
registry_start() {
	local dir=$1 port=$2 exe pid code deadline
	_images_need docker-registry curl
	exe=$(command -v docker-registry)
	registry_write_config "$dir" "$port"
	if pid=$(_node_pid "$dir/registry.pid" "$exe"); then
		say "registry already running (pid $pid)"
	else
		# Something else on the port would answer /v2/ in our registry's place.
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/" 2>/dev/null || true)
		[ "$code" = 000 ] || die "127.0.0.1:$port is already in use (not by the registry of $dir)"
		_node_spawn "$dir/registry.pid" "$dir/registry.log" "$exe" serve "$dir/config.yml"
		pid=$(cat "$dir/registry.pid")
	fi
	deadline=$((SECONDS + 30))
	while [ $SECONDS -lt $deadline ]; do
		code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 2 "http://127.0.0.1:$port/v2/" || true)
		[ "$code" = 200 ] && return 0
		if ! kill -0 "$pid" 2>/dev/null; then
			tail -n 20 "$dir/registry.log" >&2 || true
			die "docker-registry exited; log: $dir/registry.log"
		fi
		sleep 0.2
	done
	tail -n 20 "$dir/registry.log" >&2 || true
	die "docker-registry on 127.0.0.1:$port did not answer /v2/ in 30 s; log: $dir/registry.log"
}

registry_stop() {
	local dir=$1
	_node_stop "$dir/registry.pid" "$(command -v docker-registry || echo /usr/bin/docker-registry)" docker-registry
}

# registry_push LAYOUT PORT [POLICY]: every image of URSA_IMAGES to 127.0.0.1:PORT/<repo>:<tag>.
# POLICY is a containers-policy.json (default: accept anything, written to a temporary file).
registry_push() {
	local layout=$1 port=$2 policy=${3:-} ref tmp=
	_images_need skopeo
	if [ -z "$policy" ]; then
		tmp=$(mktemp)
		printf '{"default":[{"type":"insecureAcceptAnything"}]}\n' >"$tmp"
		policy=$tmp
	fi
	for ref in "${URSA_IMAGES[@]}" "${URSA_IMAGE_ALIASES[@]}"; do
		local dest=${ref%%=*} src=${ref#*=}
		if ! skopeo --policy "$policy" copy --quiet --dest-tls-verify=false \
			"oci:$layout:$(image_layout_tag "$src")" "docker://127.0.0.1:$port/$dest" >&2; then
			rm -f "$tmp"
			die "skopeo could not push $src to 127.0.0.1:$port/$dest"
		fi
	done
	rm -f "$tmp"
	say "pushed ${URSA_IMAGES[*]} ${URSA_IMAGE_ALIASES[*]%%=*} to 127.0.0.1:$port"
}
