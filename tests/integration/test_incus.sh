#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The minimal image in a real Incus daemon, driven as the platform drives it
# (tests/incus/README.md): Incus 6.0 from bookworm-backports (tests/incus/install.sh), a private
# incusd in network and mount namespaces of its own (tests/incus/daemon.sh), the image built by
# `make image IMAGE_PROFILE=minimal` and imported, one container under the example restricted
# profile (image-build/incus-profile.yaml, without its NIC: the daemon has no network), then
#   - the directory shape: tests/data/pyapp pushed to /workspace/app, `incus exec C --cwd /root
#     --env ... -- sandbox-app-boot /workspace/app` as uid 0 with the platform's environment,
#     ONE GET /up through a proxy device on a unix socket, runtime.json read with `incus exec`;
#     a failing boot whose last 500 characters of stderr hold the cause;
#   - the spec shape: /workspace/boot/spec.json (root, 0600), a failing step, `--from STEP`,
#     `--restart`;
#   - `sandbox-ctl --incus C`: hello, secrets put, push, checkout, boot --wait, status, logs
#     (--follow), runtime, publish, stop, and hello through a unix proxy device;
#   - the faults a real Incus found, each fixed (tests/incus/README.md lists them);
#   - the full image where it is cached (INCUS_FULL=1 builds it): PostgreSQL under systemd;
#   - afterwards nothing is left: no instance, image, profile or pool, the daemon gone, no
#     process in its namespaces, no mount below its directory, no cgroup of the container.
# Set SANDBOX_INCUS_INSTALL=0 to skip instead of installing Incus when it is missing.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/incus/daemon.sh"

[ "$(id -u)" = 0 ] || skip "needs root (incusd, namespaces, dpkg)"
for tool in unshare nsenter ip curl python3 ruby debootstrap dpkg-deb; do
	command -v "$tool" >/dev/null || skip "$tool is missing (packaging/install-deps.sh)"
done
[ -f "$ROOT/mk/static.mk" ] || skip "no \`make static\` in this tree: the image carries the static guest binary"
[ -d /sys/fs/cgroup ] || skip "no cgroup file system"
VERSION=$(sed -n 's/^VERSION *:\{0,1\}= *//p' "$ROOT/Makefile")
CTL=$BUILD/sandbox-ctl
[ -x "$CTL" ] || skip "build/sandbox-ctl is missing: run make first"
T0=$(date +%s.%N)
elapsed() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(date +%s.%N)"; }

# --- Incus -------------------------------------------------------------------------------------
t=$(date +%s.%N)
if ! "$ROOT/tests/incus/install.sh" --check 2>/dev/null; then
	[ "${SANDBOX_INCUS_INSTALL:-1}" = 0 ] && skip "Incus 6.0 is not installed (SANDBOX_INCUS_INSTALL=0)"
	if ! "$ROOT/tests/incus/install.sh" >"$TMP/install.out" 2>&1; then
		tail -20 "$TMP/install.out"
		skip "cannot install Incus 6.0 from bookworm-backports (see above)"
	fi
fi
log "Incus $("$ROOT/tests/incus/install.sh") ready after $(elapsed "$t") s"

# --- the image -----------------------------------------------------------------------------------
# `make image IMAGE_PROFILE=minimal`, kept under ~/.cache/sandbox-app-runtime/incus-image/ keyed
# by what goes into it: the guest package (built reproducibly), image-build/ and the cached
# package layer build.sh starts from. A change to any of them builds it again.
t=$(date +%s.%N)
if ! make -C "$ROOT" -s deb >"$TMP/deb.log" 2>&1; then
	tail -30 "$TMP/deb.log"
	fail "make deb"
	finish
