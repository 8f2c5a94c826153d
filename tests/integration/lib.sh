# SPDX-License-Identifier: Apache-2.0
# Shared helpers for the integration tests: sourced, never run. Each test gets a private
# temporary directory; everything it starts is stopped by its pid in the EXIT trap.
set -u

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
BOOT=$BUILD/sandbox-app-boot
AGENT=$BUILD/sandbox-agent
TMP=$(mktemp -d /tmp/sandbox-test.XXXXXX)
chmod 755 "$TMP"
FAILS=0
CLEANUPS=()

cleanup() {
	local i
	for ((i = ${#CLEANUPS[@]} - 1; i >= 0; i--)); do
		eval "${CLEANUPS[$i]}" >/dev/null 2>&1 || true
	done
	# Every app still booted below $TMP/NAME/app is stopped too: an on_exit made inside a
	# command substitution (app=$(pyapp_make ...)) dies with its subshell.
	for i in "$TMP"/*/app; do
		[ -d "${i%/app}/.sandbox" ] && "$BOOT" --stop --grace 1000 "$i" >/dev/null 2>&1
	done
	rm -rf "$TMP"
}
trap cleanup EXIT

on_exit() { CLEANUPS+=("$*"); }

log() { printf '  %s\n' "$*"; }
pass() { printf '  ok   %s\n' "$*"; }
fail() {
	printf '  FAIL %s\n' "$*"
	FAILS=$((FAILS + 1))
}
skip() {
	echo "SKIP: $*"
	exit 77
}
finish() {
	if [ "$FAILS" -gt 0 ]; then
		echo "$FAILS check(s) failed"
		exit 1
	fi
	exit 0
}

# A check that makes the rest of the script pointless: say so and end the test now.
die() {
	echo "FAIL: $*"
	exit 1
}

# -I flags for every layer folder (mk/layers.mk), for test tools built against build/.
layer_includes() {
	local d
	for d in "$ROOT"/common/*/ "$ROOT"/guest/*/ "$ROOT"/host/; do
		printf -- '-I%s ' "${d%/}"
	done
}

# expected_cipher HOST_LIBSODIUM GUEST_LIBSODIUM: the channel cipher two ends on this CPU agree
# on (docs/protocol.md §4.7), given the libsodium version each end was built with. AEGIS-256
# needs 1.0.19 or later, AES-NI and AVX at both ends; AES-256-GCM needs AES-NI and PCLMULQDQ, and
# AVX too from 1.0.19 on; ChaCha20-Poly1305 is what is left.
expected_cipher() {
	local flag cpu=" " end ok_aegis=1 ok_gcm=1
	for flag in aes avx pclmulqdq; do grep -qw "$flag" /proc/cpuinfo && cpu+="$flag "; done
	for end in "$1" "$2"; do
		if dpkg --compare-versions "$end" ge 1.0.19; then
			[[ $cpu == *" aes "* && $cpu == *" avx "* ]] || ok_aegis=0
			[[ $cpu == *" aes "* && $cpu == *" avx "* && $cpu == *" pclmulqdq "* ]] || ok_gcm=0
		else
			ok_aegis=0
			[[ $cpu == *" aes "* && $cpu == *" pclmulqdq "* ]] || ok_gcm=0
		fi
	done
	if [ $ok_aegis = 1 ]; then
		echo aegis256
	elif [ $ok_gcm = 1 ]; then
		echo aes256-gcm
	else
		echo chacha20-poly1305
	fi
}

# wait_socket PATH: true once PATH is a socket (a daemon started in the background listens),
# false after 10 s.
wait_socket() {
	for _ in $(seq 100); do
		[ -S "$1" ] && return 0
		sleep 0.1
	done
	return 1
}

# The libsodium version the dynamic build links (the system's).
system_libsodium() { pkg-config --modversion libsodium 2>/dev/null || echo 0; }

need_root() { [ "$(id -u)" -eq 0 ] || skip "needs root (runs apps as another user)"; }

# all_of COMMAND... [-- COMMAND...]...: true when every command holds (for check, which runs one
# command: `check "x" [ a ] && [ b ]` would assert only the first).
all_of() {
	local cmd=()
	while [ $# -gt 0 ]; do
		if [ "$1" = -- ]; then
			"${cmd[@]}" || return 1
			cmd=()
		else
			cmd+=("$1")
		fi
		shift
	done
	[ ${#cmd[@]} -eq 0 ] || "${cmd[@]}"
}

check() { # check DESCRIPTION [!] COMMAND...
	local what=$1 negate=0
	shift
	if [ "$1" = "!" ]; then
		negate=1
		shift
	fi
	if "$@"; then
		[ $negate -eq 0 ] && pass "$what" || fail "$what"
	else
		[ $negate -eq 1 ] && pass "$what" || fail "$what"
	fi
}

# A TCP port on 127.0.0.1 that nobody listens on now.
free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

port_is_free() {
	! python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    sys.exit(0)
except OSError:
    sys.exit(1)
PY
}

# http_status URL [curl args...]: the status code, 000 when nothing answered.
http_status() {
	local url=$1
	shift
	curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time 5 "$@" "$url" || true
}

# The platform's environment: PATH, HOME, LANG, RAILS_ENV, a session id, a model credential.
platform_env() {
	echo env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 \
		RAILS_ENV=sandbox SANDBOX_MODE=agent SANDBOX_SESSION_ID="${SESSION_ID:-sess1234abcd5678}" \
		SANDBOX_TIMEOUT=3600 INSTANCE_TIER=small ANTHROPIC_API_KEY="${MODEL_KEY:-sk-ant-test-0123456789abcdef}"
}

# make_workspace NAME EXAMPLE: a copy of examples/EXAMPLE at $TMP/NAME/app; prints the app dir.
make_workspace() {
	local ws=$TMP/$1
	mkdir -p "$ws"
	cp -a "$ROOT/examples/$2" "$ws/app"
	echo "$ws/app"
}

# Processes whose environment or command line contains a string (pids, one per line).
procs_holding() {
	local needle=$1 p
	for p in /proc/[0-9]*; do
		[ -r "$p/environ" ] || continue
		if { tr '\0' '\n' <"$p/environ" | grep -qF -- "$needle"; } 2>/dev/null ||
			{ tr '\0' ' ' <"$p/cmdline" | grep -qF -- "$needle"; } 2>/dev/null; then
			echo "${p#/proc/}"
		fi
	done
}

# Processes whose cwd lies below a directory.
procs_in() {
	local dir=$1 p cwd
	for p in /proc/[0-9]*; do
		cwd=$(readlink "$p/cwd" 2>/dev/null) || continue
		case "$cwd" in "$dir" | "$dir"/*) echo "${p#/proc/}" ;; esac
	done
}

# stop_boot APP_DIR [args]: best-effort stop for cleanup.
stop_boot() { "$BOOT" --stop --grace 2000 "$@" >/dev/null 2>&1 || true; }

# A user the apps run as (the image has `sandbox`; tests create it when missing).
ensure_sandbox_user() {
	id sandbox >/dev/null 2>&1 || useradd --system --create-home --home-dir /home/sandbox \
		--shell /bin/sh sandbox >/dev/null 2>&1 || true
	id sandbox >/dev/null 2>&1
}

# The smallest real app (tests/data/pyapp, python3's http.server), booted as the platform would.
# pyapp_make NAME [KEY=VALUE...]: a workspace $TMP/NAME with the pyapp in app/; each KEY=VALUE
# (setup, manifest, start, raw) replaces that line of the pyapp's sandbox.yml (raw: the whole file).
# Needs LISTEN_PORT (pyapp_boot's forwarder).
pyapp_make() {
	local app=$TMP/$1/app kv
	local setup='["echo setting up"]' manifest='/usr/bin/python3 manifest.py'
	local start='exec /usr/bin/python3 server.py' raw=''
	mkdir -p "$TMP/$1"
	cp -a "$ROOT/tests/data/pyapp" "$app"
	shift
	for kv in "$@"; do
		case $kv in
		setup=*) setup=${kv#setup=} ;;
		manifest=*) manifest=${kv#manifest=} ;;
		start=*) start=${kv#start=} ;;
		raw=*) raw=${kv#raw=} ;;
		esac
	done
	if [ -n "$raw" ]; then
		printf '%s\n' "$raw" >"$app/.activeagents/sandbox.yml"
	else
		printf 'setup: %s\nmanifest: %s\nstart: %s\n' "$setup" "$manifest" "$start" \
			>"$app/.activeagents/sandbox.yml"
	fi
	echo "$app" # stopped by cleanup() at the end (an on_exit here would die with $(...))
}

# pyapp_boot APP [args]: runs sandbox-app-boot as the platform would; sets RC, OUT, ERR.
pyapp_boot() {
	local app=$1
	shift
	OUT=$TMP/out.$$ ERR=$TMP/err.$$
	$(platform_env) ${EXTRA_ENV:-} "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 \
		--cache-root "$TMP/cache" "$@" "$app" >"$OUT" 2>"$ERR"
	RC=$?
}
