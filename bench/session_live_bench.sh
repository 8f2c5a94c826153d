#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The long-lived session's own latency (docs/sessions.md, "Figures"), over a unix socket, with
# bench/session_live_stub.py as the CLI (it answers at once, so only our path is left):
#   event     a line on the CLI's stdout -> the same line on `sandbox-ctl session events
#             --follow`'s stdout (the stub stamps the line just before writing it)
#   approval  a can_use_tool request seen on sandbox-ctl's stdout, answered there by the
#             --approve policy -> the CLI's next event seen on sandbox-ctl's stdout: the host's
#             answer to the CLI's next event, what the CLI itself takes being ~0 for the stub
#   direct    the same stub driven through a pipe by this script, answer -> next line: the
#             floor that any relay adds to
# RUNS of each (default 30; events: 5 a run), medians. Needs root (the session engine runs the CLI as a user).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${BUILD:-$ROOT/build}
RUNS=${RUNS:-30}
[ "$(id -u)" -eq 0 ] || { echo "session_live_bench.sh: needs root" >&2; exit 2; }
TMP=$(mktemp -d /tmp/sandbox-bench.XXXXXX)
chmod 755 "$TMP"
DAEMON=
cleanup() {
	[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
	[ -f "$TMP/ws/claude/sessions/1/status.json" ] &&
		HOME=$TMP/home "$BUILD/sandbox-ctl" --connect "unix:$TMP/agent.sock" session cancel --id 1 \
			>/dev/null 2>&1 || true
	sleep 0.3
	rm -rf "$TMP"
}
trap cleanup EXIT
mkdir -p "$TMP/ws/app" "$TMP/ws/home" "$TMP/home"
(cd "$TMP/ws/app" && git init -q -b main && echo hi >README && git add README &&
	git -c user.name=t -c user.email=t@e commit -qm init)
export HOME=$TMP/home
"$BUILD/sandbox-ctl" keygen >/dev/null 2>&1
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
SANDBOX_CLAUDE_ROOT=$TMP/ws/claude SANDBOX_APP_DIR=$TMP/ws/app SANDBOX_CLAUDE_USER=root \
	SANDBOX_APP_USER=root SANDBOX_CLAUDE_HOME=$TMP/ws/home SANDBOX_CLAUDE_BIN=$ROOT/bench/session_live_stub.py \
	SANDBOX_BOOT_SPEC=$TMP/no-spec.json \
	"$BUILD/sandbox-agent" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/state" >"$TMP/daemon.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
C=("$BUILD/sandbox-ctl" --timeout 30 --connect "unix:$TMP/agent.sock")
"${C[@]}" --accept-new-guest-key hello >/dev/null
printf '{"ANTHROPIC_API_KEY": "sk-ant-bench"}' | "${C[@]}" secrets put --scope session ANTHROPIC_API_KEY >/dev/null
/usr/bin/python3 - "$RUNS" "$ROOT/bench/session_live_stub.py" "${C[@]}" <<'PY'
import json, statistics, subprocess, sys, time
runs, stub, ctl = int(sys.argv[1]), sys.argv[2], sys.argv[3:]

def med(v):
    return statistics.median(v) / 1e6

# direct: the stub through a pipe
p = subprocess.Popen([stub], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
direct = []
for i in range(runs):
    p.stdin.write(b'{"type":"user","message":{"role":"user","content":"ask"}}\n')
    p.stdout.readline()
    time.sleep(0.01)
    t = time.time_ns()
    p.stdin.write(b'{"type":"control_response","response":{}}\n')
    json.loads(p.stdout.readline())
    direct.append(time.time_ns() - t)
p.stdin.close()
p.wait()

# The bench runs on the machine, not in a verified sandbox.
out = subprocess.run(ctl + ["session", "start", "--dangerously-no-sandbox"], input=b"ev",
                     capture_output=True)
sid = json.loads(out.stdout)["id"]
fol = subprocess.Popen(ctl + ["session", "events", "--id", sid, "--follow", "--approve", "Bench"],
                       stdout=subprocess.PIPE, bufsize=0)

def next_event(kind):
    while True:
        line = fol.stdout.readline()
        if not line:
            sys.exit("the follower ended")
        e = json.loads(line)
        if e.get("type") == kind:
            return e, time.time_ns()

for _k in range(5):
    next_event("bench")  # the first turn
events, approvals = [], []
for i in range(runs):
    subprocess.run(ctl + ["session", "send", "--id", sid], input=b"ev", capture_output=True)
    for _k in range(5):
        e, seen = next_event("bench")
        events.append(seen - e["t"])
    subprocess.run(ctl + ["session", "send", "--id", sid], input=b"ask", capture_output=True)
    e, seen_req = next_event("control_request")
    e, seen = next_event("bench_answered")
    approvals.append(seen - seen_req)
fol.kill()
print("session_live_bench: %d runs each, medians (unix socket, the stub CLI)" % runs)
print("  event    CLI stdout -> sandbox-ctl stdout          %7.3f ms   (goal <= 1 ms)" % med(events))
print("  approval host answer -> the CLI's next event seen  %7.3f ms   (goal <= 2 ms added)" % med(approvals))
print("  direct   the same answer -> next line over a pipe  %7.3f ms   (the floor)" % med(direct))
print("  added by the relay to the approval: %.3f ms" % (med(approvals) - med(direct)))
print("figure: a long-lived session's event, the CLI's stdout -> `sandbox-ctl session events "
      "--follow`'s stdout, unix socket (a stub CLI that answers at once; median of %d) | "
      "%.2f ms | <= 1 ms" % (runs, med(events)))
print("figure: an approval's round trip (the host's answer -> the CLI's next event), added to "
      "what the CLI itself takes (the stub driven through a pipe) | %.2f ms (%.2f against "
      "%.2f) | <= 2 ms" % (med(approvals) - med(direct), med(approvals), med(direct)))
PY