fi
IMG_CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/incus-image
key=$({
	sha256sum <"$ROOT/build/deb/sandbox-agent_${VERSION}_$(dpkg --print-architecture).deb"
	cat "$ROOT"/image-build/build.sh "$ROOT"/image-build/templates/* "$ROOT"/image-build/files/* | sha256sum
	stat -c '%n %s %Y' "${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}"/image/bookworm-minimal-*.tar.zst 2>/dev/null
} | sha256sum | cut -c1-16)
IMAGE=$IMG_CACHE/sandbox-app-runtime-minimal-$VERSION-$key.tar.gz
if [ -s "$IMAGE" ]; then
	touch "$IMAGE"
	log "image $(basename "$IMAGE") from the cache"
else
	if ! make -C "$ROOT" -s image IMAGE_PROFILE=minimal IMAGE_OUT="$TMP/image" \
		IMAGE_ARGS=--no-rootfs-dir >"$TMP/image.log" 2>&1; then
		tail -30 "$TMP/image.log"
		fail "make image IMAGE_PROFILE=minimal"
		finish
	fi
	check "make image IMAGE_PROFILE=minimal wrote the image" \
		test -s "$TMP/image/sandbox-app-runtime-minimal-$VERSION-amd64.tar.gz"
	mkdir -p "$IMG_CACHE"
	mv "$TMP/image/sandbox-app-runtime-minimal-$VERSION-amd64.tar.gz" "$IMAGE.tmp.$$" &&
		mv "$IMAGE.tmp.$$" "$IMAGE"
	# Keep the two most recently used minimal images (the full one is kept apart, below).
	find "$IMG_CACHE" -maxdepth 1 -name 'sandbox-app-runtime-minimal-*.tar.gz' -printf '%T@ %p\n' | sort -rn | tail -n +3 |
		cut -d' ' -f2- | xargs -r rm -f
	log "image built ($(grep -c 'reusing the cached root' "$TMP/image.log") cached package layer reused)"
fi
log "image ready after $(elapsed "$t") s"

# --- the daemon ------------------------------------------------------------------------------------
t=$(date +%s.%N)
links_before=$(ip -o link | cut -d: -f2 | sort | paste -sd' ')
on_exit incus_daemon_stop
if ! incus_daemon_start "$TMP/incus" >"$TMP/daemon.out" 2>&1; then
	cat "$TMP/daemon.out"
	fail "incusd started and initialised from tests/incus/preseed.yaml"
	finish
fi
pass "incusd (pid $INCUS_PID) ready and initialised in $(elapsed "$t") s"
check "incusd runs in a network namespace of its own" \
	test "$(readlink "/proc/$INCUS_PID/ns/net")" != "$(readlink /proc/self/ns/net)"
check "its network namespace holds loopback only" \
	test "$(nsenter -t "$INCUS_PID" -n ip -o link | cut -d: -f2 | paste -sd' ')" = " lo"
check "the daemon has no managed network" test -z "$(inc network list --format csv | grep -v '^lo,')"
check "the machine's own interfaces are unchanged" \
	test "$(ip -o link | cut -d: -f2 | sort | paste -sd' ')" = "$links_before"
check "one dir storage pool" test "$(inc storage list --format csv --columns nD)" = "default,dir"

t=$(date +%s.%N)
inc image import "$IMAGE" --alias sandbox-app-runtime-test >"$TMP/import.out" 2>&1
check "incus image import (unified tarball) in $(elapsed "$t") s" \
	test "$(inc image list --format csv --columns l)" = sandbox-app-runtime-test
check "the image carries the version in its properties" \
	test "$(inc image get-property sandbox-app-runtime-test sandbox_app_runtime.version 2>/dev/null)" = "$VERSION"

# The example restricted profile, without its NIC (it names incusbr0, the bridge a standard
# `incus admin init` makes; this daemon has no network), and the tests' overlay (no AF_VSOCK).
ruby -ryaml -e 'p = YAML.safe_load(File.read(ARGV[0])); p["devices"].delete("eth0"); print p.to_yaml' \
	"$ROOT/image-build/incus-profile.yaml" >"$TMP/profile.yaml"
inc profile create sandbox-app >/dev/null && inc profile edit sandbox-app <"$TMP/profile.yaml" &&
	inc profile create sandbox-app-test >/dev/null &&
	inc profile edit sandbox-app-test <"$ROOT/tests/incus/profile-test.yaml"
check "the example profile (without eth0) and the tests' overlay are accepted" test $? -eq 0

CT=sar-test-$$
INCUS_INSTANCES=$CT
t=$(date +%s.%N)
inc init -q sandbox-app-runtime-test "$CT" --profile default --profile sandbox-app \
	--profile sandbox-app-test >"$TMP/init.out" 2>&1
check "incus init $CT in $(elapsed "$t") s" test $? -eq 0
# The packaged unit is masked before the first start: in a container it would listen on vsock,
# which is the machine's (known fault (b) checks the unit itself, with vsock refused).
ROOTFS=$INCUS_DIR/storage-pools/default/containers/$CT/rootfs
ln -s /dev/null "$ROOTFS/etc/systemd/system/sandbox-agent.service"
t=$(date +%s.%N)
inc start "$CT" >"$TMP/start.out" 2>&1
check "incus start in $(elapsed "$t") s" test $? -eq 0
check "AF_VSOCK is refused in the seccomp policy the container started with" \
	grep -qx 'socket errno 97 \[0,40,SCMP_CMP_EQ\]' "$INCUS_DIR/security/seccomp/$CT"
state=$(inc exec "$CT" -- timeout 60 systemctl is-system-running --wait 2>&1)
check "systemd in the container is up ($state)" test "$state" = running
[ "$state" = running ] || inc exec "$CT" -- systemctl --failed --no-legend | sed 's/^/    /'
check "the container's init runs under seccomp" \
	test "$(inc exec "$CT" -- sed -n 's/^Seccomp:\t//p' /proc/1/status)" = 2
check "the container has no interface but loopback" \
	test "$(inc exec "$CT" -- ls /sys/class/net)" = lo
check "the profile's limits apply (2 CPUs, 2 GiB)" \
	test "$(inc config get "$CT" limits.memory --expanded)/$(inc config get "$CT" limits.cpu --expanded)" = "2GiB/2"
# shellcheck disable=SC2016 # awk's own fields
check "the container is unprivileged with an isolated idmap" \
	test "$(inc exec "$CT" -- awk 'NR == 1 { print ($2 >= 1000000) }' /proc/self/uid_map)" = 1

# The platform's environment: the instance's environment.* keys, the model credential, PATH,
# HOME=/root, LANG=C.UTF-8; uid 0, cwd /root.
MODEL_KEY=sk-ant-test-0123456789abcdef
PENV=(--env RAILS_ENV=sandbox --env SANDBOX_MODE=agent --env SANDBOX_SESSION_ID=sess1234abcd5678
	--env SANDBOX_TIMEOUT=3600 --env INSTANCE_TIER=small --env "ANTHROPIC_API_KEY=$MODEL_KEY"
	--env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --env HOME=/root
	--env LANG=C.UTF-8)
pexec() { inc exec "$CT" --cwd /root "${PENV[@]}" -- "$@"; }
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }
# push_app DIR DEST: a copy of DIR at DEST in the container (DEST's parent must exist).
push_app() {
	rm -rf "$TMP/push" && mkdir -p "$TMP/push" && cp -a "$1" "$TMP/push/${2##*/}" &&
		inc file push -q -r "$TMP/push/${2##*/}" "$CT${2%/*}/"
}
servers() { inc exec "$CT" -- sh -c 'ps -eo args | grep -c "^/usr/bin/python3 server.py"'; }

