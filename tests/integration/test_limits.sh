#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A boot's limits with real processes (docs/design.md, "Limits"): a setup step that allocates
# past limits.memory is killed and reported as out of memory; a fork bomb under limits.pids is
# contained, stopped and reported, nothing of it left running; a step that writes past
# limits.disk is stopped with a clear error; a server killed for memory after it was ready is
# reported by --status as out of memory. The daemon's --limit-* options are checked for their
# refusals. Every boot runs under the cgroup the engine makes (v2, or v1 beside it).
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"
grep -qw memory /proc/self/cgroup /sys/fs/cgroup/cgroup.controllers 2>/dev/null ||
	skip "no memory cgroup controller on this machine"

LISTEN_PORT=$(free_port)
MARK=limits-$$-$RANDOM

reap_marked() {
	local p
	for p in $(procs_holding "$MARK"); do kill -9 "$p" 2>/dev/null; done
}
on_exit reap_marked

state_field() { # state_field APP KEY: a top-level string of state.json
	python3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2]); print(v if v is not None else "")' \
		"${1%/app}/.sandbox/state.json" "$2"
}

yml() { # yml LIMITS SETUP [START]: a whole sandbox.yml
	printf 'limits: %s\nsetup: %s\nmanifest: /usr/bin/python3 manifest.py\nstart: %s\n' \
		"$1" "$2" "${3:-exec /usr/bin/python3 server.py}"
}

