#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The boot contract's happy path and its failure cases, on the smallest real app
# (tests/data/pyapp: python3's http.server). Each case asserts what a user sees: the exit code,
# the last line of stderr, runtime.json, and that no process is left behind.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"

LISTEN_PORT=$(free_port)

last_line() { tail -n 1 "$ERR"; }
no_procs_in() { [ -z "$(procs_in "$1")" ]; }

echo "--- happy path"
app=$(pyapp_make ok)
pyapp_boot "$app"
check "exit 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
rt=$TMP/ok/runtime.json
check "runtime.json is root-owned 0600" [ "$(stat -c '%U %a' "$rt" 2>/dev/null)" = "root 600" ]
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$rt" 2>/dev/null)
path=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_path"])' "$rt" 2>/dev/null)
check "runtime.json has mcp_path /mcp" [ "$path" = /mcp ]
check "token looks minted" [ "${token#aa_}" != "$token" ]
check "/up answers 200 through the forwarder" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
check "MCP without the token: 401" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/mcp")" = 401 ]
check "MCP GET with the token: 405" \
	[ "$(http_status "http://127.0.0.1:$LISTEN_PORT/mcp" -H "Authorization: Bearer $token")" = 405 ]
srv=$(procs_in "$app" | head -1)
check "the server runs as the sandbox user" all_of [ -n "$srv" ] -- [ "$(stat -c %U "/proc/$srv")" = sandbox ]
check "the model credential is in no process of the app" [ -z "$(procs_holding sk-ant-test-0123456789abcdef)" ]
check "the model credential is in no log" ! grep -rqF sk-ant-test-0123456789abcdef "$TMP/ok"
check "the server's log has the request lines" grep -q 'request: "GET /up' "$TMP/ok/.sandbox/logs/server.log"
"$BOOT" --status "$app" >"$TMP/status.json"
check "--status says ready" grep -q '"status":"ready"' "$TMP/status.json"
# The second boot stops the first one's server, then gives the checkout to the run user.
touch "$app/added-by-root"
pyapp_boot "$app"
check "a second boot of a running app succeeds" [ "$RC" -eq 0 ]
check "the first boot's server is gone" [ ! -e "/proc/$srv" ]
srv2=$(procs_in "$app" | head -1)
check "a new server runs as the sandbox user" all_of [ -n "$srv2" ] -- [ "$srv2" != "$srv" ] -- \
	[ "$(stat -c %U "/proc/$srv2")" = sandbox ]
check "a file root added since the first boot is given to the run user" \
	[ "$(stat -c %U "$app/added-by-root")" = sandbox ]
token2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$rt" 2>/dev/null)
check "the app reused its key on the second boot" [ "$token" = "$token2" ]
pyapp_boot "$app" --restart
check "--restart succeeds" [ "$RC" -eq 0 ]
"$BOOT" --stop --grace 1000 "$app"
check "--stop exits 0" [ $? -eq 0 ]
check "--stop leaves no process" no_procs_in "$app"
check "--stop frees the port" port_is_free "$LISTEN_PORT"
check "--stop keeps the checkout and logs" all_of [ -f "$app/server.py" ] -- [ -f "$TMP/ok/.sandbox/logs/setup.log" ]

echo "--- a setup step fails"
app=$(pyapp_make setupfail 'setup=["echo about to fail", "echo failing now; exit 3"]')
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: the failing command and its status" \
	[ "$(last_line)" = 'Sandbox setup failed: `echo failing now; exit 3` exited with status 3' ]
check "the log tail is shown" grep -qx 'failing now' "$ERR"
check "the tail names the log" grep -q -- '--- last lines of logs/setup.log ---' "$ERR"
check "no process left" no_procs_in "$app"
cg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("cgroup") or "")' "$TMP/setupfail/.sandbox/state.json")
check "the failed boot's cgroup is gone (it had one: $cg)" \
	bash -c '[ -n "$1" ] && ! find /sys/fs/cgroup -maxdepth 3 -type d -path "*$1" 2>/dev/null | grep -q .' _ "${cg#/sys/fs/cgroup/*/}"
"$BOOT" --status "$app" >"$TMP/status.json"
check "--status says failed at setup" grep -q '"status":"failed"' "$TMP/status.json"

supervisors() { pgrep -fc '^sandbox-agent supervise' || true; }