# --- the directory shape -----------------------------------------------------------------------
# shellcheck disable=SC2016 # expanded in the container
check "incus exec runs as uid 0 in /root with the platform's environment" \
	test "$(pexec sh -c 'echo "$(id -u) $(pwd) $RAILS_ENV $INSTANCE_TIER $LANG"')" = "0 /root sandbox small C.UTF-8"
push_app "$ROOT/tests/data/pyapp" /workspace/app
check "pyapp is in /workspace/app" inc exec "$CT" -- test -f /workspace/app/.activeagents/sandbox.yml
t=$(date +%s.%N)
pexec sandbox-app-boot /workspace/app >"$TMP/dir.out" 2>"$TMP/dir.err"
rc=$?
check "sandbox-app-boot /workspace/app through incus exec: ready in $(elapsed "$t") s (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || tail -20 "$TMP/dir.err"
WEB=$TMP/web.sock
inc config device add "$CT" web proxy "listen=unix:$WEB" connect=tcp:127.0.0.1:8080 bind=host >/dev/null
check "the proxy device's unix socket exists" test -S "$WEB"
check "ONE GET /up through the proxy device answers 200" \
	test "$(http_status http://localhost/up --unix-socket "$WEB")" = 200
inc exec "$CT" -- cat /workspace/runtime.json >"$TMP/runtime.json"
check "runtime.json parses: mcp_path /mcp" test "$(json "$TMP/runtime.json" 'd["mcp_path"]')" = /mcp
token=$(json "$TMP/runtime.json" 'd["mcp_token"]')
check "runtime.json parses: mcp_token aa_..." test "${token#aa_}" != "$token"
check "runtime.json is root's, 0600" test "$(inc exec "$CT" -- stat -c '%U %a' /workspace/runtime.json)" = "root 600"
check "the MCP path answers 401 without the token" test "$(http_status http://localhost/mcp --unix-socket "$WEB")" = 401
check "and 405 to a GET with it" \
	test "$(http_status http://localhost/mcp --unix-socket "$WEB" -H "Authorization: Bearer $token")" = 405
check "sandbox-app-boot --stop exits 0" pexec sandbox-app-boot --stop --grace 2000 /workspace/app
check "no app server is left after --stop" test "$(servers)" = 0

# A failing boot: the platform keeps the last 500 characters of stderr, which must hold the cause.
cp -a "$ROOT/tests/data/pyapp" "$TMP/failapp"
cat >"$TMP/failapp/.activeagents/sandbox.yml" <<'EOF'
setup:
  - seq 1 300
  - echo "registry.invalid refused the download (cause-7f3a)" >&2; exit 7
manifest: /usr/bin/python3 manifest.py
start: exec /usr/bin/python3 server.py
EOF
inc exec "$CT" -- install -d -m 0755 /workspace/fail
push_app "$TMP/failapp" /workspace/fail/app
pexec sandbox-app-boot /workspace/fail/app >"$TMP/fail.out" 2>"$TMP/fail.err"
rc=$?
tail500=$(tail -c 500 "$TMP/fail.err")
check "a failing setup exits 1 (got $rc)" test $rc -eq 1
check "the last 500 characters of stderr name the step" grep -q 'Sandbox setup failed' <<<"$tail500"
check "and hold the cause" grep -qF 'registry.invalid refused the download (cause-7f3a)' <<<"$tail500"
check "no app server runs after the failed boot" test "$(servers)" = 0

# --- the spec shape --------------------------------------------------------------------------------
cat >"$TMP/spec.json" <<'EOF'
{
  "version": 1,
  "app_dir": "/workspace/app",
  "manifest_path": "/workspace/run/runtime.json",
  "user": "sandbox",
  "port": 3000,
  "listen_port": 8080,
  "timeout": 300,
  "start_url": "/up",
  "mode": "preview",
  "kind": "python",
  "env": {"APP_GREETING": "hello"},
  "secret_names": ["ANTHROPIC_API_KEY"],
  "steps": [
    {"name": "setup", "command": "echo setting up"},
    {"name": "setup_2", "command": "test -e /workspace/go || { echo '/workspace/go is missing (cause-spec-9c1)' >&2; exit 3; }"}
  ],
  "manifest": {"command": "/usr/bin/python3 manifest.py", "timeout": 60},
  "start": {"command": "exec /usr/bin/python3 server.py"},
  "recorded_steps": [],
  "a_key_a_later_platform_adds": true
}
EOF
inc exec "$CT" -- install -d -m 0700 /workspace/boot
inc file push -q --uid 0 --gid 0 --mode 0600 "$TMP/spec.json" "$CT/workspace/boot/spec.json"
check "the spec is root's, 0600" \
	test "$(inc exec "$CT" -- stat -c '%u %a' /workspace/boot/spec.json)" = "0 600"
SPEC=/workspace/boot/spec.json
pexec sandbox-app-boot --spec $SPEC >"$TMP/spec1.out" 2>"$TMP/spec1.err"
rc=$?
check "the spec boot fails at setup_2 (exit $rc)" test $rc -eq 1
check "its last line of stderr holds the cause" grep -qF 'cause-spec-9c1' <<<"$(tail -n 1 "$TMP/spec1.err")"
inc exec "$CT" -- cat /workspace/boot/state.json >"$TMP/state1.json"
check "state.json (in the spec's directory): failed at setup_2" \
	test "$(json "$TMP/state1.json" 'd["status"] + " " + d["step"]')" = "failed setup_2"
inc exec "$CT" -- touch /workspace/go
pexec sandbox-app-boot --spec $SPEC --from setup_2 >"$TMP/spec2.out" 2>"$TMP/spec2.err"
rc=$?
check "--from setup_2: exit $rc, {\"status\":\"ready\"} on stdout" \
	test "$rc $(cat "$TMP/spec2.out")" = '0 {"status":"ready"}'
