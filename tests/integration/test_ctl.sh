#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# sandbox-ctl against the real daemon: `sandbox-agent serve --unix` and `--stdio` (through the
# exec transport), a real boot of tests/data/pyapp pushed over the channel, and everything a
# controller reads: the JSON on stdout, the exit codes, the last line of stderr. Also: a
# secret put over the channel is found in no log, state file, process or the app's
# environment; a guest whose key changed is refused with exit 4; a host key the guest does not
# list is refused with exit 3.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
"$AGENT" serve --help 2>/dev/null | grep -q -- '--stdio' ||
	skip "sandbox-agent has no serve command yet (the daemon is not merged)"
ensure_sandbox_user || skip "cannot create the sandbox user"

LISTEN_PORT=$(free_port)
SECRET=sk-ant-ctl-test-$$-0123456789abcdef  # boot scope, passed to the app with --pass-env
FETCH_SECRET=ghp_ctltest$$abcdefghijklmnopqrstuvwxyz # fetch scope: reaches no boot process
export HOME=$TMP/home
mkdir -p "$HOME"

# json FILE EXPR: a value of the JSON document in FILE (python3 expression on `d`).
json() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }

# ctl ARGS...: runs sandbox-ctl; sets RC, OUT (stdout file), ERR (stderr file).
OUT=$TMP/ctl.out ERR=$TMP/ctl.err
ctl() {
	"$CTL" --timeout 30 "$@" >"$OUT" 2>"$ERR" </dev/null
	RC=$?
}
ctl_in() { # ctl_in STDIN ARGS...
	local input=$1
	shift
	printf '%s' "$input" | "$CTL" --timeout 30 "$@" >"$OUT" 2>"$ERR"
	RC=$?
}

# serve NAME KEY ARGS...: a daemon on $TMP/NAME.sock with its own state; prints nothing.
serve() {
	local name=$1 key=$2
	shift 2
	"$AGENT" serve --unix "$TMP/$name.sock" --authorized-keys "$TMP/authorized_keys" \
		--authorized-keys-dir '' --key "$key" --state-dir "$TMP/$name.state" \
		--listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" -v "$@" \
		>"$TMP/$name.log" 2>&1 &
	on_exit "kill $!"
	wait_socket "$TMP/$name.sock" && return 0
	echo "the daemon $name did not start:"
	cat "$TMP/$name.log"
	exit 1
}

echo "--- keys"
ctl keygen
check "keygen exits 0" [ "$RC" -eq 0 ]
check "the key is 0600" [ "$(stat -c %a "$HOME/.config/sandbox-ctl/key")" = 600 ]
HOST_FP=$(json "$OUT" 'd["fingerprint"]')
if command -v ssh-keygen >/dev/null; then
	check "ssh-keygen -lf shows the same fingerprint for the secret key" \
		[ "$(ssh-keygen -lf "$HOME/.config/sandbox-ctl/key" | cut -d' ' -f2)" = "$HOST_FP" ]
	check "and for the public key" \
		[ "$(ssh-keygen -lf "$HOME/.config/sandbox-ctl/key.pub" | cut -d' ' -f2)" = "$HOST_FP" ]
	check "ssh-keygen reads the secret key (-y gives the .pub line)" \
		[ "$(ssh-keygen -y -f "$HOME/.config/sandbox-ctl/key" | cut -d' ' -f1,2)" = "$(cut -d' ' -f1,2 "$HOME/.config/sandbox-ctl/key.pub")" ]
	ssh-keygen -q -t ed25519 -N '' -C from-ssh-keygen -f "$TMP/ssh_made_key"
	ctl --key "$TMP/ssh_made_key" --connect unix:/nonexistent.sock hello
	check "a key made by ssh-keygen loads (the connection, not the key, fails: exit 3)" [ "$RC" -eq 3 ]
else
	log "no ssh-keygen: the OpenSSH interoperation is checked by the unit tests only"
