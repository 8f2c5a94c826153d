#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# sandbox-claude (docs/sessions.md) as the platform drives it, with the real Claude Code CLI
# (tests/claude/install-cli.sh) against the stand-in model API (tests/claude/model_api.py),
# each case in a network namespace of its own (tests/claude/run-in-netns.sh):
# root writes request.json and prompt.txt into ROOT/sessions/<digits>, calls session-start,
# follows status.json while reading events.jsonl by byte ranges, then takes diff.patch and
# stderr.log.
#   a. a text session: states, events, the credential (raw, URL-encoded, base64) masked
#      although the model repeats it, file modes, the app user locked out
#   b. Write tool calls: diff.patch shows the new file, the request's exclude pathspec applies
#   c. a second session after a commit: its diff is still against the first session's commit
#   d. cancel while the model is slow: cancelled, exit 143, nothing left; no credential in any
#      argv nor in the supervisor's environment
#   e. timeout: timed_out, exit 143
#   f. an API 500 with CLAUDE_CODE_MAX_RETRIES=1: an error result, exit 1
#   g. a checkout whose config defines a filter driver: the fixed sentence instead of a diff
#   h. sandbox_login mode: no ANTHROPIC_* reaches the CLI ("Not logged in", no request made)
#   m. api_key mode with CLAUDE_CODE_OAUTH_TOKEN instead of ANTHROPIC_API_KEY
#   i. refusals of session-start, of sandbox_login mode and of session-cancel
#   k. the login verbs against a stand-in claude (tests/claude/stand-in-claude.sh)
#   l. the platform's sequence around an app booted from a spec, then --restart
#   j. the credential in no file under the workspace
# The test makes its own app and claude users (in the app user's group) and removes them.
source "$(dirname "$0")/lib.sh"

CL=$ROOT/tests/claude
HELPER=$BUILD/sandbox-claude
need_root
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
command -v runuser >/dev/null || skip "runuser (util-linux) is not installed"
[ -x "$HELPER" ] || skip "$HELPER is not built"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
T0=$(now_ms)
CLAUDE=$("$CL/install-cli.sh" 2>"$TMP/install.log") || {
	tail -5 "$TMP/install.log"
	skip "the Claude Code CLI could not be installed from the npm registry"
}
# The cached install lives under root's home, which other users cannot enter: each namespace
# bind-mounts its node_modules at $TMP/cli (the mount goes with the namespace).
CLI_SRC=$(cd "$(dirname "$CLAUDE")/.." && pwd)
CLI_BIN=$TMP/cli/$(cd "$CLI_SRC" && readlink -f .bin/claude | sed "s|^$CLI_SRC/||")
mkdir -p "$TMP/cli"
"$CL/run-in-netns.sh" true 2>"$TMP/netns.err" || skip "cannot make a network namespace: $(cat "$TMP/netns.err")"

APP_USER=sbxc-app-$$
CL_USER=sbxc-claude-$$
APP_USER=${APP_USER:0:31} CL_USER=${CL_USER:0:31}
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	"$APP_USER" || skip "cannot create a user"
on_exit "userdel $APP_USER; groupdel $APP_USER"
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	-G "$APP_USER" "$CL_USER" || skip "cannot create a user"
on_exit "userdel $CL_USER; groupdel $CL_USER"
on_exit "rm -rf /tmp/claude-$(id -u "$CL_USER")"

WS=$TMP/ws
CROOT=$WS/claude
APP=$WS/app
CHOME=$WS/claude-home
mkdir -p "$APP" "$CHOME" "$TMP/cases"
chown "$CL_USER:" "$CHOME"
chmod 700 "$CHOME"
as_app() { runuser -u "$APP_USER" -- "$@"; }
(cd "$APP" && git init -q -b main && echo "hello" >README &&
	git add README && git -c user.name=t -c user.email=t@e commit -qm init)
FIRST=$(git -C "$APP" rev-parse HEAD)
chown -R "$APP_USER:" "$APP"

KEY="sk-ant-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')+/Q="
KEY_URL=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$KEY")
KEY_B64=$(printf '%s' "$KEY" | base64 -w0)
# The platform's environment carries the credential; no argv of the test's own does (case.sh
# reads it from this file, outside the workspace).
printf '%s' "$KEY" >"$TMP/key"
chmod 600 "$TMP/key"
export SANDBOX_CLAUDE_ROOT=$CROOT SANDBOX_APP_DIR=$APP SANDBOX_CLAUDE_USER=$CL_USER \
	SANDBOX_APP_USER=$APP_USER SANDBOX_CLAUDE_HOME=$CHOME SANDBOX_CLAUDE_BIN=$CLI_BIN \
	SANDBOX_BOOT_SPEC=$TMP/no-spec.json SANDBOX_CONFINEMENT_RECORD=$TMP/confinement.json