echo "--- the manifest writes nothing"
app=$(pyapp_make nomanifest 'manifest="echo not writing it"')
sup_before=$(supervisors)
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "cause last" bash -c "tail -1 '$ERR' | grep -q '^Sandbox manifest failed: .*wrote no manifest'"
# The supervisor is forked while the manifest runs; a failed manifest dismisses it.
check "the supervisor prepared beside the manifest is gone" [ "$(supervisors)" = "$sup_before" ]
cg=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("cgroup") or "")' "$TMP/nomanifest/.sandbox/state.json")
check "the failed boot's cgroups are gone, its limits' too (it had one: $cg)" \
	bash -c '[ -n "$1" ] && ! find /sys/fs/cgroup -maxdepth 3 -type d -path "*$1" 2>/dev/null | grep -q .' _ "${cg#/sys/fs/cgroup/*/}"

echo "--- the manifest and the server print the MCP token"
# The token is known once the manifest ran, after the supervisor was forked: it is sent to it.
app=$(pyapp_make printtoken 'manifest="/usr/bin/python3 manifest.py && cat data/key.json"' \
	'start="cat data/key.json; echo; exec /usr/bin/python3 server.py"')
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$TMP/printtoken/runtime.json" 2>/dev/null)
for log in manifest server; do
	check "the $log's log masks the token it printed" bash -c \
		'[ -n "$1" ] && grep -qF "\"token\": \"[REDACTED]\"" "$2" && ! grep -qF "$1" "$2"' \
		_ "$token" "$TMP/printtoken/.sandbox/logs/$log.log"
done
stop_boot "$app"

echo "--- the forwarder's port is taken"
app=$(pyapp_make fwdtaken)
python3 -m http.server --bind 127.0.0.1 "$LISTEN_PORT" >/dev/null 2>&1 &
fpid=$!
on_exit "kill $fpid"
for _ in $(seq 50); do port_is_free "$LISTEN_PORT" || break; sleep 0.1; done
sup_before=$(supervisors)
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: the port is in use" \
	bash -c "tail -1 '$ERR' | grep -q '^Sandbox start failed: cannot start the server: .*in use'"
check "no supervisor is left" [ "$(supervisors)" = "$sup_before" ]
check "no process of the app is left" no_procs_in "$app"
check "the other process was not touched" kill -0 "$fpid"
kill "$fpid"
wait "$fpid" 2>/dev/null
for _ in $(seq 50); do port_is_free "$LISTEN_PORT" && break; sleep 0.1; done

echo "--- no cgroup can be made: the boot's processes are tracked by process group"
# A mount namespace of its own with an empty tmpfs over /sys/fs/cgroup: neither a cgroup2 nor a
# v1 set can be made. The supervisor is then a descendant of the engine, so it is forked after
# the manifest, not beside it (the stop of the manifest's leftovers would take it).
app=$(pyapp_make nocgroup)
# shellcheck disable=SC2046
unshare -m --propagation private sh -c 'mount -t tmpfs none /sys/fs/cgroup && exec "$@"' _ \
	$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 \
	--cache-root "$TMP/cache" "$app" >"$TMP/nocgroup/out" 2>"$TMP/nocgroup/err"
check "boots without a cgroup" [ $? -eq 0 ]
check "the state names no cgroup" python3 -c 'import json,sys; sys.exit(bool(json.load(open(sys.argv[1])).get("cgroup")))' "$TMP/nocgroup/.sandbox/state.json"
check "/up answers through the forwarder" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
"$BOOT" --stop --grace 1000 "$app"
check "--stop exits 0" [ $? -eq 0 ]
check "--stop leaves no process" no_procs_in "$app"
check "--stop frees the port" port_is_free "$LISTEN_PORT"

echo "--- the manifest is invalid"
app=$(pyapp_make badmanifest 'manifest="echo [1] > $ACTION_AGENT_SANDBOX_MANIFEST"')
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "cause last" bash -c "tail -1 '$ERR' | grep -q '^Sandbox manifest failed: the manifest is invalid'"

echo "--- the server exits early"
app=$(pyapp_make crash 'start="echo crashing; exit 4"')
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: how it exited" \
	bash -c "tail -1 '$ERR' | grep -q '^Sandbox start failed: the server exited with status 4 before it was ready'"
check "the server's output is in the tail" grep -qx 'crashing' "$ERR"
check "neither runtime.json nor its copy written while the server started is left" \
	bash -c "! ls -a '$(dirname "$app")' | grep -q '^runtime.json'"