fi
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
chmod 644 "$TMP/authorized_keys"
serve agent "$TMP/guest_key"
A=unix:$TMP/agent.sock

echo "--- hello, trust on first use"
ctl hello --connect "$A"
check "an unknown guest is refused without --accept-new-guest-key: exit 3" [ "$RC" -eq 3 ]
check "it says how to accept it" grep -q -- '--accept-new-guest-key' "$ERR"
ctl hello --connect "$A" --accept-new-guest-key
check "hello exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the agent names itself" [ "$(json "$OUT" 'd["agent"]')" = sandbox-agent ]
check "the key was pinned" [ "$(json "$OUT" 'd["pin"]')" = added ]
GUEST_FP=$(json "$OUT" 'd["guest_key"]')
check "the guest's key has a fingerprint" [ "${GUEST_FP#SHA256:}" != "$GUEST_FP" ]
check "it serves boots" [ "$(json "$OUT" '"boot" in d["capabilities"]')" = True ]
check "the daemon logged our key" grep -qF "$HOST_FP" "$TMP/agent.log"
# Both ends run on this CPU with the system's libsodium (1.0.18 on Debian 12: AES-256-GCM where
# the CPU has AES-NI and PCLMULQDQ, else ChaCha20-Poly1305).
WANT_CIPHER=$(expected_cipher "$(system_libsodium)" "$(system_libsodium)")
check "the session's cipher is $WANT_CIPHER" [ "$(json "$OUT" 'd["cipher"]')" = "$WANT_CIPHER" ]
check "the daemon logged it with the session" grep -q "session [0-9a-f]* ($WANT_CIPHER)" "$TMP/agent.log"

echo "--- secrets, push, boot"
ctl_in "{\"ANTHROPIC_API_KEY\": \"$SECRET\"}" secrets put --scope boot ANTHROPIC_API_KEY --connect "$A"
check "secrets put exits 0" [ "$RC" -eq 0 ]
check "it reports the secret put" [ "$(json "$OUT" 'd["put"][0]["name"]')" = ANTHROPIC_API_KEY ]
ctl_in "{\"GITHUB_TOKEN\": \"$FETCH_SECRET\"}" secrets put --scope fetch GITHUB_TOKEN --connect "$A"
check "a fetch secret too" [ "$RC" -eq 0 ]
SRC=$TMP/src
cp -a "$ROOT/tests/data/pyapp" "$SRC"
# shellcheck disable=SC2016 # expanded by the app's shell, not this one
printf 'setup: ["echo setting up", "echo key=$ANTHROPIC_API_KEY gh=$GITHUB_TOKEN"]\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
	>"$SRC/.activeagents/sandbox.yml"
mkdir -p "$SRC/.git" && echo '[core]' >"$SRC/.git/config"
APP=$TMP/ws/app
mkdir -p "$TMP/ws"
on_exit "'$CTL' --connect '$A' stop --app-dir '$APP' --grace 1"
ctl push "$SRC" --app-dir "$APP" --connect "$A"
check "push exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the tree was swapped in" [ "$(json "$OUT" 'd["swapped"]')" = True ]
check "the files arrived" cmp -s "$SRC/server.py" "$APP/server.py"
check "modes arrived" [ "$(stat -c %a "$APP/manifest.py")" = 755 ]
check ".git was left out" [ ! -e "$APP/.git" ]
ctl boot --app-dir "$APP" --pass-env ANTHROPIC_API_KEY --wait --deadline 60 --connect "$A"
check "boot --wait exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR" "$TMP/agent.log"
check "status ready" [ "$(json "$OUT" 'd["status"]')" = ready ]
BOOT_ID=$(json "$OUT" 'd["boot_id"]')
check "the boot has an id of 16 hex digits" grep -qxE "[0-9a-f]{16}" <<<"$BOOT_ID"
check "the runtime has mcp_path" [ "$(json "$OUT" 'd["runtime"]["mcp_path"]')" = /mcp ]
check "no token unless asked" [ "$(json "$OUT" '"mcp_token" in d["runtime"]')" = False ]
check "the phases were shown" grep -q 'sandbox-ctl: setup' "$ERR"
check "/up answers through the forwarder" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]