# What runs inside each namespace: the platform's side of one case (case.sh FUNCTION ARGS).
cat >"$TMP/case.sh" <<'EOF'
set -u
KEY=$(cat "$TMP/key")
if [ -n "${USE_OAUTH:-}" ]; then
	export CLAUDE_CODE_OAUTH_TOKEN=$KEY
else
	export ANTHROPIC_API_KEY=$KEY
fi
mount --bind "$CLI_SRC" "$TMP/cli" || exit 125
ARGV='["claude","-p","--output-format","stream-json","--verbose","--permission-mode","acceptEdits","--no-session-persistence"]'
# request N EXTRA_JSON_MEMBERS PROMPT: the platform's two files
request() {
	local d=$SANDBOX_CLAUDE_ROOT/sessions/$1
	mkdir -p -m 700 "$d"
	printf '{"argv": %s, "mode": "api_key", "timeout": 60, "env": {"ANTHROPIC_BASE_URL": "%s", "CLAUDE_CODE_MAX_RETRIES": "1", "ACTION_AGENT_SANDBOX_SESSION_ID": "s1"}, "pathspecs": [], "max_diff_bytes": 1000000%s}\n' \
		"$ARGV" "$ANTHROPIC_BASE_URL" "$2" >"$d/request.json.in"
	python3 - "$d/request.json.in" "$d/request.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
# This machine is no confined sandbox, and sandbox-claude is told so.
r.setdefault("dangerously_no_sandbox", True)
json.dump(r, open(sys.argv[2], "w"))
PY
	rm -f "$d/request.json.in"
	printf '%s\n' "$3" >"$d/prompt.txt"
}
# start N: session-start, its answer and exit code and time in $CASE/start.*
start() {
	local t=$(date +%s%N)
	"$HELPER" session-start --dir "$SANDBOX_CLAUDE_ROOT/sessions/$1" >"$CASE/start.out" 2>"$CASE/start.err"
	echo $? >"$CASE/start.rc"
	echo $((($(date +%s%N) - t) / 1000000)) >"$CASE/start.ms"
}
# follow N: poll status.json until finished (60 s at most), reading events.jsonl by byte ranges
# into $CASE/events.copy and the states seen into $CASE/states
follow() {
	local d=$SANDBOX_CLAUDE_ROOT/sessions/$1 off=0 size s
	: >"$CASE/events.copy"
	for _ in $(seq 1 1200); do
		s=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["status"])' "$d/status.json" 2>/dev/null)
		echo "$s" >>"$CASE/states"
		size=$(stat -c %s "$d/events.jsonl" 2>/dev/null || echo 0)
		if [ "$size" -gt "$off" ]; then
			tail -c +$((off + 1)) "$d/events.jsonl" | head -c $((size - off)) >>"$CASE/events.copy"
			off=$size
		fi
		[ "$s" = finished ] && break
		sleep 0.05
	done
	size=$(stat -c %s "$d/events.jsonl" 2>/dev/null || echo 0)
	[ "$size" -gt "$off" ] && tail -c +$((off + 1)) "$d/events.jsonl" >>"$CASE/events.copy"
	pgrep -u "$SANDBOX_CLAUDE_USER" >"$CASE/left" || true
}
wait_post() { # the stand-in holds a POST
	for _ in $(seq 1 400); do
		grep -q '"POST"' "$CASE/requests.jsonl" 2>/dev/null && return 0
		sleep 0.025
	done
	return 1
}
simple() { request "$1" "${2:-}" "${3:-Say hello}" && start "$1" && follow "$1"; }
slow() { # slow N EXTRA: a session whose reply is held back; checks while it runs, then cancel
	request "$1" "${2:-}" "Say hello" && start "$1"
	wait_post || echo "no POST" >"$CASE/wait.err"
	local d=$SANDBOX_CLAUDE_ROOT/sessions/$1 pid sup p
	pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("pid", 0))' "$d/status.json")
	echo "$pid" >"$CASE/cli.pid"
	sup=$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)
	# argv of every process, the supervisor's environment: never the credential
	for p in /proc/[0-9]*; do
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -qF -- "$KEY" && echo "${p#/proc/}" >>"$CASE/argv.hits"
	done
	tr '\0' '\n' <"/proc/$sup/environ" | grep -F -- "$KEY" >>"$CASE/sup.env.hits"
	tr '\0' '\n' <"/proc/$pid/environ" | grep -c '^ANTHROPIC_API_KEY=' >"$CASE/cli.env.key"
	tr '\0' ' ' <"/proc/$sup/cmdline" >"$CASE/sup.cmdline"
	awk '/^VmRSS/ {print $2}' "/proc/$sup/status" >"$CASE/sup.rss"
	if [ "${3:-}" = cancel ]; then
		# A second session-start while this one runs.
		request $(($1 + 50)) "" "Say hello"
		"$HELPER" session-start --dir "$SANDBOX_CLAUDE_ROOT/sessions/$(($1 + 50))" >"$CASE/second.out" 2>/dev/null
		echo $? >"$CASE/second.rc"
		local t=$(date +%s%N)
		"$HELPER" session-cancel --dir "$d" >"$CASE/cancel.out"
		echo $? >"$CASE/cancel.rc"
		follow "$1"
		echo $((($(date +%s%N) - t) / 1000000)) >"$CASE/cancel.ms"
		"$HELPER" session-cancel --dir "$d" >"$CASE/cancel2.out"
	else
		follow "$1"
	fi
}
"$@"
EOF