[ $rc -eq 0 ] || tail -20 "$TMP/spec2.err"
inc exec "$CT" -- cat /workspace/boot/state.json >"$TMP/state2.json"
check "state.json: ready, setup kept from the failed boot" \
	test "$(json "$TMP/state2.json" 'd["status"] + " " + ",".join(d["completed"])')" = "ready setup,setup_2,manifest"
# What the platform reads as progress, in its schema (docs/boot-spec.md, "state.json").
check "state.json in the platform's schema: the failed boot's failed_step, resumable_steps" \
	test "$(json "$TMP/state1.json" 'd["version"], d["failed_step"], d["resumable_steps"], d["mode"], d["kind"]')" = \
	"(1, 'setup_2', ['setup', 'setup_2'], 'preview', 'python')"
check "state.json: each phase with status, ISO times and a duration, resumed_from" \
	test "$(json "$TMP/state2.json" '(d["resumed_from"], [(s["name"], s["status"]) for s in d["steps"]], all(s["started_at"].endswith("Z") and s["duration_ms"] >= 0 for s in d["steps"]), d["finished_at"] >= d["started_at"])')" = \
	"('setup_2', [('preflight', 'succeeded'), ('toolchain', 'succeeded'), ('setup', 'succeeded'), ('setup_2', 'succeeded'), ('manifest', 'succeeded'), ('start', 'succeeded')], True, True)"
check "GET /up through the proxy device answers 200" \
	test "$(http_status http://localhost/up --unix-socket "$WEB")" = 200
inc exec "$CT" -- cat /workspace/run/runtime.json >"$TMP/runtime2.json"
token=$(json "$TMP/runtime2.json" 'd["mcp_token"]')
check "the spec's runtime.json parses (mcp_path /mcp, a token)" \
	test "$(json "$TMP/runtime2.json" 'd["mcp_path"]')/${token:0:3}" = "/mcp/aa_"
check "the MCP path answers 405 with the token" \
	test "$(http_status http://localhost/mcp --unix-socket "$WEB" -H "Authorization: Bearer $token")" = 405
pid1=$(json "$TMP/state2.json" 'd["server_pid"]')
pexec sandbox-app-boot --spec $SPEC --restart >"$TMP/spec3.out" 2>"$TMP/spec3.err"
rc=$?
check "--restart after ready: exit $rc, {\"status\":\"ready\"}" \
	test "$rc $(cat "$TMP/spec3.out")" = '0 {"status":"ready"}'
inc exec "$CT" -- cat /workspace/boot/state.json >"$TMP/state3.json"
check "--restart started a new server" test "$(json "$TMP/state3.json" 'd["server_pid"]')" != "$pid1"
check "/up answers 200 after --restart" test "$(http_status http://localhost/up --unix-socket "$WEB")" = 200
check "a spec readable by others is refused (exit 2)" \
	inc exec "$CT" -- sh -c "chmod 0644 $SPEC && sandbox-app-boot --spec $SPEC --restart >/dev/null 2>&1; r=\$?; chmod 0600 $SPEC; [ \$r -eq 2 ]"
check "the spec boot stops (--stop)" pexec sandbox-app-boot --spec $SPEC --stop --grace 2000
check "no app server is left" test "$(servers)" = 0
inc config device remove "$CT" web >/dev/null

# --- sandbox-ctl --incus ----------------------------------------------------------------------------
export XDG_CONFIG_HOME=$TMP/xdg
"$CTL" keygen --out "$XDG_CONFIG_HOME/sandbox-ctl/key" >/dev/null
# The host's key through the instance's configuration, as a controller gives it
# (image-build/README.md): read at start by sandbox-agent-incus-keys.service.
inc config set "$CT" user.sandbox-agent.authorized-keys "$(cat "$XDG_CONFIG_HOME/sandbox-ctl/key.pub")"
inc exec "$CT" -- systemctl start sandbox-agent-incus-keys.service >"$TMP/keys.out" 2>&1
check "the host key from user.sandbox-agent.authorized-keys reaches authorized_keys.d" \
	inc exec "$CT" -- grep -qF "$(cut -d' ' -f2 "$XDG_CONFIG_HOME/sandbox-ctl/key.pub")" \
	/etc/sandbox-agent/authorized_keys.d/incus-config.pub
# The packaged unit, now that the container is known to refuse AF_VSOCK: in a container it
# serves its unix socket alone, and every --incus command reaches it (not a daemon of its own).
inc exec "$CT" -- sh -c 'systemctl unmask sandbox-agent.service && systemctl daemon-reload &&
	timeout 15 systemctl start sandbox-agent.service' >"$TMP/unit.out" 2>&1
state=$(inc exec "$CT" -- systemctl is-active sandbox-agent.service)
check "(b) the packaged sandbox-agent.service is active in a container (got $state)" test "$state" = active
[ "$state" = active ] || inc exec "$CT" -- journalctl -u sandbox-agent.service --no-pager -n 4 -o cat |
	sed 's/^/    journal: /'
check "(b) it says it serves its unix socket alone" \
	inc exec "$CT" -- sh -c 'journalctl -u sandbox-agent.service --no-pager -o cat | grep -q "in a container: serving /run/sandbox-agent/agent.sock"'
check "(b) it listens on its unix socket and on no vsock" \
	inc exec "$CT" -- sh -c 'ss -xl | grep -q /run/sandbox-agent/agent.sock && ! grep -qs . /proc/net/vsock'
ctl() { "$CTL" --incus "$CT" -q "$@" 2>>"$TMP/ctl.err"; }
ctl --accept-new-guest-key hello >"$TMP/hello1.json"
check "sandbox-ctl --incus hello: the guest's key is pinned (added)" \
	test "$(json "$TMP/hello1.json" 'd["pin"] + " " + d["pinned_as"]')" = "added incus:$CT"
