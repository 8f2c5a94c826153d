#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Long-lived sessions over the channel (docs/sessions.md, "Long-lived sessions"): the real
# daemon (`sandbox-agent serve --unix`), sandbox-ctl, the real Claude Code CLI and the stand-in
# model API, all in one network namespace of the test's own (tests/claude/run-in-netns.sh).
# tests/claude/drive_session.py plays the controller; this file checks what it saw, what the
# model API received and what the guest kept:
#   two turns in one process (the second request carries the first turn); approve -> written;
#   deny -> not written; deny with interrupt -> the turn ends in error and the next turn runs;
#   a request left unanswered while the controller is away and the daemon restarts: still
#   pending on reconnect through the new daemon, denied after the approval timeout; events read in pieces by --from: nothing lost or repeated; a
#   follower with --deny-all; cancel; one session at a time; the credential in no argv, no
#   file, no event, no log and no environment but the CLI's; the exec transport (a relay to
#   the running daemon) sees the same session.
# A recording of the session is checked against the shape of the shipped examples
# (tests/data/recordings/, tests/claude/recording_shape.py); RECORD=DIR keeps a fresh one.
source "$(dirname "$0")/lib.sh"

CL=$ROOT/tests/claude
CTL=$BUILD/sandbox-ctl
need_root
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
[ -x "$BUILD/sandbox-claude" ] || skip "$BUILD/sandbox-claude is not built"
CLAUDE=$("$CL/install-cli.sh" 2>"$TMP/install.log") || {
	tail -5 "$TMP/install.log"
	skip "the Claude Code CLI could not be installed from the npm registry"
}
CLI_SRC=$(cd "$(dirname "$CLAUDE")/.." && pwd)
CLI_BIN=$TMP/cli/$(cd "$CLI_SRC" && readlink -f .bin/claude | sed "s|^$CLI_SRC/||")
mkdir -p "$TMP/cli"
"$CL/run-in-netns.sh" true 2>"$TMP/netns.err" || skip "cannot make a network namespace: $(cat "$TMP/netns.err")"

APP_USER=sbxs-app-$$
CL_USER=sbxs-claude-$$
APP_USER=${APP_USER:0:31} CL_USER=${CL_USER:0:31}
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	"$APP_USER" || skip "cannot create a user"
on_exit "userdel $APP_USER; groupdel $APP_USER"
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	-G "$APP_USER" "$CL_USER" || skip "cannot create a user"
on_exit "userdel $CL_USER; groupdel $CL_USER"
on_exit "rm -rf /tmp/claude-$(id -u "$CL_USER")"

WS=$TMP/ws
CROOT=$WS/claude APP=$WS/app CHOME=$WS/claude-home OUTD=$TMP/out
mkdir -p "$APP" "$CHOME" "$OUTD" "$TMP/home"
chown "$CL_USER:" "$CHOME"
chmod 700 "$CHOME"
(cd "$APP" && git init -q -b main && echo "hello" >README &&
	git add README && git -c user.name=t -c user.email=t@e commit -qm init)
chown -R "$APP_USER:" "$APP"

KEY="sk-ant-live-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
printf '%s' "$KEY" >"$TMP/key"
chmod 600 "$TMP/key"

# The model's replies, in the order drive_session.py's turns ask for them.
w() { printf '{"tool_use": {"id": "toolu_%s", "name": "Write", "input": {"file_path": "%s/%s.txt", "content": "%s\\n"}}}' "$1" "$APP" "$1" "$1"; }
cat >"$TMP/script.json" <<JSON
[{"text": "Hello one."},
 $(w a), {"text": "Wrote a."},
 $(w b), {"text": "Not writing b then."},
 $(w c),
 {"text": "Bye."},
 $(w d), {"text": "Not writing d then."},
 {"delay": 30, "text": "too slow"},
 $(w e), {"text": "Wrote e."},
 $(w f), {"text": "Wrote f."}]
JSON

HOME=$TMP/home "$CTL" keygen >/dev/null 2>&1
cp "$TMP/home/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"

# What runs in the namespace: the daemon, the transports' first contact, the driver.
cat >"$TMP/inner.sh" <<'SH'
set -u
mount --bind "$CLI_SRC" "$TMP/cli" || exit 125
cat >"$TMP/daemon.sh" <<'D'
[ -f "$TMP/daemon.pid" ] && kill "$(cat "$TMP/daemon.pid")" && sleep 0.5
rm -f "$TMP/agent.sock"
"$AGENT" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/state" -v \
	>>"$OUTD/daemon.log" 2>&1 &