# in_ns CASE SCRIPT_JSON FUNCTION ARGS...: one case in a fresh namespace with its own stand-in
in_ns() {
	local c=$TMP/cases/$1 script=$2
	shift 2
	mkdir -p "$c"
	printf '%s\n' "$script" >"$c/script.json"
	"$CL/run-in-netns.sh" env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 \
		HOME=/root TMP="$TMP" CLI_SRC="$CLI_SRC" USE_OAUTH="${USE_OAUTH:-}" \
		HELPER="$HELPER" CASE="$c" SANDBOX_CLAUDE_ROOT="$CROOT" SANDBOX_APP_DIR="${IN_APP-$APP}" \
		SANDBOX_CLAUDE_USER="$CL_USER" SANDBOX_APP_USER="${IN_APP_USER-$APP_USER}" \
		SANDBOX_CLAUDE_HOME="$CHOME" SANDBOX_CLAUDE_BIN="$CLI_BIN" \
		SANDBOX_BOOT_SPEC="${IN_SPEC-$TMP/no-spec.json}" \
		"$CL/with-model-api.sh" "$c/script.json" "$c/requests.jsonl" bash "$TMP/case.sh" "$@"
	check "$(basename "$c"): session-start exits 0" [ "$(cat "$c/start.rc" 2>/dev/null)" = 0 ] ||
		log "    session-start: exit $(cat "$c/start.rc" 2>/dev/null): $(cat "$c/start.out" "$c/start.err" 2>/dev/null)"
}

# py DESCRIPTION CASE N EXPRESSION: Python over E (events.jsonl of session N), S (its status),
# R (the stand-in's requests), C (events.copy), D (diff.patch)
py() {
	local what=$1 c=$TMP/cases/$2 d=$CROOT/sessions/$3 expr=$4
	check "$what" python3 - "$d" "$c" "$expr" "$KEY" "$KEY_URL" "$KEY_B64" <<'PY'
import json, os, sys
d, c, expr = sys.argv[1], sys.argv[2], sys.argv[3]
KEY, KEY_URL, KEY_B64 = sys.argv[4], sys.argv[5], sys.argv[6]
def rd(p, b=False):
    try:
        return open(p, "rb").read() if b else open(p).read()
    except FileNotFoundError:
        return b"" if b else ""
raw = rd(d + "/events.jsonl")
L = [l for l in raw.split("\n") if l]
E = [json.loads(l) for l in L]
S = json.loads(rd(d + "/status.json") or "{}")
R = [json.loads(l) for l in rd(c + "/requests.jsonl").split("\n") if l]
C = rd(c + "/events.copy")
D = rd(d + "/diff.patch")
def of(t, sub=None):
    return [e for e in E if e.get("type") == t and (sub is None or e.get("subtype") == sub)]
def mode(name):
    return oct(os.stat(d + "/" + name).st_mode & 0o777)
try:
    ok = eval(expr)
except Exception as ex:
    print("    (%s: %s)" % (type(ex).__name__, ex))
    ok = False
sys.exit(0 if ok else 1)
PY
}
answer() { tail -1 "$TMP/cases/$1/$2"; }

echo "--- a. a text session"
in_ns a "[{\"text\": \"Hello; key {{header:x-api-key}} url $KEY_URL b64 $KEY_B64.\"}]" simple 1
check "a: session-start answers {\"status\":\"started\"} and that the sandbox is unverified, exit 0" \
	[ "$(cat "$TMP/cases/a/start.rc"):$(answer a start.out)" = '0:{"status":"started","sandbox":"unverified (--dangerously-no-sandbox)"}' ]
check "a: its status.json says so too" \
	python3 -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1]))["dangerously_no_sandbox"] is True else 1)' "$CROOT/sessions/1/status.json"
log "a: session-start returned in $(cat "$TMP/cases/a/start.ms") ms"
check "a: ... at once (under 1 s)" [ "$(cat "$TMP/cases/a/start.ms")" -lt 1000 ]
check "a: status went starting/running -> finished" grep -qx finished "$TMP/cases/a/states"
py "a: finished, exit 0, not cancelled, not timed out, timestamps, the pid" a 1 \
	'S["status"] == "finished" and S["exit_status"] == 0 and S["cancelled"] is False and S["timed_out"] is False and S["started_at"].endswith("Z") and S["finished_at"] >= S["started_at"] and S["pid"] > 1'