echo "--- the server never listens (deadline)"
app=$(pyapp_make nolisten 'start="exec sleep 7777"')
pyapp_boot "$app" --timeout 4
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: it did not listen" bash -c "tail -1 '$ERR' | grep -q 'did not listen on 127.0.0.1'"
check "the server was stopped" [ -z "$(pgrep -f 'sleep 7777')" ]

echo "--- the server listens only on ::1"
app=$(pyapp_make v6only 'start="BIND=::1 exec /usr/bin/python3 server.py"')
pyapp_boot "$app" --timeout 20
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: only on [::1]" bash -c "tail -1 '$ERR' | grep -q 'listens only on \[::1\]'"
check "no process left" no_procs_in "$app"

echo "--- a foreign process holds the app's port"
app=$(pyapp_make foreign)
fport=$(free_port)
python3 -m http.server --bind 127.0.0.1 "$fport" >/dev/null 2>&1 &
fpid=$!
on_exit "kill $fpid"
for _ in $(seq 50); do port_is_free "$fport" || break; sleep 0.1; done
mkdir -p "$TMP/foreign/boot"
cat >"$TMP/foreign/boot/spec.json" <<EOF
{"version": 1, "app_dir": "$app", "manifest_path": "$TMP/foreign/run/runtime.json",
 "port": $fport, "timeout": 20, "user": "sandbox",
 "manifest": {"command": "/usr/bin/python3 manifest.py"},
 "start": {"command": "exec /usr/bin/python3 server.py"}}
EOF
chmod 600 "$TMP/foreign/boot/spec.json"
mkdir -p "$TMP/foreign/run"
$(platform_env) "$BOOT" --spec "$TMP/foreign/boot/spec.json" --no-forward --grace 1000 \
	--cache-root "$TMP/cache" >"$TMP/out" 2>"$TMP/err"
RC=$? ERR=$TMP/err
check "exit 1" [ "$RC" -eq 1 ]
check "cause last: the port is held by another process" \
	bash -c "tail -1 '$ERR' | grep -q 'held by a process that is not part of this boot'"
check "the foreign process was not touched" kill -0 "$fpid"
kill "$fpid"

echo "--- the server ignores SIGTERM"
app=$(pyapp_make noterm 'start="trap \"\" TERM; exec /usr/bin/python3 server.py"')
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
"$BOOT" --stop --grace 500 "$app"
check "--stop succeeds" [ $? -eq 0 ]
check "--stop killed it after the grace" no_procs_in "$app"

echo "--- a setup step leaves a daemon that double-forks and calls setsid"
app=$(pyapp_make daemon 'setup=["(setsid sh -c \"exec sleep 6661\" &) ; echo daemon started"]')
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
check "the setup daemon was stopped" [ -z "$(pgrep -f 'sleep 6661')" ]
stop_boot "$app"

echo "--- a hostile sandbox.yml"
app=$(pyapp_make bomb 'raw=a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: [*b,*b,*b,*b,*b,*b,*b,*b,*b]')
pyapp_boot "$app"
check "exit 2" [ "$RC" -eq 2 ]
check "cause last: malformed" bash -c "tail -1 '$ERR' | grep -q '^Sandbox configuration failed: .activeagents/sandbox.yml is malformed'"
app=$(pyapp_make symlink)
ln -sf /etc/shadow "$app/.activeagents/sandbox.yml"
pyapp_boot "$app"
check "a symlinked sandbox.yml: exit 2" [ "$RC" -eq 2 ]
check "nothing of the link's target is shown" ! grep -q 'root:' "$ERR"
app=$(pyapp_make notmap 'raw=- just a list')
pyapp_boot "$app"
check "a list: the upstream text" bash -c "tail -1 '$ERR' | grep -q 'it must be a mapping of settings'"

echo "--- a step prints secrets"
app=$(pyapp_make leak 'setup=["echo key=$MY_API_KEY", "echo gh=ghp_abcdefghijklmnopqrstuvwxyz0123456789"]')
EXTRA_ENV="MY_API_KEY=passed-secret-value-42" pyapp_boot "$app" --pass-env MY_API_KEY
check "boots" [ "$RC" -eq 0 ]
log=$TMP/leak/.sandbox/logs/setup.log
check "the opted-in secret is masked in the log" grep -qx 'key=\[REDACTED\]' "$log"
check "a GitHub token shape is masked" grep -qx 'gh=\[REDACTED\]' "$log"
check "the secret is nowhere in the workspace" ! grep -rqF passed-secret-value-42 "$TMP/leak"
stop_boot "$app"