echo $! >"$TMP/daemon.pid"
echo $! >>"$TMP/daemon.pids"
# Its own loop, not lib.sh's wait_socket: this script runs in the namespace under env -i, and
# again from the driver (RESTART), where no function of lib.sh is defined.
for _ in $(seq 100); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
# A daemon keeps secrets in memory only: a controller puts them again after a restart.
printf '{"ANTHROPIC_API_KEY": "%s"}' "$(cat "$TMP/key")" |
	"$CTL" --timeout 30 --connect "unix:$TMP/agent.sock" --accept-new-guest-key \
	secrets put --scope session ANTHROPIC_API_KEY >>"$OUTD/secret.json" 2>&1
D
bash "$TMP/daemon.sh"
export RESTART=$TMP/daemon.sh
C=("$CTL" --timeout 30 --connect "unix:$TMP/agent.sock")
"${C[@]}" --accept-new-guest-key hello >"$OUTD/hello.json" 2>"$OUTD/hello.err"
KEYFILE=$TMP/key /usr/bin/python3 "$CL/drive_session.py" --out "$OUTD" -- "${C[@]}" \
	>"$OUTD/driver.out" 2>&1
echo $? >"$OUTD/driver.rc"
# The exec transport: a relay to the running daemon sees the same session.
X=(--timeout 30 --instance relay --accept-new-guest-key --connect exec -- "$AGENT" serve --stdio \
	--daemon-socket "$TMP/agent.sock")
"$CTL" session list "${X[@]}" >"$OUTD/exec-list.json" 2>"$OUTD/exec-list.err"
echo $? >"$OUTD/exec-list.rc"
"$CTL" session events --id 1 --from 0 "${X[@]}" >"$OUTD/exec-events.json" 2>"$OUTD/exec-events.err"
"$CTL" session diff --id 1 "${X[@]}" >"$OUTD/exec-diff.json" 2>"$OUTD/exec-diff.err"
SH
export HOME=$TMP/home
T0=$(date +%s)
"$CL/run-in-netns.sh" env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 \
	HOME="$TMP/home" TMP="$TMP" OUTD="$OUTD" CL="$CL" CTL="$CTL" AGENT="$AGENT" CLI_SRC="$CLI_SRC" \
	SANDBOX_CLAUDE_ROOT="$CROOT" SANDBOX_APP_DIR="$APP" SANDBOX_CLAUDE_USER="$CL_USER" \
	SANDBOX_APP_USER="$APP_USER" SANDBOX_CLAUDE_HOME="$CHOME" SANDBOX_CLAUDE_BIN="$CLI_BIN" \
	SANDBOX_BOOT_SPEC="$TMP/no-spec.json" \
	"$CL/with-model-api.sh" "$TMP/script.json" "$TMP/requests.jsonl" bash "$TMP/inner.sh"
log "the scenario took $(($(date +%s) - T0)) s"
check "the driver ran to its end" [ "$(cat "$OUTD/driver.rc" 2>/dev/null)" = 0 ] ||
	{ tail -20 "$OUTD/driver.out"; tail -20 "$OUTD/daemon.log"; }

D=$CROOT/sessions/1
# f EXPR: Python over F (facts.json), E (events.jsonl of the session), R (the model API's
# requests), P (its message POSTs), S (status.json), KEY
f() {
	local what=$1
	shift
	check "$what" /usr/bin/python3 - "$OUTD" "$D" "$TMP/requests.jsonl" "$KEY" "$*" <<'PY'
import json, os, sys
out, d, req, KEY, expr = sys.argv[1:6]
def rd(p):
    try:
        return open(p).read()
    except OSError:
        return ""
F = json.loads(rd(out + "/facts.json") or "{}")
raw = rd(d + "/events.jsonl")
E = [json.loads(l) for l in raw.split("\n") if l]
R = [json.loads(l) for l in rd(req).split("\n") if l]
P = [r for r in R if r["method"] == "POST" and "/messages" in r["path"] and "count_tokens" not in r["path"]]
S = json.loads(rd(d + "/status.json") or "{}")
def of(t, sub=None):
    return [e for e in E if e.get("type") == t and (sub is None or e.get("subtype") == sub)]
try:
    ok = eval(expr)
except Exception as ex:
    print("    (%s: %s)" % (type(ex).__name__, ex))
    ok = False
sys.exit(0 if ok else 1)
PY
}