py "a: events: JSON objects, system/init first, result last, a success" a 1 \
	'E[0]["type"] == "system" and E[0]["subtype"] == "init" and E[-1]["type"] == "result" and E[-1]["is_error"] is False'
py "a: the CLI ran in the checkout with the key from the helper's environment" a 1 \
	'E[0]["cwd"].endswith("/ws/app") and E[0]["apiKeySource"] == "ANTHROPIC_API_KEY" and E[0]["permissionMode"] == "acceptEdits"'
py "a: the credential, URL-encoded and base64, masked where the model repeats it" a 1 \
	'KEY not in raw and KEY_URL not in raw and KEY_B64 not in raw and "key [REDACTED] url [REDACTED] b64 [REDACTED]." in raw'
py "a: the byte-range reads add up to events.jsonl" a 1 'C == raw and len(raw) > 0'
py "a: events.jsonl and stderr.log 0600, prompt.txt gone, diff.patch empty" a 1 \
	'mode("events.jsonl") == "0o600" and mode("stderr.log") == "0o600" and not os.path.exists(d + "/prompt.txt") and D == ""'
py "a: the stand-in got the prompt and the key as x-api-key" a 1 \
	'[r for r in R if r["method"] == "POST"][0]["headers"]["x-api-key"] == KEY and "Say hello" in json.dumps(R[-1]["body"]["messages"])'
check "a: base_commit is the checkout's commit" [ "$(cat "$CROOT/base_commit" 2>/dev/null)" = "$FIRST" ]
check "a: ROOT and ROOT/sessions are root's, 0700" \
	[ "$(stat -c %U:%a "$CROOT" "$CROOT/sessions" | sort -u)" = "root:700" ]
check "a: the checkout is group-writable, directories setgid" \
	[ "$(stat -c %A "$APP" | cut -c5-7):$(stat -c %A "$APP/README" | cut -c5-6)" = "rws:rw" ]
check "a: nothing of the session is left running" [ ! -s "$TMP/cases/a/left" ]
mkdir -m 700 "$CROOT/sessions/99"
echo "secret prompt" >"$CROOT/sessions/99/prompt.txt"
check "a: the app user cannot read the claude home" ! as_app ls "$CHOME" 2>/dev/null
check "a: ... nor a session directory" ! as_app ls "$CROOT/sessions/1" 2>/dev/null
check "a: ... nor a prompt" ! as_app cat "$CROOT/sessions/99/prompt.txt" 2>/dev/null
check "a: ... nor the session root" ! as_app ls "$CROOT" 2>/dev/null

echo "--- b. Write tool calls, an exclude pathspec"
in_ns b "$(printf '[{"tool_use": [{"id": "toolu_b1", "name": "Write", "input": {"file_path": "%s", "content": "written by the model\\n"}}]}, {"tool_use": {"id": "toolu_b2", "name": "Write", "input": {"file_path": "%s", "content": "left out\\n"}}}, {"text": "Done."}]' "$APP/hello.txt" "$APP/skip/ignored.txt")" \
	simple 2 ', "pathspecs": [":(exclude)skip"]' "Write hello.txt"
py "b: finished, exit 0" b 2 'S["status"] == "finished" and S["exit_status"] == 0'
check "b: the file is in the checkout, the claude user's, group-writable" \
	[ "$(stat -c %U:%G:%A "$APP/hello.txt" 2>/dev/null)" = "$CL_USER:$APP_USER:-rw-rw-r--" ]
py "b: diff.patch shows the new (untracked) file" b 2 \
	'"diff --git a/hello.txt b/hello.txt\nnew file mode 100644\n" in D and "+written by the model\n" in D'
py "b: ... and not the excluded one" b 2 '"ignored.txt" not in D and "left out" not in D'
check "b: the app user can change the file the CLI made" as_app sh -c "echo more >>'$APP/hello.txt'"
as_app git -C "$APP" add hello.txt
as_app git -C "$APP" -c user.name=t -c user.email=t@e commit -qm "the first session's file"

echo "--- c. a second session, after a commit"
in_ns c "$(printf '[{"tool_use": {"id": "toolu_c1", "name": "Write", "input": {"file_path": "%s", "content": "second\\n"}}}, {"text": "Done."}]' "$APP/second.txt")" \
	simple 3 "" "Write second.txt"
py "c: finished, exit 0" c 3 'S["status"] == "finished" and S["exit_status"] == 0'
py "c: the diff is against the first session's commit: both files" c 3 \
	'"+++ b/second.txt" in D and "+++ b/hello.txt" in D and "+more\n" in D'