echo "--- the Firecracker transport: CONNECT/OK in front of the same daemon"
/usr/bin/python3 "$ROOT/tests/data/fc_vsock_relay.py" "$TMP/fc.sock" "$TMP/agent.sock" &
on_exit "kill $!"
for _ in $(seq 50); do [ -S "$TMP/fc.sock" ] && break; sleep 0.1; done
ctl boot --app-dir "$APP" --restart --wait --deadline 60 --connect "fc:$TMP/fc.sock:7340" \
	--instance "$A"
check "boot --restart over fc: (after two silent closes) exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "ready over fc:" [ "$(json "$OUT" 'd["status"]')" = ready ]
check "/up after the boot over fc:" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]

echo "--- status, runtime, logs"
ctl status --app-dir "$APP" --connect "$A"
check "status says ready" [ "$(json "$OUT" 'd["status"]')" = ready ]
check "status names the boot by the id the boot gave (the fc: restart made a new one)" \
	[ "$(json "$OUT" 'len(d["boot_id"]) == 16 and d["boot_id"] != "'"$BOOT_ID"'"')" = True ]
check "since is Unix milliseconds" \
	[ "$(json "$OUT" 'abs(d["since"] - __import__("time").time() * 1000) < 600000')" = True ]
check "no cause or reason while ready" [ "$(json "$OUT" '"cause" in d or "reason" in d')" = False ]
ctl runtime --app-dir "$APP" --connect "$A"
check "runtime.json carries the token" [ "$(json "$OUT" 'd["runtime"]["mcp_token"][:3]')" = aa_ ]
ctl logs --log setup --app-dir "$APP" --connect "$A"
check "logs exits 0" [ "$RC" -eq 0 ]
check "the setup log has the step's output" [ "$(json "$OUT" '"setting up" in d["data"]')" = True ]
check "the secret is masked in the log the host reads" [ "$(json "$OUT" '"key=[REDACTED]" in d["data"]')" = True ]
NEXT=$(json "$OUT" 'd["next_offset"]')
ctl logs --log setup --app-dir "$APP" --offset "$NEXT" --connect "$A"
check "nothing after the last offset" [ "$(json "$OUT" 'd["data"]')" = "" ]
ctl logs --log setup --app-dir "$APP" --tail 1 --connect "$A"
check "logs --tail 1 exits 0" [ "$RC" -eq 0 ]
check "--tail 1 is the log's last line" \
	[ "$(json "$OUT" 'd["data"]')" = "$(tail -n 1 "$APP/../.sandbox/logs/setup.log")" ]
check "--tail 1 starts where that line starts" [ "$(json "$OUT" 'd["next_offset"] - d["offset"] == len(d["data"].encode())')" = True ]
ctl logs --log setup --app-dir "$APP" --timestamps --connect "$A"
check "logs --timestamps exits 0" [ "$RC" -eq 0 ]
check "the same bytes, and times: [offset, unix ms] in order, from offset 0, of this run" \
	[ "$(json "$OUT" 'd["data"] == open("'"$APP"'/../.sandbox/logs/setup.log").read() and len(d["times"]) >= 1 and d["times"][0][0] == 0 and [t[0] for t in d["times"]] == sorted(t[0] for t in d["times"]) and all(abs(t[1] - __import__("time").time() * 1000) < 600000 for t in d["times"])')" = True ]
"$CTL" --connect "$A" logs --log setup --app-dir "$APP" --raw --timestamps >"$OUT" 2>"$ERR"
check "--raw --timestamps: each line after its ISO time, the line itself unchanged" python3 -c '
import re, sys
lines = open(sys.argv[1]).read().splitlines()
log = open(sys.argv[2]).read().splitlines()
assert len(lines) == len(log) and lines, (lines, log)
for got, want in zip(lines, log):
    m = re.fullmatch(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z) (.*)", got)
    assert m and m.group(2) == want, (got, want)' "$OUT" "$APP/../.sandbox/logs/setup.log"
