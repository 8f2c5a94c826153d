#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The real Claude Code CLI (tests/claude/install-cli.sh, cached outside the clone) against the
# stand-in model API (tests/claude/model_api.py), both inside a network namespace made for each
# case (tests/claude/run-in-netns.sh), so nothing leaves the machine:
#   a. one-shot `claude -p --output-format stream-json`, prompt on stdin: a text reply comes back
#      as `assistant` and `result` events; the CLI sent the key as x-api-key (the stand-in makes
#      the model repeat it) and the prompt in a streamed request.
#   b. a Write tool call in acceptEdits mode writes the file in the cwd; the tool_result goes
#      back in the next request.
#   c. one long-lived `--input-format stream-json --permission-prompt-tool stdio` process fed
#      three turns (tests/claude/drive_stream.py): the second request carries the first turn; a
#      tool call becomes a `control_request` `can_use_tool`; allowing it (the input echoed as
#      updatedInput) writes the file, denying it with a message does not, and the model is told.
#   d. a 500 from the API with CLAUDE_CODE_MAX_RETRIES=1 ends in an error result quickly.
#   e. no ANTHROPIC_* at all (how a subscription-login session starts without a login): the CLI
#      ends at once with "Not logged in" and sends nothing.
#   f. SIGTERM while the stand-in holds the reply back (a scripted delay): exit 143 at once, no
#      `result` event.
#   g. CLAUDE_CODE_OAUTH_TOKEN instead of the key: sent as `authorization: Bearer`.
# CLAUDE_RECORD=DIR copies two event streams there (text-turn.jsonl from a, and
# tool-approved-turn.jsonl, the approved turn of c): tests/claude/recordings/ holds them.
source "$(dirname "$0")/lib.sh"

CL=$ROOT/tests/claude
command -v unshare >/dev/null || skip "unshare (util-linux) is not installed"
now_ms() { echo $(($(date +%s%N) / 1000000)); }
elapsed() { # elapsed START_MS: seconds since, two decimals
	local ms=$(($(now_ms) - $1))
	printf '%d.%02d' $((ms / 1000)) $((ms % 1000 / 10))
}
t0=$(now_ms)
CLAUDE=$("$CL/install-cli.sh" 2>"$TMP/install.log") || {
	tail -5 "$TMP/install.log"
	skip "the Claude Code CLI could not be installed from the npm registry"
}
log "CLI $CLAUDE ($(elapsed "$t0") s to install or find)"
"$CL/run-in-netns.sh" true 2>"$TMP/netns.err" || skip "cannot make a network namespace: $(cat "$TMP/netns.err")"

KEY="sk-ant-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
OAUTH="sk-ant-oat01-test-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"

# in_ns CASE [VAR=VALUE...] COMMAND...: runs COMMAND in $TMP/CASE/work, inside a fresh network
# namespace, with the stand-in answering from $TMP/CASE/script.json and logging to
# $TMP/CASE/requests.jsonl, and only the environment the sessions get (plus ANTHROPIC_BASE_URL).
in_ns() {
	local d=$TMP/$1
	shift
	(cd "$d/work" && "$CL/run-in-netns.sh" env -i PATH=/usr/local/bin:/usr/bin:/bin LANG=C.UTF-8 \
		HOME="$d/home" TMPDIR="$d/tmp" CLAUDE_CONFIG_DIR="$d/config" \
		CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 DISABLE_AUTOUPDATER=1 DISABLE_TELEMETRY=1 \
		DISABLE_ERROR_REPORTING=1 CLAUDE_CODE_MAX_RETRIES=1 \
		"$CL/with-model-api.sh" "$d/script.json" "$d/requests.jsonl" env "$@")
}
new_case() { # new_case CASE SCRIPT_JSON
	local d=$TMP/$1
	mkdir -p "$d/home" "$d/config" "$d/tmp" "$d/work"
	printf '%s\n' "$2" >"$d/script.json"
}
ONESHOT=(-p --output-format stream-json --verbose --permission-mode acceptEdits --no-session-persistence)

