#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What a repository author reads (docs/messages.md), on the smallest real app (tests/data/pyapp):
# sandbox.yml warnings and syntax errors, the wrong port, exit 126/127, the run user's PATH, the
# failure tail of this boot only, a server that dies after ready, bad options, and the live
# progress line on a terminal.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"

LISTEN_PORT=$(free_port)
CAUSE_PREFIX='Sandbox configuration failed: .activeagents/sandbox.yml is malformed: it is not valid YAML ('
last_line() { tail -n 1 "$ERR"; }
has_line() { grep -qxF -- "$1" "$ERR"; }

echo "--- typos in sandbox.yml are warned about, with the key's line and a near miss"
app=$(pyapp_make typos 'raw=envs:
  A: 1
setup: ["echo setting up"]
setpu: ["echo never"]
manifest: /usr/bin/python3 manifest.py
start: exec /usr/bin/python3 server.py
strat: x
database: y')
pyapp_boot "$app"
check "the boot still succeeds (unknown keys are ignored)" [ "$RC" -eq 0 ]
check "envs: line 1, did you mean env" \
	has_line '.activeagents/sandbox.yml:1:1: warning: unknown setting `envs` is ignored; did you mean `env`?'
check "setpu: line 4, did you mean setup" \
	has_line '.activeagents/sandbox.yml:4:1: warning: unknown setting `setpu` is ignored; did you mean `setup`?'
check "strat: line 7, did you mean start" \
	has_line '.activeagents/sandbox.yml:7:1: warning: unknown setting `strat` is ignored; did you mean `start`?'
check "a far miss lists the settings" \
	has_line '.activeagents/sandbox.yml:8:1: warning: unknown setting `database` is ignored (the settings are env, setup, manifest, start, limits and egress)'
stop_boot "$app"
"$BOOT" --dry-run "$app" >"$TMP/plan.json" 2>"$TMP/plan.err"
check "--dry-run: the warnings on stderr" grep -q 'unknown setting `envs`' "$TMP/plan.err"
check "--dry-run: the warnings in the JSON" python3 -c '
import json, sys
w = json.load(open(sys.argv[1]))["warnings"]
assert len(w) == 4 and "did you mean `env`" in w[0], w' "$TMP/plan.json"

echo "--- a look-alike file when there is no sandbox.yml"
app=$(pyapp_make lookalike)
mv "$app/.activeagents/sandbox.yml" "$app/.activeagents/sandbox.yaml"
"$BOOT" --dry-run "$app" >/dev/null 2>"$TMP/err"
check "sandbox.yaml is named" grep -qF '.activeagents/sandbox.yml: warning: there is no such file, so the defaults (a Rails app) apply; .activeagents/sandbox.yaml was found: rename it to .activeagents/sandbox.yml' "$TMP/err"
mkdir -p "$app/sub"
mv "$app/.activeagents" "$app/sub/.activeagents"
mv "$app/sub/.activeagents/sandbox.yaml" "$app/sub/.activeagents/sandbox.yml"
"$BOOT" --dry-run "$app" >/dev/null 2>"$TMP/err"
check "a sandbox.yml one folder down is named" grep -qF 'sub/.activeagents/sandbox.yml was found: the file must be at the checkout' "$TMP/err"

echo "--- YAML syntax errors: LINE:COL, the line, a caret, a hint, the cause last"
app=$(pyapp_make tabs "raw=setup:
	- echo tabbed")
pyapp_boot "$app"
check "exit 2" [ "$RC" -eq 2 ]
check "starts with sandbox.yml:2:1:" bash -c "head -1 '$ERR' | grep -q '^.activeagents/sandbox.yml:2:1: error: '"
check "the line and a caret" bash -c "sed -n 2,3p '$ERR' | tr '\t' T | grep -qx '    2 | T- echo tabbed' && sed -n 3p '$ERR' | grep -qx '      | ^'"
check "the tab hint" has_line 'hint: tabs cannot indent YAML; indent with spaces'
check "cause last, the contract's text" bash -c "last_line() { tail -n 1 '$ERR'; }; last_line | grep -qF '$CAUSE_PREFIX'"
app=$(pyapp_make colon 'start=bin/server --bind: 0.0.0.0')
pyapp_boot "$app"
check "a colon in a command: exit 2" [ "$RC" -eq 2 ]
check "a colon in a command: at 3:25" bash -c "head -1 '$ERR' | grep -q '^.activeagents/sandbox.yml:3:25: error: mapping values are not allowed'"
check "a colon in a command: the caret under it" has_line '      |                         ^'
check "a colon in a command: quote it" bash -c "grep -q '^hint: quote a command that holds' '$ERR'"
app=$(pyapp_make quote 'setup=["echo unclosed]')
pyapp_boot "$app"
check "an unclosed quote: where it started" bash -c "head -1 '$ERR' | grep -q '^.activeagents/sandbox.yml:1:9: error: this quote is never closed'"
check "an unclosed quote: the hint names 1:9" bash -c "grep -q '^hint: an unclosed quote started at 1:9' '$ERR'"
check "an unclosed quote: cause last" bash -c "tail -1 '$ERR' | grep -qF '$CAUSE_PREFIX'"

echo "--- a server on the wrong port fails soon, not at the deadline"
other=$(free_port)
app=$(pyapp_make wrongport "start=PORT=$other exec /usr/bin/python3 server.py")
t0=$(date +%s%N)
pyapp_boot "$app" --timeout 60
elapsed_ms=$((($(date +%s%N) - t0) / 1000000))
check "exit 1" [ "$RC" -eq 1 ]
check "well before the 60 s deadline (${elapsed_ms} ms < 15000 ms)" [ "$elapsed_ms" -lt 15000 ]
check "cause last: the port it listens on instead" \
	bash -c "tail -1 '$ERR' | grep -q '^Sandbox start failed: the server did not listen on 127.0.0.1:[0-9]* (it listens on port $other instead; start must serve on \\\$PORT)$'"
check "no process left" [ -z "$(procs_in "$app")" ]

echo "--- another listener first while the app server still loads (a Procfile) is waited for"
app=$(pyapp_make procfile 'start=exec /bin/sh ./procfile.sh')
cat >"$app/procfile.sh" <<EOF
/usr/bin/python3 -m http.server --bind 127.0.0.1 $(free_port) >/dev/null 2>&1 &
/usr/bin/python3 -c 'import time
t = time.time() + 4
while time.time() < t: pass'
exec /usr/bin/python3 server.py
EOF
pyapp_boot "$app" --timeout 60
check "boots (exit 0)" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || tail -5 "$ERR"
stop_boot "$app"

echo "--- exit 127 and 126 are explained"
app=$(pyapp_make notfound 'setup=["no-such-tool-xyz --version"]')
pyapp_boot "$app"
check "exit 1" [ "$RC" -eq 1 ]
check "127: not found on PATH" bash -c "tail -1 '$ERR' | grep -q '^Sandbox setup failed: \`no-such-tool-xyz --version\` exited with status 127: a program it runs was not found on PATH (/'"
app=$(pyapp_make notexec 'setup=["touch tool.sh && ./tool.sh"]')
pyapp_boot "$app"
check "126: not executable" bash -c "tail -1 '$ERR' | grep -q 'exited with status 126: a program it runs is not executable'"
app=$(pyapp_make servernotfound 'start=exec no-such-server-xyz')
pyapp_boot "$app"
check "the server's 127 too" bash -c "tail -1 '$ERR' | grep -q '^Sandbox start failed: the server exited with status 127 before it was ready: a program it runs was not found on PATH'"

echo "--- the run user's PATH has none of root's folders"
app=$(pyapp_make path 'setup=["echo PATH=$PATH"]')
EXTRA_ENV="PATH=/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:." pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
check "PATH as the run user sees it" grep -qx 'PATH=/usr/local/bin:/usr/bin:/bin' "$TMP/path/.sandbox/logs/setup.log"
stop_boot "$app"

echo "--- the failure tail shows only this boot's lines, and where the whole log is"
app=$(pyapp_make tail 'setup=["echo marker-$(cat mark); exit 3"]')
echo firstboot >"$app/mark"
pyapp_boot "$app"
echo secondboot >"$app/mark"
pyapp_boot "$app"
check "the earlier boot's lines are still in the log" grep -q marker-firstboot "$TMP/tail/.sandbox/logs/setup.log"
check "the tail has this boot's line" grep -qx marker-secondboot "$ERR"
check "and not the earlier boot's" ! grep -q marker-firstboot "$ERR"
check "the log's absolute path" has_line "(the whole log: $TMP/tail/.sandbox/logs/setup.log)"
check "cause last" [ "$(last_line)" = 'Sandbox setup failed: `echo marker-$(cat mark); exit 3` exited with status 3' ]

echo "--- a server that dies after ready: --status says how and when"
app=$(pyapp_make dies)
pyapp_boot "$app"
check "boots" [ "$RC" -eq 0 ]
srv=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["server_pid"])' "$TMP/dies/.sandbox/state.json")
kill -KILL "$srv"
for _ in $(seq 50); do kill -0 "$srv" 2>/dev/null || break; sleep 0.1; done
sleep 0.3
"$BOOT" --status "$app" >"$TMP/status.json"
check "--status: failed, cause server_exited, killed by SIGKILL, when (ms), and the log's end" python3 -c '
import json, re, sys, time
s = json.load(open(sys.argv[1]))
assert s["status"] == "failed" and s["cause"] == "server_exited", s
assert re.fullmatch(r"[0-9a-f]{16}", s["boot_id"]), s
assert abs(s["updated_ms"] - time.time() * 1000) < 600000, s
assert "was killed by signal SIGKILL" in s["reason"] and "after it was ready" in s["reason"], s["reason"]
assert s["server_exit"] == "was killed by signal SIGKILL", s
assert isinstance(s["server_ended_ms"], int) and abs(s["server_ended_ms"] - time.time() * 1000) < 600000, s
assert "request" in (s["server_log_tail"] or "") or "$ " in (s["server_log_tail"] or ""), s' "$TMP/status.json"
stop_boot "$app"

echo "--- a bad option: one line, the cause, see --help"
"$BOOT" --dry-rn "$app" 2>"$TMP/err"
RC=$? ERR=$TMP/err
check "exit 2" [ "$RC" -eq 2 ]
check "one line" [ "$(wc -l <"$ERR")" -eq 1 ]
check "names it, suggests, points at --help" \
	[ "$(last_line)" = 'Sandbox boot refused: unknown option --dry-rn; did you mean --dry-run? (see sandbox-app-boot --help)' ]
"$BOOT" --timeout 2>"$TMP/err"
check "a missing value: one line" [ "$(cat "$ERR")" = 'Sandbox boot refused: --timeout needs a value (see sandbox-app-boot --help)' ]

echo "--- live progress on a terminal, plain lines elsewhere"
if command -v script >/dev/null; then
	app=$(pyapp_make live 'setup=["echo first-line; sleep 0.2; echo second-line"]')
	cmd="$(platform_env) '$BOOT' --listen 127.0.0.1:$LISTEN_PORT --grace 1000 --cache-root '$TMP/cache' '$app'"
	script -qec "$cmd" /dev/null >"$TMP/tty.out" 2>&1
	check "the terminal got a live line (\\r, clear to end of line)" grep -q $'\r.*\033\[K' "$TMP/tty.out"
	check "the step's output on the live line" grep -qa 'sandbox-app-boot: setup: second-line' "$TMP/tty.out"
	check "the step's line kept with its time" grep -qaE 'sandbox-app-boot: setup: done in [0-9.]+ s' "$TMP/tty.out"
	check "ready at the end" grep -qa 'sandbox-app-boot: ready in' "$TMP/tty.out"
	stop_boot "$app"
	pyapp_boot "$app"
	check "not a terminal: no control characters" ! grep -q $'\r\|\033' "$ERR"
	check "not a terminal: the plain lines" grep -q '^sandbox-app-boot: setup: \$ echo first-line' "$ERR"
	stop_boot "$app"
else
	log "no script(1): live line not checked"
fi

finish
