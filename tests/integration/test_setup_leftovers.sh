#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A setup step's leftover that moves itself into the engine's own process group (setpgid is
# allowed to any group of the same session) must not survive the step's cleanup, a failed
# boot or --stop, and must not turn off the cgroup's kill for the rest of the boot. The
# leftover is tests/data/hostile/join_engine_group.py, run as the app's user.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"

LISTEN_PORT=$(free_port)
MARK=leftover-$$-$RANDOM

mkapp() { # mkapp NAME SETUP: a pyapp workspace whose setup is SETUP; prints the app dir
	local app=$TMP/$1/app
	mkdir -p "$TMP/$1"
	cp -a "$ROOT/tests/data/pyapp" "$app"
	cp "$ROOT/tests/data/hostile/join_engine_group.py" "$app/"
	printf 'setup: %s\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
		"$2" >"$app/.activeagents/sandbox.yml"
	chown -R sandbox: "$app"
	on_exit "stop_boot $app"
	echo "$app"
}

boot() { # boot APP [args]: sets RC; stderr in $TMP/err
	$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 500 \
		--cache-root "$TMP/cache" "$@" >"$TMP/out" 2>"$TMP/err"
	RC=$?
}

# Kill whatever a failing run left behind, by pid, so the next case starts clean.
leftovers() { procs_holding "$MARK"; }
reap_leftovers() {
	local p
	for p in $(leftovers); do kill -9 "$p" 2>/dev/null; done
}
on_exit reap_leftovers

echo "--- a leftover in the engine's group, then the boot goes on"
app=$(mkapp ok "[\"python3 join_engine_group.py $MARK-a >setup-join.out 2>&1\", \"sleep 0.3\"]")
boot "$app"
check "the boot is ready" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$TMP/err"
log "the leftover said: $(cat "$app/setup-join.out" 2>/dev/null)"
check "no leftover survives the step's cleanup" [ -z "$(procs_holding "$MARK-a")" ]
stop_boot "$app"
reap_leftovers

echo "--- the same leftover, then a failing step"
app=$(mkapp failed "[\"python3 join_engine_group.py $MARK-b >setup-join.out 2>&1\", \"exit 3\"]")
boot "$app"
check "the boot fails" [ "$RC" -eq 1 ]
check "no leftover survives the failed boot" [ -z "$(procs_holding "$MARK-b")" ]
reap_leftovers

echo "--- the server's leftover in the supervisor's group, then --stop"
app=$(mkapp server '["echo setting up"]')
printf 'setup: ["echo setting up"]\nmanifest: /usr/bin/python3 manifest.py\nstart: python3 join_engine_group.py %s >server-join.out 2>&1; exec /usr/bin/python3 server.py\n' \
	"$MARK-c" >"$app/.activeagents/sandbox.yml"
boot "$app"
check "the boot is ready" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$TMP/err"
log "the leftover said: $(cat "$app/server-join.out" 2>/dev/null)"
check "the leftover runs while the app runs" [ -n "$(procs_holding "$MARK-c")" ]
"$BOOT" --stop --grace 500 "$app" >/dev/null 2>&1
check "no leftover survives --stop" [ -z "$(procs_holding "$MARK-c")" ]
reap_leftovers

finish