check "the log's own directory lists no index as a log" \
	[ "$("$CTL" --connect "$A" status --app-dir "$APP" | python3 -c 'import json,sys; print(sorted(json.load(sys.stdin)["logs"]))')" = "['manifest', 'server', 'setup']" ]
ctl logs --log setpu --app-dir "$APP" --connect "$A"
check "a log that does not exist: exit 2" [ "$RC" -eq 2 ]
check "its reason is not_found" [ "$(json "$OUT" 'd["error"]["reason"]')" = not_found ]
check "the last line names it and the logs there are" \
	grep -q "no log named 'setpu' for $APP: its logs are .*setup" <(tail -n 1 "$ERR")

echo "--- the secrets went nowhere else"
# only_app_procs PIDS...: every pid is a process of the app (its working directory is the app's)
# shellcheck disable=SC2317 # called through check
only_app_procs() {
	local p app_procs
	app_procs=" $(procs_in "$APP" | tr '\n' ' ') "
	for p in "$@"; do
		[[ "$app_procs" == *" $p "* ]] || return 1
	done
}
for s in "$SECRET" "$FETCH_SECRET"; do
	check "${s:0:10}...: in no file of the workspace, the daemon's state or its log" \
		! grep -rqF "$s" "$TMP/ws" "$TMP/agent.state" "$TMP/agent.log"
done
# shellcheck disable=SC2046
check "the passed secret is in the app's processes only" only_app_procs $(procs_holding "$SECRET")
check "the app has the passed secret (the caller opted in)" [ -n "$(procs_holding "$SECRET")" ]
check "the fetch secret is in no process's command line or environment" [ -z "$(procs_holding "$FETCH_SECRET")" ]
check "the setup step saw no fetch secret" grep -q 'gh=$' "$APP/../.sandbox/logs/setup.log"
check "neither is in what sandbox-ctl printed" ! grep -qF -e "$SECRET" -e "$FETCH_SECRET" "$OUT" "$ERR"

echo "--- the exec transport: sandbox-agent serve --stdio"
ctl status --app-dir "$APP" --instance agent-stdio --accept-new-guest-key --connect exec -- \
	"$AGENT" serve --stdio --authorized-keys "$TMP/authorized_keys" --authorized-keys-dir '' \
	--key "$TMP/guest_key" --state-dir "$TMP/agent.state"
check "status over exec exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "a second daemon finds the app from its state" [ "$(json "$OUT" 'd["status"]')" = ready ]
# shellcheck disable=SC2016 # the words are sh -c's positional parameters
ctl hello --instance agent-stdio --connect exec -- sh -c 'exec "$0" serve --stdio --authorized-keys "$1" --authorized-keys-dir "" --key "$2" --state-dir "$3"' \
	"$AGENT" "$TMP/authorized_keys" "$TMP/guest_key" "$TMP/agent.state"
check "through sh -c: the same guest key, pinned" all_of [ "$RC" -eq 0 ] -- [ "$(json "$OUT" 'd["pin"]')" = match ]
check "a daemon of its own says so in its hello" [ "$(json "$OUT" 'd["daemon"]')" = one-shot ]
check "and sandbox-ctl says what that means" grep -q "runs no sandbox-agent daemon" "$ERR"

echo "--- the exec transport reaches the running daemon"
RELAY=(--instance agent-stdio --connect exec -- "$AGENT" serve --stdio --daemon-socket "$TMP/agent.sock")
ctl hello "${RELAY[@]}"
check "hello over exec: the running daemon answers (same key, pinned)" \
	[ "$RC" -eq 0 ] && [ "$(json "$OUT" 'd["daemon"]')" = running ] && [ "$(json "$OUT" 'd["pin"]')" = match ]