# py DESCRIPTION CASE EXPRESSION: a Python expression over E (the events of $TMP/CASE/out.jsonl,
# or EVENTS=FILE), R (the requests the stand-in logged) and P (the POSTs to /v1/messages).
py() {
	local what=$1 d=$TMP/$2 expr=$3
	check "$what" /usr/bin/python3 - "${EVENTS:-$d/out.jsonl}" "$d/requests.jsonl" "$expr" "$KEY" "$OAUTH" <<'PY'
import json, sys
def lines(p):
    try:
        return [json.loads(l) for l in open(p) if l.strip()]
    except FileNotFoundError:
        return []
E, R = lines(sys.argv[1]), lines(sys.argv[2])
P = [r for r in R if r["method"] == "POST" and r["path"].startswith("/v1/messages")]
KEY, OAUTH = sys.argv[4], sys.argv[5]
def of(t, sub=None):
    return [e for e in E if e.get("type") == t and (sub is None or e.get("subtype") == sub)]
def text(m):  # all text in a request's messages, tool results included
    return json.dumps(m)
def last_user(req):  # the last role "user" message (2.1.197 also sends role "system" ones)
    return [m for m in req["body"]["messages"] if m["role"] == "user"][-1]
try:
    ok = eval(sys.argv[3])
except Exception as ex:
    print("    (%s: %s)" % (type(ex).__name__, ex))
    ok = False
sys.exit(0 if ok else 1)
PY
}

echo "--- a. one-shot text turn"
new_case a '[{"text": "Hello from the stand-in; your key is {{header:x-api-key}}."}]'
s=$(now_ms)
in_ns a ANTHROPIC_API_KEY="$KEY" timeout 60 "$CLAUDE" "${ONESHOT[@]}" \
	<<<"Say hello" >"$TMP/a/out.jsonl" 2>"$TMP/a/err.log"
rc=$?
log "case a: exit $rc in $(elapsed "$s") s"
check "a: the CLI exits 0" [ "$rc" -eq 0 ]
py "a: system/init first, with the cwd and the key's source" a \
	'E[0]["type"] == "system" and E[0]["subtype"] == "init" and E[0]["cwd"].endswith("/a/work") and E[0]["apiKeySource"] == "ANTHROPIC_API_KEY"'
py "a: an assistant event carries the text, the key repeated back" a \
	'[c["text"] for e in of("assistant") for c in e["message"]["content"]] == ["Hello from the stand-in; your key is %s." % KEY]'
py "a: the result is success, not an error, one turn, same text" a \
	'of("result")[-1]["subtype"] == "success" and of("result")[-1]["is_error"] is False and of("result")[-1]["num_turns"] == 1 and KEY in of("result")[-1]["result"] and E[-1]["type"] == "result"'
py "a: the CLI sent HEAD / and one streamed POST /v1/messages?beta=true" a \
	'[(r["method"], r["path"]) for r in R] == [("HEAD", "/"), ("POST", "/v1/messages?beta=true")] and P[0]["body"]["stream"] is True'
py "a: the key went as x-api-key, the prompt in the (last) user message" a \
	'P[0]["headers"]["x-api-key"] == KEY and "authorization" not in P[0]["headers"] and "Say hello" in text(last_user(P[0]))'
[ -n "${CLAUDE_RECORD:-}" ] && mkdir -p "$CLAUDE_RECORD" && cp "$TMP/a/out.jsonl" "$CLAUDE_RECORD/text-turn.jsonl"

echo "--- b. a Write tool call in acceptEdits mode"
new_case b "$(printf '[{"text": "Writing it.", "tool_use": {"id": "toolu_b1", "name": "Write", "input": {"file_path": "%s", "content": "written by the model\\n"}}}, {"text": "Done."}]' "$TMP/b/work/hello.txt")"
s=$(now_ms)
in_ns b ANTHROPIC_API_KEY="$KEY" timeout 60 "$CLAUDE" "${ONESHOT[@]}" \
	<<<"Write hello.txt" >"$TMP/b/out.jsonl" 2>"$TMP/b/err.log"