check "c: base_commit did not move" [ "$(cat "$CROOT/base_commit")" = "$FIRST" ]

echo "--- d. cancel while the model is slow to answer"
in_ns d '[{"delay": 30, "text": "too late"}]' slow 4 "" cancel
check "d: the stand-in held the request" [ ! -e "$TMP/cases/d/wait.err" ]
check "d: no process has the credential in its argv" [ ! -s "$TMP/cases/d/argv.hits" ]
check "d: the supervisor's environment does not hold it" [ ! -s "$TMP/cases/d/sup.env.hits" ]
check "d: the CLI's does" [ "$(cat "$TMP/cases/d/cli.env.key")" = 1 ]
check "d: the supervisor shows as 'sandbox-claude session'" \
	[ "$(cat "$TMP/cases/d/sup.cmdline" | tr -d ' ')" = "sandbox-claudesession" ]
log "d: the supervisor's resident memory while the CLI runs: $(cat "$TMP/cases/d/sup.rss") KiB"
check "d: a second session-start while it runs: refused, another session running" \
	[ "$(cat "$TMP/cases/d/second.rc"):$(answer d second.out)" = '2:{"error":"another session of this sandbox is still running"}' ]
check "d: session-cancel answers cancelling" [ "$(answer d cancel.out)" = '{"status":"cancelling"}' ]
py "d: finished, cancelled, exit 143" d 4 \
	'S["status"] == "finished" and S["cancelled"] is True and S["exit_status"] == 143 and S["timed_out"] is False'
log "d: finished $(cat "$TMP/cases/d/cancel.ms") ms after session-cancel"
check "d: within 5 s" [ "$(cat "$TMP/cases/d/cancel.ms")" -lt 5000 ]
check "d: nothing of the session is left running" [ ! -s "$TMP/cases/d/left" ]
check "d: a second session-cancel answers cancelled" [ "$(answer d cancel2.out)" = '{"status":"cancelled"}' ]
py "d: the cancel file is there" d 4 'os.path.exists(d + "/cancel")'

echo "--- e. the session's timeout"
s=$(now_ms)
in_ns e '[{"delay": 30, "text": "too late"}]' simple 5 ', "timeout": 2'
took=$(($(now_ms) - s))
py "e: finished, timed out, exit 143, not cancelled" e 5 \
	'S["status"] == "finished" and S["timed_out"] is True and S["exit_status"] == 143 and S["cancelled"] is False'
log "e: the case took $took ms"
check "e: within 10 s" [ "$took" -lt 10000 ]
check "e: nothing of the session is left running" [ ! -s "$TMP/cases/e/left" ]

echo "--- f. the API answers 500"
in_ns f '[{"error": {"status": 500, "type": "api_error", "message": "scripted overload"}, "repeat": 5}]' simple 6
py "f: finished with exit 1, an error result with the status, one retry" f 6 \
	'S["exit_status"] == 1 and of("result")[-1]["is_error"] is True and of("result")[-1]["api_error_status"] == 500 and len(of("system", "api_retry")) == 1'

echo "--- g. a checkout that defines a filter driver"
as_app git -C "$APP" config filter.crypt.clean "cat"
in_ns g "$(printf '[{"tool_use": {"id": "toolu_g1", "name": "Write", "input": {"file_path": "%s", "content": "g\\n"}}}, {"text": "Done."}]' "$APP/g.txt")" \
	simple 7 "" "Write g.txt"
py "g: diff.patch is the fixed sentence" g 7 \
	'D == "The diff is not shown: the checkout'"'"'s git configuration defines filter drivers, which the sandbox does not run.\n"'
as_app git -C "$APP" config --unset filter.crypt.clean

echo "--- h. sandbox_login mode without a login"
in_ns h '[{"text": "nobody should ask"}]' simple 8 ', "mode": "sandbox_login"'
py "h: the CLI saw no credential and no base URL: Not logged in, nothing sent" h 8 \
	'S["exit_status"] == 1 and E[0]["apiKeySource"] == "none" and "Not logged in" in of("result")[-1]["result"] and R == []'
check "h: its config directory is HOME/login" [ -d "$CHOME/login" ]

echo "--- m. api_key mode with CLAUDE_CODE_OAUTH_TOKEN in the helper's environment"
USE_OAUTH=1 in_ns m '[{"text": "auth={{header:authorization}} key={{header:x-api-key}}"}]' simple 9
py "m: the token went as authorization: Bearer, no x-api-key" m 9 \
	'[r for r in R if r["method"] == "POST"][0]["headers"]["authorization"] == "Bearer " + KEY and "x-api-key" not in [r for r in R if r["method"] == "POST"][0]["headers"]'
py "m: finished 0; the model's echo of it masked" m 9 \
	'S["exit_status"] == 0 and "auth=Bearer [REDACTED] key=" in raw and KEY not in raw'