ctl hello >"$TMP/hello2.json"
check "a second hello matches the pin" test "$(json "$TMP/hello2.json" 'd["pin"]')" = match
check "it went through incus exec" grep -qF "incus exec $CT -- sandbox-agent serve --stdio" "$TMP/hello2.json"
check "(a) and reached the guest's running daemon" test "$(json "$TMP/hello2.json" 'd["daemon"]')" = running
cp -a "$ROOT/tests/data/pyapp" "$TMP/ctlapp"
cat >"$TMP/ctlapp/.activeagents/sandbox.yml" <<'EOF'
setup:
  - 'if [ -n "${PROBE_SECRET:-}" ]; then s=present; else s=absent; fi; echo "probe secret: $s"'
manifest: /usr/bin/python3 manifest.py
start: exec /usr/bin/python3 server.py
EOF
echo '{"PROBE_SECRET": "probe-value-5e2d"}' | ctl secrets put --scope boot PROBE_SECRET >"$TMP/put.json"
check "secrets put --scope boot" test "$(json "$TMP/put.json" 'd["put"][0]["name"]')" = PROBE_SECRET
# The workspace's parent made first: a push creates a missing one 0700 root, where the run user
# cannot reach its app.
inc exec "$CT" -- install -d -m 0755 /workspace/ctl
ctl push "$TMP/ctlapp" --app-dir /workspace/ctl/app >"$TMP/push.json"
check "push: swapped into /workspace/ctl/app" test "$(json "$TMP/push.json" 'd["swapped"]')" = True
t=$(date +%s.%N)
ctl boot --app-dir /workspace/ctl/app --wait --deadline 120 >"$TMP/boot.json"
rc=$?
check "boot --wait: ready in $(elapsed "$t") s (exit $rc)" \
	test "$rc $(json "$TMP/boot.json" 'd["status"]')" = "0 ready"
check "its runtime names /mcp" test "$(json "$TMP/boot.json" 'd["runtime"]["mcp_path"]')" = /mcp
ctl status --app-dir /workspace/ctl/app >"$TMP/status.json"
check "status: ready" test "$(json "$TMP/status.json" 'd["status"]')" = ready
ctl logs --log setup --app-dir /workspace/ctl/app >"$TMP/logs.json"
check "logs --log setup: the step's output" grep -q 'probe secret: \(present\|absent\)' "$TMP/logs.json"
ctl logs --log server --app-dir /workspace/ctl/app >"$TMP/slogs.json"
check "logs --log server: the server listened" grep -qF 'listening on 127.0.0.1' "$TMP/slogs.json"
ctl runtime --app-dir /workspace/ctl/app >"$TMP/rt.json"
check "runtime: the token" test "$(json "$TMP/rt.json" 'd["runtime"]["mcp_token"][:3]')" = aa_
ctl stop --app-dir /workspace/ctl/app >"$TMP/stop.json"
check "stop: stopped" test "$(json "$TMP/stop.json" 'd["stopped"]')" = True
check "no app server is left" test "$(servers)" = 0
check "the secret's value is in no log of the agent" \
	inc exec "$CT" -- sh -c '! grep -rqF probe-value-5e2d /workspace/ctl/.sandbox /var/lib/sandbox-agent 2>/dev/null'

# checkout and publish: the git server on the machine's loopback, a token required. The host
# fetches and hands the guest a pack; publish commits in the guest and pushes from the host.
GS=$ROOT/tests/git-server
GTOKEN="ghs_incus$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$TMP/gitsrv"
gurl=$("$GS/start.sh" "$TMP/gitsrv" x-access-token <<<"$GTOKEN")
check "the git test server started" test -n "$gurl"
on_exit "'$GS/stop.sh' '$TMP/gitsrv'"
cp -a "$ROOT/tests/data/pyapp" "$TMP/gsrc"
(cd "$TMP/gsrc" && git init -q -b main && git add -A &&
	git -c user.name=t -c user.email=t@example.com commit -qm app) >/dev/null 2>&1
git clone -q --bare "$TMP/gsrc" "$TMP/gitsrv/repos/app.git"
printf '{"repository": "t/app", "ref": "main", "clone_url": "%s/app.git", "username": "x-access-token", "token": "%s"}' \
	"${gurl%/}" "$GTOKEN" >"$TMP/gspec.json"
chmod 0600 "$TMP/gspec.json"
inc exec "$CT" -- mkdir -p -m 0755 /workspace/git
ctl checkout --spec "$TMP/gspec.json" --app-dir /workspace/git/app >"$TMP/co.json"
rc=$?
check "checkout from the git server into the container (exit $rc)" test $rc -eq 0
check "the guest's tree is the commit" \
	test "$(json "$TMP/co.json" 'd["commit"]')" = "$(git -C "$TMP/gsrc" rev-parse HEAD)"
check "its files are in place" inc exec "$CT" -- test -f /workspace/git/app/server.py
# A second app in this guest: it shares the run user with the first, which the caller accepts.
ctl boot --app-dir /workspace/git/app --shared-user --wait --deadline 120 >"$TMP/gboot.json"
check "the checked-out app boots (--wait; a second app: --shared-user)" \
	test "$(json "$TMP/gboot.json" 'd["status"]')" = ready
[ "$(json "$TMP/gboot.json" 'd["status"]')" = ready ] || log "    $(cat "$TMP/gboot.json")"
timeout 5 "$CTL" --incus "$CT" -q logs --log server --follow --app-dir /workspace/git/app >"$TMP/follow.out" 2>/dev/null
check "logs --follow streams the server's log (until stopped)" grep -qF 'listening on 127.0.0.1' "$TMP/follow.out"
inc exec "$CT" -- runuser -u sandbox -- sh -c 'echo "# changed in the sandbox" >>/workspace/git/app/server.py'
ctl publish --spec "$TMP/gspec.json" --branch agent/work --app-dir /workspace/git/app \
	--author "Agent <agent@example.com>" --message "the agent's work" >"$TMP/pub.json"