rc=$?
log "case b: exit $rc in $(elapsed "$s") s"
check "b: the CLI exits 0" [ "$rc" -eq 0 ]
check "b: the file is written in the cwd" [ "$(cat "$TMP/b/work/hello.txt" 2>/dev/null)" = "written by the model" ]
py "b: assistant events: the text block, then the tool_use block" b \
	'[c["type"] for e in of("assistant") for c in e["message"]["content"]] == ["text", "tool_use", "text"] and of("assistant")[1]["message"]["content"][0]["input"]["content"] == "written by the model\n"'
py "b: a user event carries the tool_result, not an error" b \
	'[c for e in of("user") for c in e["message"]["content"] if c["type"] == "tool_result" and c["tool_use_id"] == "toolu_b1" and not c.get("is_error")] != []'
py "b: the second request carries the tool_result back" b \
	'len(P) == 2 and "toolu_b1" in text(last_user(P[1])) and "tool_result" in text(last_user(P[1]))'
py "b: the result is success after 2 turns, no denials" b \
	'of("result")[-1]["subtype"] == "success" and of("result")[-1]["num_turns"] == 2 and of("result")[-1]["permission_denials"] == []'

echo "--- c. one long-lived stream-json process, permission relay over stdio"
new_case c "$(printf '[{"text": "Noted: PELICAN."},
 {"tool_use": {"id": "toolu_c1", "name": "Write", "input": {"file_path": "%s", "content": "allowed\\n"}}},
 {"text": "Wrote allowed.txt."},
 {"tool_use": {"id": "toolu_c2", "name": "Write", "input": {"file_path": "%s", "content": "denied\\n"}}},
 {"text": "Understood, not written."},
 {"tool_use": {"id": "toolu_c3", "name": "Write", "input": {"file_path": "%s", "content": "bare\\n"}}},
 {"text": "The write failed."},
 {"tool_use": {"id": "toolu_c4", "name": "Write", "input": {"file_path": "%s", "content": "interrupted\\n"}}},
 {"text": "Still here."}]' "$TMP/c/work/allowed.txt" "$TMP/c/work/denied.txt" "$TMP/c/work/bare.txt" \
	"$TMP/c/work/interrupted.txt")"
cat >"$TMP/c/turns.json" <<'EOF'
[{"prompt": "Remember the word PELICAN."},
 {"prompt": "Write allowed.txt.", "permission": "allow"},
 {"prompt": "Write denied.txt.", "permission": "deny", "message": "not this file, says the test"},
 {"prompt": "Write bare.txt.", "permission": "allow", "bare_allow": true},
 {"prompt": "Write interrupted.txt.", "permission": "deny", "message": "stop", "interrupt": true},
 {"prompt": "Are you still there?"}]
EOF
s=$(now_ms)
in_ns c ANTHROPIC_API_KEY="$KEY" /usr/bin/python3 "$CL/drive_stream.py" --turns "$TMP/c/turns.json" \
	--out "$TMP/c/drive" --timeout 60 -- "$CLAUDE" --print --input-format stream-json \
	--output-format stream-json --verbose --permission-prompt-tool stdio \
	</dev/null >"$TMP/c/summary.json" 2>"$TMP/c/err.log"
rc=$?
log "case c: exit $rc in $(elapsed "$s") s; $(/usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); print("init after %s s; turns took %s s" % (s["init_seconds"], ", ".join(str(t["seconds"]) for t in s["turns"])))' "$TMP/c/summary.json" 2>/dev/null)"
check "c: the driver saw six results and the CLI exit 0 at EOF" [ "$rc" -eq 0 ]
cp "$TMP/c/drive/events.jsonl" "$TMP/c/out.jsonl" 2>/dev/null
py "c: system/init again each turn" c 'len(of("system", "init")) == 6 and len(of("result")) == 6'
py "c: the second request carries the first turn (prompt and reply)" c \
	'len(P) == 9 and "PELICAN" in text(P[1]["body"]["messages"][0]) and "Noted: PELICAN." in text(P[1]["body"]["messages"]) and "Write allowed.txt." in text(last_user(P[1]))'