echo "--- i. refusals"
# refused N DESCRIPTION EXPECTED_TEXT [VERB]: exit 2, {"error": ...} as the last line
refused() {
	local n=$1 what=$2 want=$3 verb=${4:-session-start} out rc
	out=$("$HELPER" "$verb" --dir "$CROOT/sessions/$n" 2>/dev/null)
	rc=$?
	check "i: $what" python3 -c 'import json, sys
o = json.loads(sys.argv[1].splitlines()[-1])
sys.exit(0 if sys.argv[2] == "2" and sys.argv[3] in o["error"] else 1)' "$out" "$rc" "$want" ||
		log "    got exit $rc: $out"
}
mk() { # mk N REQUEST_JSON [PROMPT]
	mkdir -m 700 "$CROOT/sessions/$1"
	[ -n "$2" ] && printf '%s\n' "$2" >"$CROOT/sessions/$1/request.json"
	[ -n "${3:-}" ] && printf '%s\n' "$3" >"$CROOT/sessions/$1/prompt.txt"
	return 0
}
REQ='{"argv": ["claude", "-p"], "mode": "api_key", "timeout": 60}'
LREQ='{"argv": ["claude", "-p"], "mode": "sandbox_login", "timeout": 60}'
mk 20 "" "hi" && refused 20 "no request.json" "no request.json"
mk 21 '{"mode": "api_key"}' "hi" && refused 21 "no argv" "no \`argv\`"
mk 22 '{"argv": [], "mode": "api_key"}' "hi" && refused 22 "an empty argv" "no \`argv\`"
mk 23 "$REQ" && refused 23 "no prompt.txt" "no prompt.txt"
mk 24 "$REQ" && ln -s /etc/hostname "$CROOT/sessions/24/prompt.txt" && refused 24 "prompt.txt a link" "symbolic link"
refused 1 "a session started already" "started already"
mk 25 "$REQ" "hi"
# One process holds the lock (as a running session's supervisor does), killed by its pid.
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
time.sleep(30)' "$CROOT/session.lock" </dev/null >/dev/null 2>&1 &
holder=$!
on_exit "kill $holder"
for _ in $(seq 1 100); do flock -n "$CROOT/session.lock" true || break; sleep 0.02; done
refused 25 "another session still running" "another session"
kill "$holder"
wait "$holder" 2>/dev/null
mk 26 '{"argv": ["claude"], "mode": "root"}' "hi" && refused 26 "an unknown mode" "\`mode\`"
mk 27 '{"argv": ["claude"], "timeout": 0}' "hi" && refused 27 "a zero timeout" "\`timeout\`"
mkdir -p -m 755 "$CROOT/sessions/28" && refused 28 "a session directory that is not 0700" "mode 0700"
mkdir -p -m 700 "$CROOT/sessions/x1" && refused x1 "a directory name that is not digits" "<digits>"
as_app mkdir "$APP/.claude"
as_app ln -s /etc/passwd "$APP/.claude/settings.json"
mk 30 "$LREQ" "hi" && refused 30 "sandbox_login: .claude/settings.json a link" "symbolic link"
as_app rm "$APP/.claude/settings.json"
as_app sh -c "echo '{\"apiKeyHelper\": \"/bin/echo k\"}' >'$APP/.claude/settings.local.json'"
mk 31 "$LREQ" "hi" && refused 31 "sandbox_login: apiKeyHelper in settings.local.json" "apiKeyHelper"
as_app sh -c "echo '{\"env\": {\"ANTHROPIC_BASE_URL\": \"http://x\"}}' >'$APP/.claude/settings.local.json'"
mk 32 "$LREQ" "hi" && refused 32 "sandbox_login: ANTHROPIC_* in the settings' env" "ANTHROPIC_BASE_URL"
as_app sh -c "echo '{\"env\": {\"CLAUDE_CODE_OAUTH_TOKEN\": \"x\"}}' >'$APP/.claude/settings.json'; rm '$APP/.claude/settings.local.json'"
mk 33 "$LREQ" "hi" && refused 33 "sandbox_login: CLAUDE_CODE_OAUTH_TOKEN in the settings' env" "CLAUDE_CODE_OAUTH_TOKEN"
as_app rm -r "$APP/.claude"
mk 34 "$REQ" "hi" && refused 34 "session-cancel of a session never started" "not started" session-cancel
check "i: a refused session-start wrote no status.json" [ ! -e "$CROOT/sessions/23/status.json" ]
mk 35 "$REQ" "hi" && refused 35 "a sandbox whose confinement was never verified" "never verified: run \`sandbox-ctl verify\`"
check "i: ... and its status.json was not written" [ ! -e "$CROOT/sessions/35/status.json" ]
printf '{"confined": false}\n' >"$TMP/confinement.bad"
out=$(SANDBOX_CONFINEMENT_RECORD=$TMP/confinement.bad "$HELPER" session-start --dir "$CROOT/sessions/35" 2>/dev/null)
check "i: a record whose checks failed is refused too" \
	python3 -c 'import json, sys; o = json.loads(sys.argv[1].splitlines()[-1]); sys.exit(0 if "verif" in o["error"] else 1)' "$out"