echo "--- a secret too long to mask"
app=$(pyapp_make longsecret)
long=$(head -c 70000 /dev/zero | tr '\0' k)
EXTRA_ENV="MY_API_KEY=$long" pyapp_boot "$app" --pass-env MY_API_KEY
check "refused: exit 2" [ "$RC" -eq 2 ]
check "the variable is named, the limit said" grep -q 'MY_API_KEY holds more than 64 KiB' "$ERR"
check "not reported as out of memory" ! grep -qi 'out of memory' "$ERR"
check "no server was started" ! [ -e "$TMP/longsecret/runtime.json" ]

echo "--- run under a pipe, as incus exec runs it"
app=$(pyapp_make piped)
start=$(date +%s%N)
timeout 60 bash -c "$(platform_env) '$BOOT' --listen 127.0.0.1:$LISTEN_PORT --grace 1000 --cache-root '$TMP/cache' '$app' 2>&1 | cat >/dev/null"
RC=$?
check "the pipe reached end-of-file when the boot exited (no timeout)" [ "$RC" -eq 0 ]
check "the app still runs after the pipe closed" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
stop_boot "$app"

echo "--- --stop while a boot is in progress"
app=$(pyapp_make interrupted 'setup=["exec sleep 8888"]')
$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" \
	"$app" >"$TMP/out.int" 2>"$TMP/err.int" &
bootpid=$!
for _ in $(seq 100); do pgrep -f 'sleep 8888' >/dev/null && break; sleep 0.1; done
"$BOOT" --stop --grace 1000 "$app"
check "--stop during a boot exits 0" [ $? -eq 0 ]
wait "$bootpid"
check "the boot exited 1" [ $? -eq 1 ]
check "its cause is the interruption" bash -c "tail -1 '$TMP/err.int' | grep -q 'interrupted by SIGTERM'"
check "the interrupted step is gone" [ -z "$(pgrep -f 'sleep 8888')" ]
"$BOOT" --status "$app" >"$TMP/status.json"
check "--status says failed, interrupted" grep -q '"reason":"the boot was interrupted by SIGTERM"' "$TMP/status.json"
check "... with the cause boot_failed (the boot said how it ended)" grep -q '"cause":"boot_failed"' "$TMP/status.json"

echo "--- a boot killed outright: --status derives boot_interrupted"
app=$(pyapp_make killed 'setup=["exec sleep 8889"]')
$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" \
	"$app" >/dev/null 2>&1 &
bootpid=$!
for _ in $(seq 100); do pgrep -f 'sleep 8889' >/dev/null && break; sleep 0.1; done
kill -KILL "$bootpid"
wait "$bootpid" 2>/dev/null
"$BOOT" --status "$app" >"$TMP/status.json"
check "--status: failed, cause boot_interrupted, its process is gone" python3 -c '
import json, sys
s = json.load(open(sys.argv[1]))
assert s["status"] == "failed" and s["cause"] == "boot_interrupted", s
assert s["reason"] == "the boot was interrupted: its process is gone", s' "$TMP/status.json"
"$BOOT" --stop --grace 1000 "$app" >/dev/null 2>&1
check "its step was stopped by --stop" [ -z "$(pgrep -f 'sleep 8889')" ]

echo "--- a boot killed while its server starts: the runtime.json it staged (the token) goes"
app=$(pyapp_make killedstart 'start="exec sleep 8890"')
staged=$(dirname "$app")/runtime.json.staged
$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" \
	"$app" >/dev/null 2>&1 &
bootpid=$!
for _ in $(seq 100); do [ -e "$staged" ] && pgrep -f 'sleep 8890' >/dev/null && break; sleep 0.1; done
check "while the server starts, runtime.json is staged, root's and 0600" \
	[ "$(stat -c '%U %a' "$staged" 2>/dev/null)" = "root 600" ]
kill -KILL "$bootpid"
wait "$bootpid" 2>/dev/null
check "the killed boot left it" [ -e "$staged" ]
"$BOOT" --stop --grace 1000 "$app" >/dev/null 2>&1
check "--stop removes it" [ ! -e "$staged" ]
check "and stops the server" [ -z "$(pgrep -f 'sleep 8890')" ]