rc=$?
check "publish the guest's work to a new branch (exit $rc)" test $rc -eq 0
check "the branch holds the change" \
	sh -c "git -C '$TMP/gitsrv/repos/app.git' show agent/work:server.py | grep -qF 'changed in the sandbox'"
check "the token is in no file of the container's workspace" \
	inc exec "$CT" -- sh -c "! grep -rqF '$GTOKEN' /workspace /var/lib/sandbox-agent 2>/dev/null"
ctl stop --discard --app-dir /workspace/git/app >/dev/null

# The daemon's socket through a unix proxy device, as a controller on the same host reaches it.
inc config device add "$CT" agent proxy listen="unix:$TMP/agent-proxy.sock" \
	connect=unix:/run/sandbox-agent/agent.sock bind=host >/dev/null 2>&1
"$CTL" --connect "unix:$TMP/agent-proxy.sock" --instance "incus:$CT" -q hello >"$TMP/proxy-hello.json" 2>>"$TMP/ctl.err"
check "hello through a unix proxy device to the daemon's socket (the same pinned key)" \
	test "$(json "$TMP/proxy-hello.json" 'd["pin"] + " " + d["daemon"]')" = "match running"
inc config device remove "$CT" agent >/dev/null 2>&1

# --- the faults a real Incus found, each fixed (tests/incus/README.md) ---------------------------
# (a) a secret put by one `--incus` command reaches the boot started by the next one.
check "(a) a boot secret put by an earlier --incus command reaches the boot" \
	grep -qF 'probe secret: present' "$TMP/logs.json"
grep -qF 'probe secret: present' "$TMP/logs.json" ||
	log "    setup.log: $(json "$TMP/logs.json" 'd["data"]' | grep -x 'probe secret: .*')"
echo '{"PROBE_SECRET": "probe-value-5e2d"}' | ctl secrets put --scope boot PROBE_SECRET >/dev/null
ctl boot --app-dir /workspace/ctl/app --pass-env PROBE_SECRET --wait --deadline 120 >"$TMP/boot_a.json"
rc=$?
check "(a) boot --pass-env of a secret put just before: ready (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || log "    $(cat "$TMP/boot_a.json")"
ctl stop --app-dir /workspace/ctl/app >/dev/null

# (f) a second app under one workspace is refused; the first keeps its state and logs.
inc exec "$CT" -- sh -c 'mkdir -p -m 0755 /workspace/two &&
	cp -a /workspace/app /workspace/two/a && cp -a /workspace/app /workspace/two/b &&
	rm -rf /workspace/two/a/data /workspace/two/b/data &&
	sed -i "s/echo setting up/echo setting up A/" /workspace/two/a/.activeagents/sandbox.yml &&
	sed -i "s/echo setting up/echo setting up B/" /workspace/two/b/.activeagents/sandbox.yml'
pexec sandbox-app-boot /workspace/two/a >/dev/null 2>&1
pexec sandbox-app-boot --listen 0.0.0.0:8081 /workspace/two/b >/dev/null 2>"$TMP/two_b.err"
rc=$?
check "(f) app B beside app A in one workspace is refused (exit $rc)" test $rc -eq 2
check "(f) and told to take a workspace of its own" grep -qF -- "--workspace DIR" "$TMP/two_b.err"
inc exec "$CT" -- sandbox-app-boot --status /workspace/two/a >"$TMP/two_a.json"
check "(f) app A's status still names A and ready after app B was refused" \
	test "$(json "$TMP/two_a.json" 'd["app_dir"] + " " + d["status"]')" = "/workspace/two/a ready"