echo "--- start, two turns in one process"
f "a start in a sandbox never verified is refused (exit 2), saying what to run" 'F["unverified_start"]["rc"] == 2 and "never verified: run `sandbox-ctl verify`" in F["unverified_start"]["err"]'
f "session start --dangerously-no-sandbox answers id 1, started, and that the sandbox is unverified" 'F["start"]["rc"] == 0 and F["start"]["doc"]["id"] == "1" and F["start"]["doc"]["status"] == "started" and F["start"]["doc"]["sandbox"] == "unverified (--dangerously-no-sandbox)"'
f "a second session while one runs: refused (exit 2), says so" 'F["second_start"]["rc"] == 2 and "still running" in F["second_start"]["err"]'
f "the first turn ended with a result" 'F["turn1_results"] == 1'
f "status: running, live, busy false, dangerously_no_sandbox true" 'F["status_running"]["status"] == "running" and F["status_running"]["live"] and F["status_running"]["dangerously_no_sandbox"] is True'
f "one CLI process for every turn (one system/init pid... one session_id)" 'len(set(e["session_id"] for e in of("system", "init"))) == 1 and len(of("system", "init")) >= 5'
f "the second model request carries the first turn (prompt and reply)" \
	'"Say hello" in json.dumps(P[1]["body"]["messages"]) and "Hello one." in json.dumps(P[1]["body"]["messages"]) and "Write a.txt" in json.dumps(P[1]["body"]["messages"])'
f "our user turns are events too (sandbox/user, numbered)" '[e["turn"] for e in of("sandbox", "user")] == [1, 2, 3, 4, 5, 6, 7]'

echo "--- approvals"
f "the approval request names the tool and its input" 'F["a_request"]["request"]["tool_name"] == "Write" and F["a_request"]["request"]["input"]["file_path"].endswith("/a.txt")'
f "while it waits, status says pending 1" 'F["a_pending_status"]["pending"] == 1'
f "approve answers ok" 'F["a_approve"]["rc"] == 0'
f "approving it again: refused (exit 2), no such pending request" 'F["a_approve_again"]["rc"] == 2 and "waits for an answer" in F["a_approve_again"]["err"]'
check "approve -> a.txt written" [ "$(cat "$APP/a.txt" 2>/dev/null)" = a ]
f "the answer is an event: allow, by host" 'any(e["behavior"] == "allow" and e["by"] == "host" and e["request_id"] == F["a_request"]["request_id"] for e in of("sandbox", "answer"))'
f "deny answers ok; the turn still ends in a result" 'F["b_deny"]["rc"] == 0 and F["turn3_results"] == 3'
check "deny -> b.txt not written" [ ! -e "$APP/b.txt" ]
f "the model was told the denial (its message in the tool_result)" '"not b" in json.dumps(P[4]["body"]["messages"])'
f "deny with interrupt: the turn ends as error_during_execution" 'F["c_deny"]["rc"] == 0 and F["turn4_result"]["subtype"] == "error_during_execution"'
check "... and c.txt is not written" [ ! -e "$APP/c.txt" ]
f "the process takes the next turn after the interrupt" 'F["turn5_result"]["subtype"] == "success" and "Bye." in F["turn5_result"]["result"]'

echo "--- away during a pending approval, --from offsets"
f "the daemon restarted while the request was pending" 'F["restart_rc"] == 0'
check "... as a new process" [ "$(sort -u "$TMP/daemon.pids" | wc -l)" = 2 ]
f "reconnected (through the new daemon): the d.txt request is still pending" 'F["d_request"] is not None and F["d_pending_after_reconnect"] == 1'
f "after the approval timeout it is denied, by timeout" 'any(e["by"] == "timeout" and e["behavior"] == "deny" and e["request_id"] == F["d_request"]["request_id"] for e in of("sandbox", "answer"))'
check "... and d.txt is not written" [ ! -e "$APP/d.txt" ]
f "the turn went on to its result" 'F["turn6_results"] == 6'
f "pieces read with --from follow each other (next_offset = next offset)" 'all(a["next_offset"] == b["offset"] for a, b in zip(F["pieces"], F["pieces"][1:])) and F["pieces"][0]["offset"] == F["offset_before_6"]'
f "the pieces are exactly the events from that offset: nothing lost or repeated" \
	'F["pieces_events"] == [json.loads(l) for l in raw.encode()[F["offset_before_6"]:F["pieces"][-1]["next_offset"]].decode().split("\n") if l]'
f "a full read matches events.jsonl" 'F["all_events"]["events"] == E and F["all_events"]["next_offset"] == len(raw.encode())'
f "the follower from the offset printed every event from there, in order, once" \
	'[json.loads(l) for l in open(out + "/follow.jsonl") if l.strip()] == [json.loads(l) for l in raw.encode()[F["offset_before_6"]:].decode().split("\n") if l]'
f "the follower ended with the session, exit 0" 'F["follower_rc"] == 0'

