#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The controller of the VM's session test (tests/vm/init, session_vsock), inside the guest.

    session_drive.py OUT_DIR API_DIR SESSIONS_ROOT CHECKOUT -- sandbox-ctl --connect ADDR ...

Runs in the session root the guest made from the host's /usr (python3, glibc) with the daemon
already serving ADDR (vsock loopback). It starts the stand-in model API (model_api.py beside
this file) on 127.0.0.1, makes the session's credential (in memory only: sandbox-ctl gets it on
stdin), then drives one long-lived session of the real Claude Code CLI through the static
sandbox-ctl, as a controller would:

  secrets put --scope session ANTHROPIC_API_KEY      (stdin)
  session start --dangerously-no-sandbox             turn 1 "Write hello.txt"
  session events: the CLI's can_use_tool request for the Write; while it waits, the
      credential is in no process's argv and in no environment but the CLI's
  session approve: the file is written in the checkout, the turn ends in a result
  session send: turn 2 in the same CLI process (the model's second request carries turn 1)
  session events --from OFFSET: exactly the events.jsonl bytes from OFFSET
  session diff: the file; session cancel: finished, cancelled
  the credential in no file under the guest's state, checkout, logs and sandbox-ctl's output

Every sandbox-ctl call (argv, exit status, output) goes to OUT_DIR/calls.jsonl, the stand-in's
requests (which hold the credential, as the real API would see it) to API_DIR, outside the
searched trees. Prints `    session: ...` lines (the console shows them), then one line:
`RESULT ok` or `RESULT fail WHY` (the first problem). Every wait has a deadline.
"""
import json
import os
import subprocess
import sys
import time

out, api_dir, sroot, checkout = sys.argv[1:5]
ctl = sys.argv[sys.argv.index("--") + 1:]
here = os.path.dirname(os.path.abspath(__file__))
calls = open(os.path.join(out, "calls.jsonl"), "w")
T0 = time.monotonic()
why = []
# Under TCG the CLI takes tens of seconds to start and each turn several more (README.md).
TURN_SECS = int(os.environ.get("VMTEST_TURN_SECS", "240"))


def say(msg):
    print("    session: %s (%.1f s)" % (msg, time.monotonic() - T0), flush=True)


def bad(msg):
    why.append(msg)
    say("FAIL " + msg)


def run(*words, stdin=None, timeout=90):
    t = time.monotonic()
    try:
        p = subprocess.run(ctl + list(words), input=stdin, capture_output=True, timeout=timeout)
        rc, so, se = p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired:
        rc, so, se = -1, b"", b"(no answer within %d s)" % timeout
    calls.write(json.dumps({"argv": list(words), "rc": rc,
                            "ms": round((time.monotonic() - t) * 1000, 1),
                            "out": so.decode(errors="replace"),
                            "err": se.decode(errors="replace")}) + "\n")
    calls.flush()
    doc = None
    try:
        doc = json.loads(so.decode()) if so.strip() else None
    except ValueError:
        pass
    return rc, doc, se.decode(errors="replace").strip()[-300:]


def events(sid, frm=0):
    rc, doc, _ = run("session", "events", "--id", sid, "--from", str(frm))
    return doc if rc == 0 and isinstance(doc, dict) else None


def wait_event(sid, pred, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        d = events(sid)
        for e in (d or {}).get("events", []):
            if pred(e):
                return e
        time.sleep(0.5)
    return None


def results(sid):
    d = events(sid)
    return [e for e in (d or {}).get("events", []) if e.get("type") == "result"]


def wait_results(sid, n, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        r = results(sid)
        if len(r) >= n:
            return r
        time.sleep(0.5)
    return results(sid)


def status(sid):
    _rc, doc, _ = run("session", "list")
    for s in (doc or {}).get("sessions", []):
        if s.get("id") == sid:
            return s
    return {}


def requests():
    try:
        with open(os.path.join(api_dir, "requests.jsonl")) as f:
            rs = [json.loads(l) for l in f if l.strip()]
    except OSError:
        return []
    return [r for r in rs if r["method"] == "POST" and "/messages" in r["path"]
            and "count_tokens" not in r["path"]]


def diagnose(sid):
    """What a failure report needs: the session's status, the CLI's stderr, the processes."""
    d = os.path.join(sroot, "sessions", sid)
    for name, n in (("status.json", 1000), ("stderr.log", 1500), ("events.jsonl", 1500)):
        try:
            with open(os.path.join(d, name), "rb") as f:
                data = f.read()
        except OSError as e:
            data = str(e).encode()
        print("%s (%d bytes): %s" % (name, len(data), data[-n:].decode(errors="replace")))
    for pid in sorted((p for p in os.listdir("/proc") if p.isdigit()), key=int):
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")[:150]
            with open("/proc/%s/stat" % pid) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmd:
            print("process %s %s: %s" % (pid, state, cmd))


def start_api(script):
    path = os.path.join(api_dir, "script.json")
    with open(path, "w") as f:
        json.dump(script, f)
    p = subprocess.Popen(["/usr/bin/python3", os.path.join(here, "model_api.py"), "--script",
                          path, "--log", os.path.join(api_dir, "requests.jsonl"), "--port", "0"],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=open(os.path.join(api_dir, "api.err"), "w"))
    # The first line is the port, once it accepts connections (bounded by the init's timeout).
    line = p.stdout.readline().decode().strip()
    if not line.isdigit():
        p.kill()
        return None, None
    return p, int(line)


def key_hits(key):
    """The processes holding the key: in their argv, in their environment (pid, argv0)."""
    argv, env = [], []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as f:
                cmd = f.read()
            with open("/proc/%s/environ" % pid, "rb") as f:
                env_b = f.read()
        except OSError:
            continue
        name = os.path.basename(cmd.split(b"\0")[0].decode(errors="replace"))
        if key in cmd:
            argv.append("%s %s" % (pid, name))
        if key in env_b:
            env.append(name)
    return argv, env


def files_holding(key, tops):
    hits = []
    for top in tops:
        for d, _dirs, names in os.walk(top):
            for n in names:
                p = os.path.join(d, n)
                try:
                    if os.path.islink(p) or not os.path.isfile(p):
                        continue
                    with open(p, "rb") as f:
                        if key in f.read(64 << 20):
                            hits.append(p)
                except OSError:
                    pass
    return hits


def main():
    key = ("sk-ant-vm-" + os.urandom(12).hex()).encode()
    target = os.path.join(checkout, "hello.txt")
    api, port = start_api([
        {"tool_use": {"id": "toolu_vm1", "name": "Write",
                      "input": {"file_path": target, "content": "hello from the VM\n"}}},
        {"text": "Wrote hello.txt."},
        {"text": "Second turn, same process."},
    ])
    if not api:
        bad("the stand-in model API did not start: %s" %
            open(os.path.join(api_dir, "api.err")).read()[-300:])
        return
    try:
        drive(key, target, port)
    finally:
        api.terminate()
        try:
            api.wait(timeout=10)
        except subprocess.TimeoutExpired:
            api.kill()
    P = requests()
    if not P or P[0]["headers"].get("x-api-key") != key.decode():
        bad("the model API did not get the session's key as x-api-key")
    hits = files_holding(key, ["/workspace", "/var", "/run", "/tmp", "/etc", "/root", out])
    if hits:
        bad("the key is in the files %s" % " ".join(hits))
    else:
        say("the key is in no file under /workspace /var /run /tmp /etc /root")


def drive(key, target, port):
    rc, doc, err = run("--accept-new-guest-key", "hello")
    if rc != 0:
        return bad("hello over vsock: exit %d: %s" % (rc, err))
    rc, doc, err = run("secrets", "put", "--scope", "session", "ANTHROPIC_API_KEY",
                       stdin=b'{"ANTHROPIC_API_KEY": "' + key + b'"}')
    if rc != 0:
        return bad("secrets put --scope session: exit %d: %s" % (rc, err))
    env = ["--env", "ANTHROPIC_BASE_URL=http://127.0.0.1:%d" % port,
           "--env", "CLAUDE_CODE_MAX_RETRIES=1",
           # JavaScriptCore's interpreter only: under TCG its JIT costs the CLI 5 times as
           # long (every page of code it writes is translated again).
           "--env", "BUN_JSC_useJIT=0"]
    t = time.monotonic()
    rc, doc, err = run("session", "start", "--dangerously-no-sandbox", "--approval-timeout", "300",
                       "--session-timeout", "900", *env, stdin=b"Write hello.txt")
    if rc != 0 or not doc or doc.get("status") != "started":
        return bad("session start: exit %d: %s %s" % (rc, doc, err))
    sid = doc["id"]
    if doc.get("sandbox") != "unverified (--dangerously-no-sandbox)":
        bad("session start did not say the sandbox is unverified: %s" % doc)
    say("started session %s (%s)" % (sid, doc.get("sandbox")))

    init = wait_event(sid, lambda e: e.get("type") == "system" and e.get("subtype") == "init",
                      TURN_SECS)
    if not init:
        diagnose(sid)
        return bad("no system/init event from the CLI within %d s" % TURN_SECS)
    say("the CLI is up: its system/init event %.1f s after session start" %
        (time.monotonic() - t))
    req = wait_event(sid, lambda e: e.get("type") == "control_request" and
                     e.get("request", {}).get("subtype") == "can_use_tool" and
                     e["request"].get("input", {}).get("file_path") == target, TURN_SECS)
    if not req:
        diagnose(sid)
        return bad("no can_use_tool request for %s within %d s" % (target, TURN_SECS))
    say("approval request %s: %s %s" % (req["request_id"], req["request"]["tool_name"],
                                        req["request"]["input"]["file_path"]))
    if os.path.exists(target):
        bad("%s exists before the approval" % target)
    st = status(sid)
    if st.get("pending") != 1 or st.get("status") != "running":
        bad("while the request waits, session list says %s" % st)
    argv_hits, env_hits = key_hits(key)
    if argv_hits:
        bad("the key is in the argv of %s" % argv_hits)
    if len(env_hits) != 1 or not env_hits[0].startswith("claude"):
        bad("the key is in the environment of %s, expected the CLI's only" % env_hits)
    else:
        say("the key is in no argv, and in the environment of the CLI only (%s)" % env_hits[0])

    rc, doc, err = run("session", "approve", "--id", sid, "--request", req["request_id"])
    if rc != 0:
        return bad("session approve: exit %d: %s" % (rc, err))
    r = wait_results(sid, 1, TURN_SECS)
    if len(r) < 1:
        return bad("turn 1 had no result within %d s of the approval" % TURN_SECS)
    try:
        got = open(target).read()
    except OSError as e:
        got = str(e)
    if got != "hello from the VM\n":
        return bad("after the approval %s holds %r" % (target, got))
    say("approved: %s written, turn 1 ended (%s)" % (target, r[0].get("subtype")))

    before = events(sid)
    off = before["next_offset"] if before else 0
    t = time.monotonic()
    rc, doc, err = run("session", "send", "--id", sid, stdin=b"Say bye")
    if rc != 0:
        return bad("session send: exit %d: %s" % (rc, err))
    r = wait_results(sid, 2, TURN_SECS)
    if len(r) < 2:
        return bad("turn 2 had no result within %d s" % TURN_SECS)
    say("turn 2 took %.1f s to its result: %r" % (time.monotonic() - t, r[1].get("result")))
    if "Second turn" not in (r[1].get("result") or ""):
        bad("turn 2's result is %r" % r[1].get("result"))
    P = requests()
    if len(P) < 3 or "Write hello.txt" not in json.dumps(P[2]["body"]["messages"]) or \
            "Say bye" not in json.dumps(P[2]["body"]["messages"]):
        bad("the second turn's model request does not carry the first turn")
    rest = events(sid, off)
    raw = open(os.path.join(sroot, "sessions", sid, "events.jsonl"), "rb").read()
    want = [json.loads(l) for l in raw[off:].decode().split("\n") if l]
    if not rest or rest.get("offset") != off or rest["events"] != want or \
            rest.get("next_offset") != len(raw):
        bad("session events --from %d is not the events.jsonl bytes from there" % off)
    else:
        kinds = [e.get("subtype") or e.get("type") for e in rest["events"]]
        say("events --from %d: %d events (%s), next_offset %d" %
            (off, len(kinds), " ".join(kinds), rest["next_offset"]))
    E = [json.loads(l) for l in raw.decode().split("\n") if l]
    sids = set(e.get("session_id") for e in E if e.get("type") == "system" and
               e.get("subtype") == "init")
    turns = [e.get("turn") for e in E if e.get("type") == "sandbox" and e.get("subtype") == "user"]
    if len(sids) != 1 or turns != [1, 2]:
        bad("not one CLI process for both turns: init session ids %s, turns %s" % (sids, turns))
    if not any(e.get("type") == "sandbox" and e.get("subtype") == "answer" and
               e.get("behavior") == "allow" and e.get("by") == "host" for e in E):
        bad("the approval is no event (sandbox/answer allow by host)")

    rc, doc, err = run("session", "diff", "--id", sid)
    if rc != 0 or "+++ b/hello.txt" not in (doc or {}).get("diff", ""):
        bad("session diff: exit %d: %s %s" % (rc, doc, err))
    else:
        say("session diff shows hello.txt")
    t = time.monotonic()
    rc, doc, err = run("session", "cancel", "--id", sid)
    if rc != 0:
        return bad("session cancel: exit %d: %s" % (rc, err))
    end = time.monotonic() + 60
    st = {}
    while time.monotonic() < end:
        st = status(sid)
        if st.get("status") == "finished":
            break
        time.sleep(0.5)
    if st.get("status") != "finished" or not st.get("cancelled"):
        bad("after cancel, session list says %s" % st)
    else:
        say("cancelled: finished in %.1f s, exit status %s" %
            (time.monotonic() - t, st.get("exit_status")))


main()
if why:
    print("RESULT fail " + why[0], flush=True)
else:
    print("RESULT ok", flush=True)