echo "--- k. the subscription login, against a stand-in claude (tests/claude/stand-in-claude.sh)"
install -m 755 "$CL/stand-in-claude.sh" "$TMP/stand-in-claude"
LH=$TMP/login-home
mkdir -p "$LH" && chown "$CL_USER:" "$LH" && chmod 700 "$LH"
L() { # L OUT VERB [ARGS]: sandbox-claude with the stand-in; the last line in $TMP/OUT, exit in $TMP/OUT.rc
	local out=$1
	shift
	SANDBOX_CLAUDE_HOME=$LH SANDBOX_CLAUDE_BIN=$TMP/stand-in-claude "$HELPER" "$@" >"$TMP/$out.all" 2>/dev/null
	echo $? >"$TMP/$out.rc"
	tail -1 "$TMP/$out.all" >"$TMP/$out"
}
jq_() { python3 -c 'import json, sys; o = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$@"; }
lstatus() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["status"])' "$CROOT/login/status.json" 2>/dev/null; }
wait_login() { # wait_login STATUS: up to 10 s
	for _ in $(seq 1 200); do [ "$(lstatus)" = "$1" ] && return 0; sleep 0.05; done
	return 1
}
L k0 login-status
check "k: login-status before any login: disconnected" \
	[ "$(cat "$TMP/k0")" = '{"status":"disconnected","logged_in":false,"auth_method":null}' ]
L k1 login-start --timeout 0
check "k: login-start --timeout 0 is refused" [ "$(cat "$TMP/k1.rc")" = 2 ]
L k1 login-start --timeout 601
check "k: login-start --timeout 601 is refused" [ "$(cat "$TMP/k1.rc")" = 2 ]
L k2 login-start --timeout 30
check "k: login-start answers awaiting_code with the vendor's authorize URL" \
	jq_ "$TMP/k2" 'o["status"] == "awaiting_code" and o["authorize_url"].startswith("https://claude.com/cai/oauth/authorize?code=true&client_id=test&state=") and "\x1b" not in o["authorize_url"]'
check "k: ... exit 0" [ "$(cat "$TMP/k2.rc")" = 0 ]
check "k: it revoked the old login first (claude auth logout ran)" [ "$(wc -l <"$LH/logouts")" = 1 ]
check "k: the login flow runs as the claude user" \
	bash -c "pgrep -u '$CL_USER' -f 'stand-in-claude auth login' >/dev/null"
L k3 login-status
check "k: login-status during the flow: awaiting_code, not logged in" \
	jq_ "$TMP/k3" 'o["status"] == "awaiting_code" and o["logged_in"] is False'
L k4 login-code
check "k: login-code without CLAUDE_LOGIN_CODE is refused" [ "$(cat "$TMP/k4.rc")" = 2 ]
L k4 login-code good-code
check "k: login-code takes no code from argv" [ "$(cat "$TMP/k4.rc")" = 2 ]
CLAUDE_LOGIN_CODE=good-code L k5 login-code
check "k: login-code with CLAUDE_LOGIN_CODE: submitted" [ "$(cat "$TMP/k5")" = '{"status":"submitted"}' ]
check "k: the flow completes" wait_login completed
CLAUDE_LOGIN_CODE=good-code L k6 login-code
check "k: a second login-code is refused" [ "$(cat "$TMP/k6.rc")" = 2 ]
L k7 login-status
check "k: login-status: connected, logged in with claude.ai" \
	[ "$(cat "$TMP/k7")" = '{"status":"connected","logged_in":true,"auth_method":"claude.ai"}' ]
check "k: nothing the CLI printed after the code is kept" ! grep -rqF "sk-ant-oat01-fake-secret-token" "$CROOT"
check "k: the login lives in the claude home, the claude user's" \
	[ "$(stat -c %U "$LH/login/.credentials.json" 2>/dev/null)" = "$CL_USER" ]
check "k: the app user cannot read it" ! as_app cat "$LH/login/.credentials.json" 2>/dev/null
L k8 logout
check "k: logout: logged_out, the configuration removed" \
	[ "$(cat "$TMP/k8"):$([ -e "$LH/login" ] && echo kept)" = '{"status":"logged_out"}:' ]