echo "--- a boot killed before it recorded its supervisor: --stop finds it by supervisor.json"
app=$(pyapp_make unrecorded)
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
sd=$(dirname "$app")/.sandbox
sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["supervisor_pid"])' "$sd/supervisor.json")
check "its supervisor runs" all_of [ -n "$sup" ] -- [ -d "/proc/$sup" ]
# The state as a boot killed between the supervisor's start and the save that names it leaves it.
python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
d["supervisor_pid"] = d["supervisor_start"] = 0
json.dump(d, open(sys.argv[1], "w"))' "$sd/state.json"
"$BOOT" --stop --grace 1000 "$app" >/dev/null 2>&1
# gone, or a zombie its parent (PID 1 here) has yet to reap
gone() { [ ! -d "/proc/$1" ] || [ "$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null)" = Z ]; }
check "--stop stops the supervisor state.json does not name" gone "$sup"
check "and the forwarder's port is free" bash -c "! (exec 3<>/dev/tcp/127.0.0.1/$LISTEN_PORT) 2>/dev/null"
check "nothing of the app is left" no_procs_in "$app"

echo "--- two apps with the same session id"
app1=$(pyapp_make twin1)
app2=$(pyapp_make twin2)
P1=$(free_port)
$(platform_env) "$BOOT" --listen "127.0.0.1:$P1" --grace 1000 --cache-root "$TMP/cache" "$app1" 2>/dev/null
check "the first app boots" [ $? -eq 0 ]
pyapp_boot "$app2"
check "the second app boots" [ "$RC" -eq 0 ]
check "the first app still answers" [ "$(http_status "http://127.0.0.1:$P1/up")" = 200 ]
stop_boot "$app1"
stop_boot "$app2"

echo "--- --discard refuses a directory no boot has used"
mkdir -p "$TMP/home/projects/app" "$TMP/home/projects/other"
touch "$TMP/home/projects/other/notes"
"$BOOT" --discard "$TMP/home/projects/app" 2>"$TMP/err"
check "exit 2" [ $? -eq 2 ]
check "nothing was removed" [ -f "$TMP/home/projects/other/notes" ]

echo "--- a second boot that cannot give the checkout to the run user still stops the first"
app=$(pyapp_make nochown)
pyapp_boot "$app"
check "the first boot succeeds" [ "$RC" -eq 0 ]
srv=$(procs_in "$app" | head -1)
touch "$app/immutable"
if chattr +i "$app/immutable" 2>/dev/null; then
	pyapp_boot "$app"
	chattr -i "$app/immutable"
	check "exit 1" [ "$RC" -eq 1 ]
	check "cause last: the checkout could not be given to the run user" \
		grep -q 'cannot give the checkout to sandbox' "$ERR"
	check "the first boot's server was stopped" all_of [ -n "$srv" ] -- [ ! -e "/proc/$srv" ]
	check "no process left" no_procs_in "$app"
	check "the state says failed, for this app, at preflight" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["status"] == "failed" and d["app_dir"] == sys.argv[2] and d["boot_id"]
              and d["failed_step"] == "preflight"))' "$TMP/nochown/.sandbox/state.json" "$app"
else
	echo "  (not checked: chattr +i is refused on this filesystem)"
fi
stop_boot "$app"

echo "--- a symlink in the checkout never leads a root chown elsewhere"
mkdir -p "$TMP/victim"
touch "$TMP/victim/file"
app=$(pyapp_make chown)
ln -s "$TMP/victim" "$app/tmp-link"
mkdir -p "$app/sub"
ln -s "$TMP/victim/file" "$app/sub/file-link"
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
check "the link's target stays root's" [ "$(stat -c %U "$TMP/victim" "$TMP/victim/file" | sort -u)" = root ]
stop_boot "$app"

echo "--- an app without /up"
app=$(pyapp_make upmissing start='UP_STATUS=404 exec /usr/bin/python3 server.py')
pyapp_boot "$app"
check "no /up route: exit 1" [ "$RC" -eq 1 ]
check "cause last: no /up, and the route to add" bash -c "tail -1 '$ERR' | grep -q '^Sandbox start failed: the app has no /up route (GET /up answered 404);.*add a route that answers 200'"
check "the port is free again" port_is_free "$LISTEN_PORT"
check "no process left" no_procs_in "$app"

finish
