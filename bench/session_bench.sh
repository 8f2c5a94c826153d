#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What sandbox-claude adds before a session's first event, measured from outside, paired in one
# run: the real Claude Code CLI (tests/claude/install-cli.sh) against the stand-in model API,
# inside one network namespace (tests/claude/run-in-netns.sh), RUNS times each way, alternating:
#   direct   the CLI started as the claude user with the session's environment, argv and
#            prompt on stdin: the time from the spawn to its first stdout line
#   helper   `sandbox-claude session-start` on a fresh session directory: the time from the
#            call to the first line in events.jsonl (polled every 0.5 ms)
# Prints the medians and the median of the paired differences. Needs root. HELPER=... picks the
# binary (build-static/sandbox-claude for the static build, a link made beside it). The real
# CLI takes 0.5-1.7 s to its first event and varies by hundreds of milliseconds, more than the
# helper adds; STUB=1 runs a shell script that prints one event at once instead, both ways,
# which leaves the helper's own part.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
HELPER=${HELPER:-$ROOT/build/sandbox-claude}
RUNS=${RUNS:-10}
[ "$(id -u)" -eq 0 ] || { echo "session_bench.sh: needs root" >&2; exit 2; }
CLAUDE=$(tests/claude/install-cli.sh)
CLI_SRC=$(cd "$(dirname "$CLAUDE")/.." && pwd)
TMP=$(mktemp -d /tmp/sandbox-bench.XXXXXX)
chmod 755 "$TMP"
APP_USER=sbxb-app-$$ CL_USER=sbxb-claude-$$
cleanup() {
	userdel "$CL_USER" 2>/dev/null || true
	groupdel "$CL_USER" 2>/dev/null || true
	userdel "$APP_USER" 2>/dev/null || true
	groupdel "$APP_USER" 2>/dev/null || true
	rm -rf "$TMP"
}
trap cleanup EXIT
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$APP_USER"
useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin \
	-G "$APP_USER" "$CL_USER"
mkdir -p "$TMP/cli" "$TMP/ws/app" "$TMP/ws/home"
(cd "$TMP/ws/app" && git init -q -b main && echo hi >README && git add README &&
	git -c user.name=t -c user.email=t@e commit -qm init)
chown -R "$APP_USER:" "$TMP/ws/app"
chown "$CL_USER:" "$TMP/ws/home"
chmod 700 "$TMP/ws/home"
printf '[{"text": "hello", "repeat": %d}]\n' $((RUNS * 2 + 2)) >"$TMP/script.json"
CLI_BIN=$TMP/cli/$(cd "$CLI_SRC" && readlink -f .bin/claude | sed "s|^$CLI_SRC/||")
if [ "${STUB:-0}" = 1 ]; then
	CLI_BIN=$TMP/stub-claude
	printf '#!/bin/sh\necho %s\ncat >/dev/null\n' "'{\"type\":\"system\",\"subtype\":\"init\"}'" >"$CLI_BIN"
	chmod 755 "$CLI_BIN"
fi

cat >"$TMP/driver.py" <<'PY'
import json, os, pwd, statistics, subprocess, sys, time
tmp, helper, cli, user, runs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
root = tmp + "/ws/claude"
pw = pwd.getpwnam(user)
groups = os.getgrouplist(user, pw.pw_gid)
home = tmp + "/ws/home"
argv = ["claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode",
        "acceptEdits", "--no-session-persistence"]
base = os.environ["ANTHROPIC_BASE_URL"]
env = {"ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": os.environ["ANTHROPIC_API_KEY"],
       "HOME": home, "USER": user, "LOGNAME": user, "LANG": "C.UTF-8",
       "PATH": home + "/.local/bin:/usr/local/bin:/usr/bin:/bin", "DISABLE_AUTOUPDATER": "1",
       "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1",
       "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "CLAUDE_CONFIG_DIR": home + "/api",
       "GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "safe.directory",
       "GIT_CONFIG_VALUE_0": tmp + "/ws/app"}
def drop():
    os.setgroups(groups); os.setgid(pw.pw_gid); os.setuid(pw.pw_uid); os.umask(0o002)
def direct(i):
    with open(tmp + "/prompt.txt", "w") as f:
        f.write("Say hello\n")
    stdin = open(tmp + "/prompt.txt")
    t0 = time.monotonic()
    p = subprocess.Popen([cli] + argv[1:], stdin=stdin, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, env=env, cwd=tmp + "/ws/app",
                         preexec_fn=drop, start_new_session=False)
    p.stdout.readline()
    t1 = time.monotonic()
    p.stdout.read()
    p.wait()
    return t1 - t0
def via_helper(i):
    d = "%s/sessions/%d" % (root, i)
    os.makedirs(root + "/sessions", mode=0o700, exist_ok=True)
    os.mkdir(d, 0o700)
    json.dump({"argv": argv, "mode": "api_key", "timeout": 60, "dangerously_no_sandbox": True,
               "env": {"ANTHROPIC_BASE_URL": base}}, open(d + "/request.json", "w"))
    open(d + "/prompt.txt", "w").write("Say hello\n")
    ev = d + "/events.jsonl"
    t0 = time.monotonic()
    subprocess.run([helper, "session-start", "--dir", d], check=True, stdout=subprocess.DEVNULL)
    while True:
        try:
            if b"\n" in open(ev, "rb").read(65536):
                break
        except FileNotFoundError:
            pass
        time.sleep(0.0005)
    t1 = time.monotonic()
    while json.load(open(d + "/status.json"))["status"] != "finished":
        time.sleep(0.01)
    return t1 - t0
direct(0)  # warm the page cache: the CLI binary is 245 MB
D, H = [], []
for i in range(1, runs + 1):
    if i % 2:
        D.append(direct(i)); H.append(via_helper(i))
    else:
        H.append(via_helper(i)); D.append(direct(i))
ms = lambda v: "%.1f ms" % (v * 1000)
print("runs %d" % runs)
print("direct: spawn to first event, median %s (min %s, max %s)" % (ms(statistics.median(D)), ms(min(D)), ms(max(D))))
print("helper: session-start to first event, median %s (min %s, max %s)" % (ms(statistics.median(H)), ms(min(H)), ms(max(H))))
print("helper minus direct, median of the pairs: %s" % ms(statistics.median([h - d for h, d in zip(H, D)])))
PY

tests/claude/run-in-netns.sh env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin LANG=C.UTF-8 \
	HOME=/root SANDBOX_CLAUDE_ROOT="$TMP/ws/claude" SANDBOX_APP_DIR="$TMP/ws/app" \
	SANDBOX_CLAUDE_USER="$CL_USER" SANDBOX_APP_USER="$APP_USER" SANDBOX_CLAUDE_HOME="$TMP/ws/home" \
	SANDBOX_CLAUDE_BIN="$CLI_BIN" SANDBOX_BOOT_SPEC="$TMP/none" \
	ANTHROPIC_API_KEY=sk-ant-bench-0123456789abcdef \
	tests/claude/with-model-api.sh "$TMP/script.json" "$TMP/requests.jsonl" \
	bash -c 'mount --bind "$0" "$1/cli" && exec python3 "$1/driver.py" "$1" "$2" "$3" "$4" "$5"' \
	"$CLI_SRC" "$TMP" "$HELPER" "$CLI_BIN" "$CL_USER" "$RUNS"