mixed=$(inc exec "$CT" -- sh -c 'grep -rlF "setting up A" /workspace/two/.sandbox 2>/dev/null |
	xargs -r grep -lF "setting up B"')
check "(f) no log holds both apps' setup output" test -z "$mixed"
[ -z "$mixed" ] || log "    shared: $mixed"
pexec sandbox-app-boot --stop --grace 2000 /workspace/two/b >/dev/null 2>&1
rc=$?
check "(f) --stop of app B is refused (exit $rc)" test $rc -eq 2
inc exec "$CT" -- sandbox-app-boot --status /workspace/two/a >"$TMP/two_a2.json"
check "(f) and A still runs" test "$(json "$TMP/two_a2.json" 'd["status"]')" = ready
inc exec "$CT" -- mkdir -p -m 0755 /workspace/two-b
pexec sandbox-app-boot --listen 0.0.0.0:8081 --workspace /workspace/two-b /workspace/two/b >/dev/null 2>"$TMP/two_b2.err"
rc=$?
[ $rc -eq 0 ] || log "    $(tail -n 1 "$TMP/two_b2.err")"
check "(f) with --workspace of its own app B boots beside A (exit $rc)" test $rc -eq 0
pexec sandbox-app-boot --discard --grace 2000 --workspace /workspace/two-b /workspace/two/b >/dev/null 2>&1
pexec sandbox-app-boot --stop --grace 2000 /workspace/two/a >/dev/null 2>&1
# shellcheck disable=SC2016 # expanded in the container
inc exec "$CT" -- sh -c 'for p in $(pgrep -f "^/usr/bin/python3 server.py"); do kill $p; done'

# (e) --stop and --discard leave no empty per-boot cgroup behind.
pexec sandbox-app-boot /workspace/app >/dev/null 2>&1
pexec sandbox-app-boot --discard --grace 2000 /workspace/fail/app >/dev/null 2>&1
pexec sandbox-app-boot --stop --grace 2000 /workspace/app >/dev/null 2>&1
# shellcheck disable=SC2016 # expanded in the container
stale=$(inc exec "$CT" -- sh -c 'find /sys/fs/cgroup -type d -name "boot-*" -path "*sandbox-app-runtime*" |
	while read -r d; do [ -n "$(cat "$d/cgroup.procs")" ] || echo "$d"; done')
check "(e) no empty per-boot cgroup is left after --stop/--discard" test -z "$stale"
[ -z "$stale" ] || log "    left: $(echo "$stale" | paste -sd' ')"

# (c) the first boot after an instance restart.
pexec sandbox-app-boot /workspace/app >/dev/null 2>&1
inc restart "$CT" >/dev/null 2>&1
inc exec "$CT" -- timeout 60 systemctl is-system-running --wait >/dev/null 2>&1
pexec sandbox-app-boot /workspace/app >"$TMP/after.out" 2>"$TMP/after.err"
rc=$?
check "(c) the first boot after incus restart is ready (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || log "    stderr: $(tail -n 1 "$TMP/after.err")"
# shellcheck disable=SC2016 # expanded in the container
state=$(inc exec "$CT" -- sh -c 'for i in $(seq 60); do systemctl is-active -q sandbox-agent.service && break
	sleep 0.5; done; systemctl is-active sandbox-agent.service')
check "(b) after the restart the unit is active again (got $state)" test "$state" = active
[ "$state" = active ] || inc exec "$CT" -- journalctl -b -u sandbox-agent.service --no-pager -n 6 -o cat |
	sed 's/^/    journal: /'
pexec sandbox-app-boot --stop --grace 2000 /workspace/app >/dev/null 2>&1

# (d) `--incus` on a missing instance keeps Incus's own message, at the end of the error.
"$CTL" --incus "sar-missing-$$" -q hello >"$TMP/missing.json" 2>"$TMP/missing.err"
rc=$?
check "(d) --incus on a missing instance: exit 3, the error ends with Incus's 'Instance not found'" \
	test "$rc $(json "$TMP/missing.json" 'd["error"]["msg"].endswith("Instance not found")')" = "3 True"
[ $rc -eq 3 ] || log "    stdout: $(cat "$TMP/missing.json")"

# (6) Ctrl-C at a terminal reaches sandbox-ctl's whole process group: `logs --follow` over
# `incus exec` ends cleanly (0), never as a session the agent cut (3). Four tries (2 of 4
# failed before).
pexec sandbox-app-boot /workspace/app >/dev/null 2>&1
bad=0
for i in 1 2 3 4; do
	setsid "$CTL" --incus "$CT" -q logs --log server --follow --app-dir /workspace/app \
		>"$TMP/f$i.out" 2>"$TMP/f$i.err" </dev/null &
	fpid=$!
	for _ in $(seq 100); do [ -s "$TMP/f$i.out" ] && break; sleep 0.05; done
	kill -INT -- "-$fpid" 2>/dev/null
	wait "$fpid"
	rc=$?
	[ $rc -eq 0 ] || { bad=$((bad + 1)); log "    try $i: exit $rc: $(tail -n 1 "$TMP/f$i.err")"; }
done
check "(6) Ctrl-C on --incus logs --follow ends cleanly, 4 of 4 (exit 0)" test $bad -eq 0
pexec sandbox-app-boot --stop --grace 2000 /workspace/app >/dev/null 2>&1

# --- the full image: PostgreSQL under systemd, the database servers, corepack ------------------------
# Where the full image is cached (a first build takes about 6 minutes: INCUS_FULL=1 makes it),
# keyed by image-build/ and its package layer, not by our package: this run's guest package is
# installed into the container over the image's. Before the fix the build masked
# postgresql@15-main, and a boot of an app on PostgreSQL failed with "cannot start PostgreSQL
# 15/main".
fkey=$({
	cat "$ROOT"/image-build/build.sh "$ROOT"/image-build/templates/* "$ROOT"/image-build/files/* | sha256sum
	stat -c '%n %s %Y' "${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}"/image/bookworm-full-*.tar.zst 2>/dev/null
} | sha256sum | cut -c1-16)
FULL=$IMG_CACHE/sandbox-app-runtime-full-$VERSION-$fkey.tar.gz
if [ ! -s "$FULL" ] && [ "${INCUS_FULL:-0}" = 1 ]; then
	t=$(date +%s.%N)
	if make -C "$ROOT" -s image IMAGE_PROFILE=full IMAGE_OUT="$TMP/full" IMAGE_ARGS=--no-rootfs-dir \
		>"$TMP/full.log" 2>&1; then
		find "$IMG_CACHE" -name 'sandbox-app-runtime-full-*.tar.gz' -delete
		mv "$TMP/full/sandbox-app-runtime-full-$VERSION-amd64.tar.gz" "$FULL.tmp.$$" && mv "$FULL.tmp.$$" "$FULL"
		log "full image built in $(elapsed "$t") s"
	else
		tail -30 "$TMP/full.log"
		fail "make image IMAGE_PROFILE=full"
	fi
fi
if [ -s "$FULL" ]; then
	inc image import "$FULL" --alias sandbox-app-runtime-full-test >/dev/null 2>&1
	FCT=sar-full-$$
	INCUS_INSTANCES="$INCUS_INSTANCES $FCT"
	t=$(date +%s.%N)
	inc init -q sandbox-app-runtime-full-test "$FCT" --profile default --profile sandbox-app \
		--profile sandbox-app-test >/dev/null 2>&1
	ln -s /dev/null "$INCUS_DIR/storage-pools/default/containers/$FCT/rootfs/etc/systemd/system/sandbox-agent.service"
	inc start "$FCT" >/dev/null 2>&1
	check "full image: the container starts (init and start in $(elapsed "$t") s)" test $? -eq 0
	inc exec "$FCT" -- timeout 120 systemctl is-system-running --wait >/dev/null 2>&1
	inc file push -q "$ROOT/build/deb/sandbox-agent_${VERSION}_$(dpkg --print-architecture).deb" "$FCT/root/agent.deb"
	check "full image: this run's guest package installs over the image's" \
		inc exec "$FCT" -- sh -c 'dpkg -i /root/agent.deb >/dev/null 2>&1 && systemctl mask sandbox-agent.service >/dev/null 2>&1; rm -f /root/agent.deb'
	check "full image: postgresql@15-main is not masked" \
		test "$(inc exec "$FCT" -- systemctl is-enabled postgresql@15-main.service 2>&1)" != masked
	check "full image: its cluster starts by hand only (start.conf: manual)" \
		test "$(inc exec "$FCT" -- sh -c "grep -v '^#' /etc/postgresql/15/main/start.conf | tr -d '[:space:]'")" = manual
	check "full image: redis-server and MariaDB installed, neither running" \
		inc exec "$FCT" -- sh -c 'command -v redis-server >/dev/null && command -v mariadbd >/dev/null && ! pgrep -x redis-server && ! pgrep -x mariadbd'
	check "full image: corepack runs" inc exec "$FCT" -- sh -c 'corepack --version >/dev/null'
	check "full image: the claude user (home 0700, in the sandbox group) and sandbox-claude" \
		inc exec "$FCT" -- sh -c 'test "$(stat -c %a /home/claude)" = 700 && id -nG claude | grep -qw sandbox && test -x /usr/local/bin/sandbox-claude'
	check "full image: the Claude Code CLI where sandbox-claude looks for it" \
		inc exec "$FCT" -- sh -c 'runuser -u claude -- /home/claude/.local/bin/claude --version >/dev/null 2>&1' 
	inc exec "$FCT" -- mkdir -p -m 0755 /workspace/pg
	cp -a "$ROOT/tests/data/pyapp" "$TMP/pgapp"
	mkdir -p "$TMP/pgapp/config"
	printf 'development:\n  adapter: postgresql\n  database: pgapp\n' >"$TMP/pgapp/config/database.yml"
	{
		echo 'setup:'
		echo "  - createdb \"\${DATABASE_URL##*/}\" && psql \"\$DATABASE_URL\" -Atc 'select 40 + 2'"
		echo 'manifest: /usr/bin/python3 manifest.py'
		echo 'start: exec /usr/bin/python3 server.py'
	} >"$TMP/pgapp/.activeagents/sandbox.yml"
	rm -rf "$TMP/push" && mkdir -p "$TMP/push" && cp -a "$TMP/pgapp" "$TMP/push/app" &&
		inc file push -q -r "$TMP/push/app" "$FCT/workspace/pg/"
	t=$(date +%s.%N)
	inc exec "$FCT" --cwd /root "${PENV[@]}" -- sandbox-app-boot /workspace/pg/app >"$TMP/pg.out" 2>"$TMP/pg.err"
	rc=$?
	check "(2) full image: an app on PostgreSQL boots under systemd (exit $rc, $(elapsed "$t") s)" test $rc -eq 0
	[ $rc -eq 0 ] || log "    $(tail -n 1 "$TMP/pg.err")"
	check "(2) its setup reached its throwaway database" \
		inc exec "$FCT" -- grep -qx 42 /workspace/pg/.sandbox/logs/setup.log
	inc exec "$FCT" --cwd /root "${PENV[@]}" -- sandbox-app-boot --discard --grace 2000 /workspace/pg/app >/dev/null 2>&1
	check "(2) --discard dropped the database" \
		inc exec "$FCT" -- sh -c 'cd / && ! runuser -u postgres -- psql -Atc "select datname from pg_database" | grep -q sandbox'
	inc delete --force "$FCT" >/dev/null 2>&1
	inc image delete sandbox-app-runtime-full-test >/dev/null 2>&1
else
	log "the full image is not cached: its checks (fault 2) skipped; INCUS_FULL=1 builds it (about 5 min)"
fi

# --- nothing left behind ---------------------------------------------------------------------------
t=$(date +%s.%N)
inc delete --force "$CT" >/dev/null 2>&1
check "incus delete --force in $(elapsed "$t") s: no instance left" test -z "$(inc list --format csv)"
inc image delete sandbox-app-runtime-test >/dev/null 2>&1
check "no image left" test -z "$(inc image list --format csv)"
inc profile delete sandbox-app-test >/dev/null 2>&1
inc profile delete sandbox-app >/dev/null 2>&1
inc profile device remove default root >/dev/null 2>&1
inc storage delete default >/dev/null 2>&1
check "no profile but the default one, no storage pool left" \
	test "$(inc profile list --format csv --columns n)/$(inc storage list --format csv)" = "default/"
pid=$INCUS_PID
t=$(date +%s.%N)
timeout 90 incus admin shutdown >/dev/null 2>&1
for ((i = 0; i < 300; i++)); do
	alive "$pid" || break
	sleep 0.1
done
check "incus admin shutdown: the daemon exited in $(elapsed "$t") s" ! alive "$pid"
left=$(incus_leftovers)
check "no process in its namespaces, no mount below its directory, no cgroup of $CT" test -z "$left"
[ -z "$left" ] || while IFS= read -r l; do log "  $l"; done <<<"$left"
incus_daemon_stop
check "no lxc.pivot cgroup this daemon made is left" \
	test -z "$(for p in $INCUS_PIVOTS; do [ -d "$p" ] && echo "$p"; done)"
log "test_incus.sh took $(elapsed "$T0") s"
finish