EVENTS=$TMP/c/drive/turn-2.jsonl py "c: turn 2: a control_request can_use_tool for Write, with its input" c \
	'[(e["request"]["subtype"], e["request"]["tool_name"], e["request"]["input"]["content"], e["request"]["tool_use_id"]) for e in of("control_request")] == [("can_use_tool", "Write", "allowed\n", "toolu_c1")] and of("control_request")[0]["request_id"]'
check "c: allowed (input echoed as updatedInput): the file is written" \
	[ "$(cat "$TMP/c/work/allowed.txt" 2>/dev/null)" = allowed ]
EVENTS=$TMP/c/drive/turn-2.jsonl py "c: turn 2 ends in success without denials" c \
	'of("result")[-1]["subtype"] == "success" and of("result")[-1]["permission_denials"] == [] and of("result")[-1]["is_error"] is False'
check "c: denied: the file is not written" [ ! -e "$TMP/c/work/denied.txt" ]
EVENTS=$TMP/c/drive/turn-3.jsonl py "c: turn 3: the deny is listed in the result's permission_denials" c \
	'[d["tool_name"] for d in of("result")[-1]["permission_denials"]] == ["Write"] and len(of("control_request")) == 1'
py "c: the model got the deny message back as an error tool_result" c \
	'"not this file, says the test" in text(last_user(P[4])) and "toolu_c2" in text(last_user(P[4]))'
# 2.1.197 wants the input echoed: a bare {"behavior":"allow"} fails the tool (a ZodError).
check "c: a bare allow (no updatedInput) does not write the file" [ ! -e "$TMP/c/work/bare.txt" ]
EVENTS=$TMP/c/drive/turn-4.jsonl py "c: ... the tool fails with a validation error, the turn goes on" c \
	'[c for e in of("user") for c in e["message"]["content"] if c.get("tool_use_id") == "toolu_c3" and c.get("is_error") and "updatedInput" in str(c["content"])] != [] and of("result")[-1]["subtype"] == "success"'
check "c: a deny with interrupt does not write the file" [ ! -e "$TMP/c/work/interrupted.txt" ]
EVENTS=$TMP/c/drive/turn-5.jsonl py "c: ... the turn ends as error_during_execution, nothing more asked" c \
	'of("result")[-1]["subtype"] == "error_during_execution" and of("result")[-1]["is_error"] is True and len(P) == 9 and P[8]["reply"] == 8'
EVENTS=$TMP/c/drive/turn-6.jsonl py "c: ... and the process answers the next turn" c \
	'of("result")[-1]["subtype"] == "success" and of("result")[-1]["result"] == "Still here."'
[ -n "${CLAUDE_RECORD:-}" ] && mkdir -p "$CLAUDE_RECORD" && cp "$TMP/c/drive/turn-2.jsonl" "$CLAUDE_RECORD/tool-approved-turn.jsonl"

echo "--- d. a 500 from the API, CLAUDE_CODE_MAX_RETRIES=1"
new_case d '[{"error": {"status": 500, "type": "api_error", "message": "scripted overload"}, "repeat": 5}]'
s=$(now_ms)
in_ns d ANTHROPIC_API_KEY="$KEY" timeout 120 "$CLAUDE" "${ONESHOT[@]}" \
	<<<"Say hello" >"$TMP/d/out.jsonl" 2>"$TMP/d/err.log"
rc=$?
took_ms=$(($(now_ms) - s))
took=$(elapsed "$s")
log "case d: exit $rc in $took s, $(grep -c '"POST"' "$TMP/d/requests.jsonl") POSTs"
check "d: the CLI exits non-zero" all_of [ "$rc" -ne 0 ] -- [ "$rc" -ne 124 ]
check "d: within 30 s" [ "$took_ms" -lt 30000 ]
py "d: the result is an error carrying the status" d \
	'of("result")[-1]["is_error"] is True and of("result")[-1]["api_error_status"] == 500'