ctl_in '{"RELAY_PROBE": "relay-probe-value-4711"}' secrets put --scope boot RELAY_PROBE "${RELAY[@]}"
check "secrets put over exec exits 0" [ "$RC" -eq 0 ]
ctl_in '{"RELAY_PROBE": "relay-probe-value-4712"}' secrets put --scope boot RELAY_PROBE "${RELAY[@]}"
check "a second exec command finds the secret the first one put (replaced)" \
	[ "$(json "$OUT" 'd["put"][0]["replaced"]')" = True ]
ctl secrets drop RELAY_PROBE "${RELAY[@]}"
check "a third one drops it" [ "$(json "$OUT" 'd["dropped"]')" = 1 ]
"$AGENT" serve --stdio --daemon-socket "$TMP/no-daemon.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/oneshot.state" -v \
	</dev/null >/dev/null 2>"$TMP/oneshot.err"
check "no daemon on the socket: a session of its own, said on stderr" grep -q "no daemon answers" "$TMP/oneshot.err"

echo "--- stop, and a failing boot"
ctl stop --app-dir "$APP" --grace 1 --connect "$A"
check "stop exits 0" [ "$RC" -eq 0 ]
check "it stopped" [ "$(json "$OUT" 'd["stopped"]')" = True ]
ctl runtime --app-dir "$APP" --connect "$A"
check "runtime after stop: exit 1" [ "$RC" -eq 1 ]
check "its reason is not_found" [ "$(json "$OUT" 'd["error"]["reason"]')" = not_found ]
check "the last line says the runtime is gone" [ "$(tail -n 1 "$ERR")" = \
	"sandbox-ctl: the app's runtime is gone: its server is not running (last boot: stopped)" ]
check "the port is free" port_is_free "$LISTEN_PORT"
printf 'setup: ["echo about to fail", "exit 3"]\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
	>"$SRC/.activeagents/sandbox.yml"
ctl push "$SRC" --app-dir "$APP" --connect "$A"
check "a second push exits 0" [ "$RC" -eq 0 ]
ctl boot --app-dir "$APP" --wait --deadline 60 --connect "$A"
check "a failing boot exits 1" [ "$RC" -eq 1 ]
# The push answers before the old tree goes: renamed aside at once, removed on a thread.
check "the name of the tree the second push replaced is free once the boot was answered" \
	[ ! -e "$(dirname "$APP")/.$(basename "$APP").checkout-old" ]
TRASH="$(dirname "$APP")/.$(basename "$APP").checkout-trash.*"
for _ in $(seq 200); do compgen -G "$TRASH" >/dev/null || break; sleep 0.1; done
check "the tree the second push replaced is removed" bash -c "! compgen -G '$TRASH' >/dev/null"
check "status failed" [ "$(json "$OUT" 'd["status"]')" = failed ]
check "the step is named" [ -n "$(json "$OUT" 'd["step"]')" ]
check "the cause is the last line" bash -c "tail -1 '$ERR' | grep -q '^sandbox-ctl: Sandbox .* failed: .*exit.* 3'"

echo "--- sandbox.yml's warnings reach the controller"
printf 'envs:\n  A: 1\nsetup: ["echo warned"]\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
	>"$SRC/.activeagents/sandbox.yml"
ctl push "$SRC" --app-dir "$APP" --connect "$A"
ctl boot --app-dir "$APP" --wait --deadline 60 --connect "$A"
check "a boot with a typo in sandbox.yml still boots" [ "$RC" -eq 0 ]
check "the warning is on stderr, with the line and a near miss" \
	grep -qF '.activeagents/sandbox.yml:1:1: warning: unknown setting `envs` is ignored; did you mean `env`?' "$ERR"
ctl stop --app-dir "$APP" --grace 1 --connect "$A"