echo "--- a setup step that allocates past limits.memory"
app=$(pyapp_make oom raw="$(yml '{memory: 64MiB}' \
	"[\"python3 -c 'b = bytearray(256 << 20); print(len(b))'\"]")")
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 120
check "the boot fails" [ "$RC" -eq 1 ]
check "the failure says out of memory and the limit" \
	grep -q 'out of memory (limit 64 MiB, limits.memory)' "$ERR"
check "state.json's reason says out of memory" \
	grep -q 'out of memory (limit 64 MiB' <<<"$(state_field "$app" reason)"
check "state.json's limit_hit is memory" [ "$(state_field "$app" limit_hit)" = memory ]
log "$(grep -m1 'Sandbox setup failed' "$ERR")"
c=$(state_field "$app" cgroup)
check "the failed boot removed its limits' cgroups (no memory cgroup of it is left)" \
	[ -z "$(find /sys/fs/cgroup/memory -maxdepth 8 -type d -name "${c##*/}" 2>/dev/null)" ]
stop_boot "$app"

echo "--- a step that survives the kill of a process of its own goes on"
app=$(pyapp_make oomok raw="$(yml '{memory: 64MiB}' \
	"[\"python3 -c 'b = bytearray(256 << 20)' || echo the allocation was killed\"]")")
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 120
check "the boot is ready" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the step saw its child killed" grep -q 'the allocation was killed' "${app%/app}/.sandbox/logs/setup.log"
stop_boot "$app"

echo "--- a fork bomb in a setup step, under limits.pids 32"
# Bounded: at most 500 sleeps of 60 s each, and the boot's own deadline of 60 s. The marker in
# their environment lets the test find every one of them.
app=$(pyapp_make bomb raw="$(yml '{pids: 32}' '["sh bomb.sh"]')")
cat >"$app/bomb.sh" <<SH
#!/bin/sh
export BOMB_MARK=$MARK-bomb
i=0
while [ \$i -lt 500 ]; do
	sleep 60 &
	i=\$((i+1))
done
wait
SH
chmod 755 "$app/bomb.sh"
app_bomb=$app
chown -R sandbox: "$app"
t0=$(date +%s%N)
pyapp_boot "$app" --timeout 60
t1=$(date +%s%N)
check "the boot fails" [ "$RC" -eq 1 ]
check "the failure names the process limit" grep -q 'ran into the process limit (32 processes, limits.pids)' "$ERR"
check "state.json's limit_hit is pids" [ "$(state_field "$app" limit_hit)" = pids ]
check "it was stopped well before the boot's deadline" [ $(((t1 - t0) / 1000000)) -lt 30000 ]
log "stopped after $(((t1 - t0) / 1000000)) ms: $(grep -m1 'Sandbox setup failed' "$ERR" | cut -c1-160)"
check "nothing of the fork bomb is left running" [ -z "$(procs_holding "$MARK-bomb")" ]
stop_boot "$app"
reap_marked

echo "--- a step that writes past limits.disk"
app=$(pyapp_make disk raw="$(yml '{disk: 40MiB}' \
	'["head -c 100000000 /dev/zero >big.bin; sleep 30"]')")
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 90
check "the boot fails" [ "$RC" -eq 1 ]
check "the failure names the disk budget" grep -q 'over its disk budget of 40 MiB (limits.disk)' "$ERR"
check "state.json's limit_hit is disk" [ "$(state_field "$app" limit_hit)" = disk ]
log "$(grep -m1 'Sandbox setup failed' "$ERR" | cut -c1-200)"
stop_boot "$app"

echo "--- a quick writer is caught when its step ends"
app=$(pyapp_make disk2 raw="$(yml '{disk: 40MiB}' '["head -c 100000000 /dev/zero >big.bin"]')")
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 90
check "the boot fails on the budget" grep -q 'over its disk budget' "$ERR"
stop_boot "$app"

echo "--- an old tree on its way out beside the app is not the app's use of limits.disk"
# A discard's box (root's, 0700, locked while a thread removes it: guest/stage/dir_discard.h)
# of the test's making, 60 MB: the boot waits for it before its first step, then counts.
box_app() { # box_app NAME HEX: an app under a 40 MiB budget and a 60 MB box beside it ($BOX)
	app=$(pyapp_make "$1" raw="$(yml '{disk: 40MiB}' '["echo setting up"]')")
	chown -R sandbox: "$app"
	BOX="$(dirname "$app")/.app.checkout-trash.$2"
	mkdir -m 0700 "$BOX" "$BOX/tree"
	head -c 60000000 /dev/zero >"$BOX/tree/big.bin"
}
box_app diskbox 0123456789abcdef
# shellcheck disable=SC2016 # expanded by that shell, not this one
flock -x "$BOX" sh -c 'touch "$1.locked"; sleep 2; rm -rf "$1/tree"; rmdir "$1"' sh "$BOX" &
holder=$!
for _ in $(seq 100); do [ -e "$BOX.locked" ] && break; sleep 0.05; done
pyapp_boot "$app" --timeout 90
check "the boot is ready: the box's 60 MB were not counted" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the box was gone before the boot ended" [ ! -e "$BOX" ]
wait "$holder"
rm -f "$BOX.locked"
stop_boot "$app"
echo "--- the same box left over (nobody removes it) is counted"
box_app diskbox2 fedcba9876543210
pyapp_boot "$app" --timeout 90
check "the boot fails on the budget" grep -q 'over its disk budget' "$ERR"
rm -rf "$BOX"
stop_boot "$app"

echo "--- a server killed for memory after it was ready"
app=$(pyapp_make grow raw="$(yml '{memory: 96MiB}' '["echo setting up"]' \
	'exec /usr/bin/python3 grow_server.py')")
cp "$ROOT/tests/data/limits/grow_server.py" "$app/"
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 120
check "the boot is ready" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "state.json has the limits" python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))["limits"]
sys.exit(0 if l["memory"] == 96 << 20 and l["pids"] == 4096 else 1)' "${app%/app}/.sandbox/state.json"
touch "$app/grow"
for _ in $(seq 1 100); do
	"$BOOT" --status "$app" >"$TMP/status.json" 2>/dev/null
	# Until the supervisor has recorded how the server ended (a moment after it is gone).
	grep -q '"server_exited"' "$TMP/status.json" && ! grep -q 'how is not recorded' "$TMP/status.json" &&
		break
	sleep 0.2
done
check "--status says failed, cause server_exited" grep -q '"cause":"server_exited"' "$TMP/status.json"
check "--status says the server was killed: out of memory (limit 96 MiB)" \
	grep -q 'the server was killed: out of memory (limit 96 MiB)' "$TMP/status.json"
check "--status names the limit it hit" grep -q '"limit_hit":"memory"\|"limit_hit": "memory"' "$TMP/status.json"
log "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["reason"][:160])' "$TMP/status.json" 2>/dev/null)"
stop_boot "$app"

echo "--- a step's processes sit in the cgroups that hold the limits"
app=$(pyapp_make joined raw="$(yml '{memory: 300MiB, pids: 200, cpu_weight: 50}' \
	'["cat /proc/self/cgroup >cgroup.out"]')")
chown -R sandbox: "$app"
pyapp_boot "$app" --timeout 60
check "the boot is ready" [ "$RC" -eq 0 ]
# For each limit: the file of the cgroup the step sat in (v2: one directory, else v1 ones).
limit_file() { # limit_file V1_CONTROLLER V1_FILE V2_FILE: the value the step's cgroup has
	local rel dir
	rel=$(awk -F: -v c="$1" '$2 ~ "(^|,)" c "(,|$)" {print $3}' "$app/cgroup.out")
	for dir in /sys/fs/cgroup/"$1" /sys/fs/cgroup/*,"$1" /sys/fs/cgroup/"$1",*; do
		[ -n "$rel" ] && [ -r "$dir$rel/$2" ] && { cat "$dir$rel/$2"; return; }
	done
	rel=$(awk -F: '$1 == "0" {print $3}' "$app/cgroup.out")
	for dir in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		[ -r "$dir$rel/$3" ] && { cat "$dir$rel/$3"; return; }
	done
}
check "its memory cgroup has 300 MiB" [ "$(limit_file memory memory.limit_in_bytes memory.max)" = $((300 << 20)) ]
check "its pids cgroup has 200" [ "$(limit_file pids pids.max pids.max)" = 200 ]
w=$(limit_file cpu cpu.shares cpu.weight)
check "its cpu cgroup has weight 50 (512 shares in v1)" [ "$w" = 512 -o "$w" = 50 ]
stop_boot "$app"

echo "--- limits from the environment the daemon gives its boots: the smallest wins"
app=$(pyapp_make envlim raw="$(yml '{memory: 1GiB, pids: 300}' '["echo setting up"]')")
chown -R sandbox: "$app"
EXTRA_ENV="SANDBOX_AGENT_LIMIT_MEMORY=512MiB SANDBOX_AGENT_LIMIT_PIDS=1000" \
	pyapp_boot "$app" --dry-run
check "the plan's memory is the daemon's 512 MiB" grep -q '"memory_text":"512 MiB"\|"memory_text": "512 MiB"' "$OUT"
check "the plan's pids is sandbox.yml's 300" grep -q '"pids":300\|"pids": 300' "$OUT"
EXTRA_ENV="SANDBOX_AGENT_LIMIT_MEMORY=lots" pyapp_boot "$app" --dry-run
check "a malformed daemon limit is refused" grep -q 'SANDBOX_AGENT_LIMIT_MEMORY' "$ERR"

echo "--- sandbox.yml's limits: strict values, warned unknown keys"
app=$(pyapp_make badlim raw="$(yml '{memory: 2GB!}' '["echo setting up"]')")
pyapp_boot "$app" --dry-run
check "a bad size is refused with exit 2" [ "$RC" -eq 2 ]
check "the refusal names limits.memory" grep -q '`memory` must be a size' "$ERR"
app=$(pyapp_make typo raw="$(yml '{memroy: 1GiB}' '["echo setting up"]')")
pyapp_boot "$app" --dry-run
check "a misspelt limit gets a did-you-mean" grep -q 'unknown limit `memroy` is ignored; did you mean `memory`?' "$ERR"

echo "--- the daemon's options"
"$AGENT" serve --limit-memory 2GB! --stdio </dev/null >/dev/null 2>"$TMP/serve.err"
check "serve --limit-memory refuses a bad size" grep -q -- '--limit-memory: `memory` must be a size' "$TMP/serve.err"
"$AGENT" serve --limit-pids 3 --stdio </dev/null >/dev/null 2>"$TMP/serve.err"
check "serve --limit-pids refuses a tiny count" grep -q -- '--limit-pids: `pids` must be' "$TMP/serve.err"

echo "--- the daemon's --limit-pids reaches the boots it runs"
CTL=$BUILD/sandbox-ctl
export HOME=$TMP/home
mkdir -p "$HOME"
"$CTL" keygen >/dev/null 2>&1 || die "sandbox-ctl keygen failed"
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
"$AGENT" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/agent.state" \
	--listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" \
	--limit-pids 32 --limit-memory 256MiB >"$TMP/agent.log" 2>&1 &
on_exit "kill $!"
wait_socket "$TMP/agent.sock" || :
A=unix:$TMP/agent.sock
SRC=$TMP/src
cp -a "$ROOT/tests/data/pyapp" "$SRC"
cp "$app_bomb/bomb.sh" "$SRC/"
yml '{}' '["sh bomb.sh"]' >"$SRC/.activeagents/sandbox.yml"
DAPP=$TMP/dws/app
mkdir -p "$TMP/dws"
on_exit "'$CTL' --connect '$A' stop --app-dir '$DAPP' --grace 1"
"$CTL" --timeout 30 --connect "$A" --accept-new-guest-key hello >/dev/null 2>&1
"$CTL" --timeout 30 --connect "$A" push "$SRC" --app-dir "$DAPP" >/dev/null 2>"$TMP/ctl.err" ||
	{ cat "$TMP/ctl.err"; die "push failed"; }
"$CTL" --timeout 60 --connect "$A" boot --app-dir "$DAPP" --wait --deadline 60 >"$TMP/ctl.out" 2>"$TMP/ctl.err"
RC=$?
check "the boot through the daemon fails" [ "$RC" -ne 0 ]
check "on the daemon's process limit" grep -q 'ran into the process limit (32 processes, limits.pids)' "$TMP/ctl.out" "$TMP/ctl.err"
check "with the daemon's memory limit recorded" [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["limits"]["memory_text"])' "${DAPP%/app}/.sandbox/state.json" 2>/dev/null)" = "256 MiB" ] ||
	ls -la "${DAPP%/app}" "$TMP/agent.state" 2>/dev/null | head
check "nothing of the fork bomb is left running" [ -z "$(procs_holding "$MARK-bomb")" ]
"$CTL" --timeout 30 --connect "$A" stop --app-dir "$DAPP" --grace 1 >/dev/null 2>&1
reap_marked

echo "--- nothing left behind"
# Every boot was stopped: its cgroup and the v1 cgroups of its limits (same name) are gone.
left=
for a in "$TMP"/*/app; do
	c=$(state_field "$a" cgroup 2>/dev/null)
	[ -n "$c" ] || continue
	left+=$(find /sys/fs/cgroup -maxdepth 8 -type d -name "${c##*/}" 2>/dev/null)
done
check "no cgroup of these boots is left, in any hierarchy" [ -z "$left" ]
[ -z "$left" ] || log "left: $left"
finish