L k9 login-status
check "k: login-status after logout: disconnected" jq_ "$TMP/k9" 'o["status"] == "disconnected" and o["logged_in"] is False'
L k10 login-start --timeout 30
CLAUDE_LOGIN_CODE=bad-code L k11 login-code
check "k: a wrong code: the flow fails" wait_login failed
L k12 login-status
check "k: ... login-status says failed" jq_ "$TMP/k12" 'o["status"] == "failed" and o["logged_in"] is False'
L k13 login-start --timeout 30
L k14 logout
check "k: logout during a flow: cancelled, nothing of it left" \
	[ "$(lstatus):$(pgrep -u "$CL_USER" -f 'stand-in-claude auth login' | wc -l)" = "cancelled:0" ]
echo evil-url >"$LH/fake-mode"
s=$(now_ms)
L k15 login-start --timeout 2
check "k: a URL of another site is never passed on; the flow expires" \
	jq_ "$TMP/k15" 'o["status"] == "expired" and "authorize_url" not in o'
log "k: expired $(($(now_ms) - s)) ms after a 2 s login-start"
check "k: no status.json ever named the other site" ! grep -rqF "evil.example" "$CROOT"
rm -f "$LH/fake-mode"

echo "--- l. the platform's sequence around a booted app: boot, session, sandbox-app-boot --restart"
# A second sandbox: its own session root and checkout (tests/data/pyapp), booted from a spec
# whose app_dir and user the helper takes when no override says otherwise.
L0=$(now_ms)
W2=$TMP/ws2
mkdir -p "$W2/boot" "$W2/run"
cp -a "$ROOT/tests/data/pyapp" "$W2/app"
printf 'data/\n' >"$W2/app/.gitignore"
(cd "$W2/app" && git init -q -b main && git add -A && git -c user.name=t -c user.email=t@e commit -qm app)
chown -R "$APP_USER:" "$W2/app"
P2=$(free_port)
cat >"$W2/boot/spec.json" <<SPEC
{"version": 1, "app_dir": "$W2/app", "manifest_path": "$W2/run/runtime.json",
 "port": $P2, "timeout": 60, "user": "$APP_USER", "env": {"SPEC_GREETING": "from-the-spec"},
 "manifest": {"command": "/usr/bin/python3 manifest.py"},
 "start": {"command": "exec /usr/bin/python3 server.py"}}
SPEC
chmod 600 "$W2/boot/spec.json"
on_exit "$BOOT --stop --spec $W2/boot/spec.json --grace 1000"
$(platform_env) "$BOOT" --spec "$W2/boot/spec.json" --no-forward --grace 1000 \
	--cache-root "$TMP/cache" >"$TMP/l-boot.out" 2>"$TMP/l-boot.err"
check "l: the app boots from the spec" [ "$(http_status "http://127.0.0.1:$P2/up")" = 200 ] ||
	tail -5 "$TMP/l-boot.err"
CROOT_SAVED=$CROOT
CROOT=$W2/claude
IN_APP="" IN_APP_USER="" IN_SPEC=$W2/boot/spec.json in_ns l \
	"$(printf '[{"tool_use": {"id": "toolu_l1", "name": "Write", "input": {"file_path": "%s", "content": "from the session\\n"}}}, {"text": "Done."}]' "$W2/app/NOTES.md")" \
	simple 1 "" "Write NOTES.md"
py "l: the session ran in the spec's app_dir and finished" l 1 \
	'S["exit_status"] == 0 and E[0]["cwd"] == os.path.dirname(d).replace("/claude/sessions", "/app")'
py "l: diff.patch has the session's file against the spec's checkout" l 1 \
	'"+++ b/NOTES.md\n" in D and "+from the session\n" in D and "data/" not in D'
check "l: the file is the claude user's, in the app user's group" \
	[ "$(stat -c %U:%G "$W2/app/NOTES.md" 2>/dev/null)" = "$CL_USER:$APP_USER" ]
CROOT=$CROOT_SAVED
$(platform_env) "$BOOT" --spec "$W2/boot/spec.json" --restart --no-forward --grace 1000 \
	--cache-root "$TMP/cache" >"$TMP/l-restart.out" 2>"$TMP/l-restart.err"
rc=$?
check "l: sandbox-app-boot --spec ... --restart exits 0 after the session" [ "$rc" = 0 ] ||
	tail -5 "$TMP/l-restart.err"
check "l: the app answers again" [ "$(http_status "http://127.0.0.1:$P2/up")" = 200 ]
log "l: boot, session and restart took $(($(now_ms) - L0)) ms"
"$BOOT" --stop --spec "$W2/boot/spec.json" --grace 1000 >/dev/null 2>&1

echo "--- j. the credential in no file under the workspace"
check "j: not raw, not URL-encoded, not base64" ! grep -rqaF -e "$KEY" -e "$KEY_URL" -e "$KEY_B64" "$WS"
check "j: no process of the claude user is left anywhere" ! pgrep -u "$CL_USER" >/dev/null

log "the whole test: $(($(now_ms) - T0)) ms"
finish