echo "--- a refused boot: one prefix, the cause last"
printf -- '- not a mapping\n' >"$SRC/.activeagents/sandbox.yml"
ctl push "$SRC" --app-dir "$APP" --connect "$A"
ctl boot --app-dir "$APP" --wait --deadline 60 --connect "$A"
check "a refused boot exits 2" [ "$RC" -eq 2 ]
check "the refused shape: status refused, error.reason invalid" \
	[ "$(json "$OUT" 'd["status"] + " " + d["error"]["class"] + " " + d["error"]["reason"]')" = "refused refused invalid" ]
check "its reason has one prefix" [ "$(json "$OUT" 'd["reason"]')" = 'Sandbox configuration failed: .activeagents/sandbox.yml is malformed: it must be a mapping of settings (line 1, column 1)' ]
check "the cause is the last line" [ "$(tail -1 "$ERR")" = 'sandbox-ctl: Sandbox configuration failed: .activeagents/sandbox.yml is malformed: it must be a mapping of settings (line 1, column 1)' ]

echo "--- a boot without --wait goes on after sandbox-ctl has left"
# shellcheck disable=SC2016 # expanded by the app's shell, not this one
printf 'setup: ["echo again"]\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
	>"$SRC/.activeagents/sandbox.yml"
ctl push "$SRC" --app-dir "$APP" --connect "$A"
ctl boot --app-dir "$APP" --connect "$A"
check "boot without --wait exits 0" [ "$RC" -eq 0 ]
check "it reports the boot started" [ "$(json "$OUT" 'd["status"]')" = started ]
state=
for _ in $(seq 300); do
	ctl status --app-dir "$APP" --connect "$A"
	state=$(json "$OUT" 'd["status"]')
	[ "$state" = booting ] || break
	sleep 0.2
done
check "the boot reached ready without a connection" [ "$state" = ready ]
SIZE=$(json "$OUT" 'd["logs"]["setup"]')
"$CTL" --connect "$A" logs --log setup --app-dir "$APP" --follow >"$OUT" 2>"$ERR" </dev/null
check "following a finished log ends by itself" [ $? -eq 0 ]
check "one JSON document per line, up to the log's size" \
	[ "$(tail -1 "$OUT" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["next_offset"])')" = "$SIZE" ]
ctl stop --app-dir "$APP" --grace 1 --connect "$A"

echo "--- keys that do not match"
serve rebuilt "$TMP/other_key"
ctl hello --connect "unix:$TMP/rebuilt.sock" --instance "$A"
check "a changed guest key: exit 4" [ "$RC" -eq 4 ]
check "both fingerprints are named" grep -qF "$GUEST_FP" "$ERR"
ctl keygen --out "$TMP/stranger_key"
ctl hello --connect "$A" --key "$TMP/stranger_key"
check "a host key the guest does not list: exit 3" [ "$RC" -eq 3 ]
check "the guest refused it" grep -q 'refused the connection' "$ERR"

echo "--- a checkout spec that is JSON but not one object"
not_object='the checkout spec is not one JSON object'
refused_for() { [ "$RC" -eq 2 ] && grep -q "$1" "$ERR"; } # refused_for TEXT: exit 2, TEXT in stderr
for spec in '[]' '"https://github.com/o/r.git"' 'true' '{"clone_url": "https://h/r.git"} {}'; do
	for cmd in checkout publish; do
		args=(--spec - --app-dir "$APP" --connect "$A")
		[ "$cmd" = publish ] && args+=(--branch sandbox/x)
		ctl_in "$spec" "$cmd" "${args[@]}"
		check "$cmd --spec $spec: exit 2, the spec's shape is the cause" refused_for "$not_object"
	done
done
ctl_in '{"clone_url": ["x"]}' checkout --spec - --app-dir "$APP" --connect "$A"
check "a clone_url that is not a string: exit 2, no clone_url" \
	refused_for 'the checkout spec has no clone_url'
ctl_in '{"clone_url": "https://h/r.git", "ref": "a..b"}' checkout --spec - --app-dir "$APP" --connect "$A"
check "a bad ref: exit 2, named as the spec's" \
	refused_for "the checkout spec's ref: 'a..b' is not a valid ref name"

finish