echo "--- diff, cancel, the end"
f "session diff while running: the written file" 'F["diff"]["rc"] == 0 and "+++ b/a.txt" in F["diff"]["doc"]["diff"] and F["diff"]["doc"]["live"] is True'
f "cancel answers cancelling" 'F["cancel"]["rc"] == 0 and F["cancel"]["doc"]["status"] == "cancelling"'
f "finished, cancelled, exit 143, within 5 s" 'F["final_status"]["status"] == "finished" and F["final_status"]["cancelled"] and F["final_status"]["exit_status"] == 143 and F["cancel_ms"] < 5000'
f "status.json: live, 7 turns, nothing pending" 'S["live"] and S["turns"] == 7 and S["pending"] == 0 and S["status"] == "finished"'
f "a turn after the end: refused, the session has ended" 'F["send_after_end"]["rc"] == 2 and "has ended" in F["send_after_end"]["err"]'
check "the control socket is gone" [ ! -e "$D/control.sock" ]

echo "--- start --follow with an --approve policy (session 2)"
f "the follower printed the session's events up to the result" '"result" in [json.loads(l)["type"] for l in open(out + "/start-follow.jsonl") if l.strip()]'
f "the policy approved the Write (an answer by host)" '"allow" in [json.loads(l).get("behavior") for l in open(out + "/start-follow.jsonl") if l.strip()]'
check "e.txt written" [ "$(cat "$APP/e.txt" 2>/dev/null)" = e ]
f "an interrupt ended the follower cleanly (exit 0)" 'F["start_follow_rc"] == 0'
f "on a terminal the follower asks, naming the tool and its input" '"The agent wants to use Write" in F["tty_prompt"] and "f.txt" in F["tty_prompt"] and "Allow?" in F["tty_prompt"]'
check "... y allows: f.txt written" [ "$(cat "$APP/f.txt" 2>/dev/null)" = f ]
f "... and the answer is an event by host" 'any(json.loads(l).get("subtype") == "answer" and json.loads(l).get("behavior") == "allow" for l in open(out + "/tty-follow.jsonl") if l.strip())'
f "session 2 cancelled and finished" 'F["cancel2"]["rc"] == 0 and F["final_status2"]["status"] == "finished"'
log "start --follow to the turn's result: $(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["start_follow_ms"])' "$OUTD/facts.json" 2>/dev/null) ms"

echo "--- the exec transport"
check "session list over exec: exit 0" [ "$(cat "$OUTD/exec-list.rc" 2>/dev/null)" = 0 ]
f "... shows the session finished" 'json.load(open(out + "/exec-list.json"))["sessions"][-1]["status"] == "finished"'
f "session events over exec: the same events" 'json.load(open(out + "/exec-events.json"))["events"] == E'
f "session diff over exec after the end: the final diff" '"+++ b/a.txt" in json.load(open(out + "/exec-diff.json"))["diff"]'

echo "--- the credential"
f "the model API got it as x-api-key" 'P[0]["headers"]["x-api-key"] == KEY'
f "in no process's argv while the CLI ran" 'F["argv_hits"] == []'
f "in the environment of the CLI only (not the daemon, not the supervisor)" \
	'len(F["env_hits"]) == 1 and os.path.basename(F["env_hits"][0]).startswith("claude")'
check "in no file under the workspace, the daemon's state, or sandbox-ctl's output" \
	! grep -rqF -- "$KEY" "$WS" "$TMP/state" "$OUTD"

echo "--- recordings"
/usr/bin/python3 "$ROOT/tests/claude/recording_shape.py" "$D/events.jsonl" "$ROOT"/tests/data/recordings/*.jsonl \
	>"$TMP/shape.out" 2>&1
check "this session's recording has the shape of the shipped examples" [ $? -eq 0 ] || cat "$TMP/shape.out"
/usr/bin/python3 "$ROOT/tests/claude/recording_shape.py" "$CROOT/sessions/2/events.jsonl" \
	"$ROOT"/tests/data/recordings/*.jsonl >"$TMP/shape2.out" 2>&1
check "... and so has session 2's" [ $? -eq 0 ] || cat "$TMP/shape2.out"
if [ -n "${RECORD:-}" ]; then
	cp "$D/events.jsonl" "$RECORD/session-approvals.jsonl"
	cp "$CROOT/sessions/2/events.jsonl" "$RECORD/session-policy.jsonl"
	log "recorded into $RECORD/session-approvals.jsonl and session-policy.jsonl"
fi
[ -n "${KEEP_OUT:-}" ] && cp -r "$OUTD" "$KEEP_OUT"
finish