py "d: one retry, announced as system/api_retry" d 'len(P) == 2 and len(of("system", "api_retry")) == 1'

echo "--- e. no ANTHROPIC_* variables at all"
new_case e '[{"text": "nobody should ask"}]'
s=$(now_ms)
in_ns e -u ANTHROPIC_BASE_URL timeout 60 "$CLAUDE" "${ONESHOT[@]}" \
	<<<"Say hello" >"$TMP/e/out.jsonl" 2>"$TMP/e/err.log"
rc=$?
took_ms=$(($(now_ms) - s))
took=$(elapsed "$s")
log "case e: exit $rc in $took s"
check "e: the CLI exits 1" [ "$rc" -eq 1 ]
check "e: within 10 s" [ "$took_ms" -lt 10000 ]
py "e: init says no key; the result is an error: Not logged in" e \
	'of("system", "init")[0]["apiKeySource"] == "none" and of("result")[-1]["is_error"] is True and "Not logged in" in of("result")[-1]["result"]'
py "e: the assistant event is synthetic, error authentication_failed" e \
	'of("assistant")[0]["error"] == "authentication_failed" and of("assistant")[0]["message"]["model"] == "<synthetic>"'
py "e: nothing reached the stand-in" e 'R == []'

echo "--- f. SIGTERM while the model is slow to answer"
new_case f '[{"delay": 30, "text": "too late"}]'
s=$(now_ms)
# The CLI is started in the namespace; once the stand-in has logged its POST (and sits in the
# delay), the CLI gets SIGTERM by its pid.
in_ns f ANTHROPIC_API_KEY="$KEY" CLAUDE="$CLAUDE" REQS="$TMP/f/requests.jsonl" bash -c '
	"$CLAUDE" "$@" <<<"Say hello" >../out.jsonl 2>../err.log &
	pid=$!
	for _ in $(seq 1 400); do grep -q "\"POST\"" "$REQS" 2>/dev/null && break; sleep 0.05; done
	t=$(date +%s%N)
	kill -TERM "$pid"
	wait "$pid"
	rc=$?
	echo "$rc $(( ($(date +%s%N) - t) / 1000000 ))" >../term' f "${ONESHOT[@]}"
read -r rc ms <"$TMP/f/term" || rc=none
log "case f: exit $rc ${ms:-?} ms after SIGTERM, $(elapsed "$s") s in all"
check "f: the stand-in held the request (delay)" [ "$(grep -c '"POST"' "$TMP/f/requests.jsonl")" -eq 1 ]
check "f: the CLI exits 143 on SIGTERM" [ "$rc" = 143 ]
check "f: within 5 s of the signal" [ "${ms:-99999}" -lt 5000 ]
py "f: system/init was printed, no result" f 'len(of("system", "init")) == 1 and of("result") == []'

echo "--- g. the OAuth token instead of the key"
new_case g '[{"text": "authorization={{header:authorization}} x-api-key={{header:x-api-key}}"}]'
s=$(now_ms)
in_ns g CLAUDE_CODE_OAUTH_TOKEN="$OAUTH" timeout 60 "$CLAUDE" "${ONESHOT[@]}" \
	<<<"Say hello" >"$TMP/g/out.jsonl" 2>"$TMP/g/err.log"
rc=$?
log "case g: exit $rc in $(elapsed "$s") s"
check "g: the CLI exits 0" [ "$rc" -eq 0 ]
py "g: sent as authorization: Bearer, no x-api-key, with the oauth beta" g \
	'P[0]["headers"]["authorization"] == "Bearer " + OAUTH and "x-api-key" not in P[0]["headers"] and "oauth-2025-04-20" in P[0]["headers"]["anthropic-beta"]'
py "g: the model repeated it; init says apiKeySource none" g \
	'of("result")[-1]["result"] == "authorization=Bearer %s x-api-key=" % OAUTH and of("system", "init")[0]["apiKeySource"] == "none"'

finish
