#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Drives one long-lived session through sandbox-ctl, as a controller would.

    drive_session.py --out DIR -- sandbox-ctl --connect ADDR [GLOBAL OPTIONS...]

Runs inside the test's network namespace (tests/integration/test_session_live.sh) with the
daemon and the stand-in model API. Every sandbox-ctl call's stdout, stderr and exit code go to
DIR/calls.jsonl; the facts the test asserts on go to DIR/facts.json. The model's script
(written by the test) answers the turns below in this order:

  1 "Say hello"            text                          (two turns in one process)
  2 "Write a.txt"          Write a.txt -> approved       (tool runs, file written)
  3 "Write b.txt"          Write b.txt -> denied         (not written, the model goes on)
  4 "Write c.txt"          Write c.txt -> denied+interrupt (turn ends in error)
  5 "Say bye"              text                          (the process still takes turns)
  6 "Write d.txt"          Write d.txt, nobody answers; the daemon restarts ($RESTART);
                           the controller reconnects: still pending; after
                           approval_timeout: denied
  7 "Be slow"              a 30 s reply -> session cancel
"""
import json
import os
import subprocess
import sys
import time

args = sys.argv[1:]
out = args[args.index("--out") + 1]
ctl = args[args.index("--") + 1:]
facts = {}
calls = open(os.path.join(out, "calls.jsonl"), "w")


def run(*words, stdin=None, timeout=60):
    t = time.monotonic()
    p = subprocess.run(ctl + list(words), input=stdin, capture_output=True, timeout=timeout)
    calls.write(json.dumps({"argv": list(words), "rc": p.returncode,
                            "ms": round((time.monotonic() - t) * 1000, 1),
                            "out": p.stdout.decode(errors="replace"),
                            "err": p.stderr.decode(errors="replace")}) + "\n")
    calls.flush()
    doc = None
    try:
        doc = json.loads(p.stdout.decode()) if p.stdout.strip() else None
    except ValueError:
        pass
    return p.returncode, doc, p


def events(sid, frm=0):
    rc, doc, _ = run("session", "events", "--id", sid, "--from", str(frm))
    return doc if rc == 0 else None


def wait_for(sid, pred, secs=30):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        d = events(sid)
        if d:
            for e in d["events"]:
                if pred(e):
                    return e, d
        time.sleep(0.1)
    return None, events(sid)


def results(d):
    return [e for e in d["events"] if e.get("type") == "result"] if d else []


def wait_results(sid, n, secs=40):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        d = events(sid)
        if len(results(d)) >= n:
            return d
        time.sleep(0.1)
    return events(sid)


def pending_request(sid, tool_file):
    def pred(e):
        return (e.get("type") == "control_request" and
                e["request"].get("input", {}).get("file_path", "").endswith(tool_file))
    e, _ = wait_for(sid, pred)
    return e


def send(sid, text):
    return run("session", "send", "--id", sid, stdin=text.encode())[0]


def status(sid):
    rc, doc, _ = run("session", "list")
    for s in (doc or {}).get("sessions", []):
        if s["id"] == sid:
            return s
    return {}


env = ["--env", "ANTHROPIC_BASE_URL=" + os.environ["ANTHROPIC_BASE_URL"],
       "--env", "CLAUDE_CODE_MAX_RETRIES=1"]
# This machine is no verified sandbox: a start refuses, until told to go on without one.
rc0, _doc0, p0 = run("session", "start", *env, stdin=b"Say hello")
facts["unverified_start"] = {"rc": rc0, "err": p0.stderr.decode()[-400:]}
env += ["--dangerously-no-sandbox"]
rc, doc, p = run("session", "start", "--approval-timeout", "4", "--session-timeout", "300",
                 *env, stdin=b"Say hello")
facts["start"] = {"rc": rc, "doc": doc}
if rc != 0:
    json.dump(facts, open(os.path.join(out, "facts.json"), "w"))
    sys.exit(1)
sid = doc["id"]
facts["id"] = sid
# A second session while this one runs: refused.
rc2, doc2, _ = run("session", "start", *env, stdin=b"Say hello again")
facts["second_start"] = {"rc": rc2, "err": _.stderr.decode()[-400:]}

d = wait_results(sid, 1)
facts["turn1_results"] = len(results(d))
facts["status_running"] = status(sid)
send(sid, "Write a.txt")
e = pending_request(sid, "a.txt")
facts["a_request"] = e
if e:
    st = status(sid)
    facts["a_pending_status"] = st
    t0 = time.monotonic()
    rc, doc, _ = run("session", "approve", "--id", sid, "--request", e["request_id"])
    facts["a_approve"] = {"rc": rc, "doc": doc}
    # Answering the same request twice: refused, nothing sent to the CLI.
    rc, doc, _ = run("session", "approve", "--id", sid, "--request", e["request_id"])
    facts["a_approve_again"] = {"rc": rc, "err": _.stderr.decode()[-300:]}
d = wait_results(sid, 2)
facts["turn2_results"] = len(results(d))

send(sid, "Write b.txt")
e = pending_request(sid, "b.txt")
if e:
    rc, doc, _ = run("session", "deny", "--id", sid, "--request", e["request_id"],
                     "--message", "not b")
    facts["b_deny"] = {"rc": rc}
d = wait_results(sid, 3)
facts["turn3_results"] = len(results(d))

send(sid, "Write c.txt")
e = pending_request(sid, "c.txt")
if e:
    rc, doc, _ = run("session", "deny", "--id", sid, "--request", e["request_id"], "--interrupt")
    facts["c_deny"] = {"rc": rc}
d = wait_results(sid, 4)
facts["turn4_result"] = results(d)[-1] if len(results(d)) >= 4 else None

send(sid, "Say bye")
d = wait_results(sid, 5)
facts["turn5_result"] = results(d)[-1] if len(results(d)) >= 5 else None

# Turn 6: the request is left unanswered; we read the events from an offset as a controller
# that reconnects does, in pieces, while the turn goes on.
before = events(sid)
off = before["next_offset"] if before else 0
facts["offset_before_6"] = off
pieces = []
send(sid, "Write d.txt")
e = pending_request(sid, "d.txt")
facts["d_request"] = e
# The daemon restarts while the request is pending: the supervisor holds the CLI and its
# stdin, and the new daemon reaches it through the control socket.
if os.environ.get("RESTART"):
    facts["restart_rc"] = subprocess.run(["bash", os.environ["RESTART"]]).returncode
cur = off
for _i in range(3):
    dd = events(sid, cur)
    if dd:
        pieces.append(dd)
        cur = dd["next_offset"]
    time.sleep(0.3)
st = status(sid)
facts["d_pending_after_reconnect"] = st.get("pending")
# While the CLI runs: no process holds the credential in its argv; only the CLI has it in its
# environment (not the daemon, not the supervisor).
key = open(os.environ["KEYFILE"]).read().encode()
argv_hits, env_hits = [], []
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        cmd = open("/proc/%s/cmdline" % pid, "rb").read()
        env_b = open("/proc/%s/environ" % pid, "rb").read()
    except OSError:
        continue
    if key in cmd:
        argv_hits.append(cmd.decode(errors="replace"))
    if key in env_b:
        env_hits.append(cmd.split(b"\0")[0].decode(errors="replace"))
facts["argv_hits"] = argv_hits
facts["env_hits"] = env_hits
# The timeout (4 s) denies it; the model then answers the denial.
d = wait_results(sid, 6, secs=20)
facts["turn6_results"] = len(results(d))
dd = events(sid, cur)
if dd:
    pieces.append(dd)
    cur = dd["next_offset"]
facts["pieces"] = [{"offset": p["offset"], "next_offset": p["next_offset"],
                    "n": len(p["events"])} for p in pieces]
facts["pieces_events"] = [e for p in pieces for e in p["events"]]

# A follower from an offset, with a policy, over the same daemon: it ends when the session
# does (after the cancel below).
follower = subprocess.Popen(ctl + ["session", "events", "--id", sid, "--from", str(off),
                                   "--follow", "--deny-all"],
                            stdout=open(os.path.join(out, "follow.jsonl"), "w"),
                            stderr=open(os.path.join(out, "follow.err"), "w"))
send(sid, "Be slow")
time.sleep(1.5)
rc, doc, _ = run("session", "diff", "--id", sid)
facts["diff"] = {"rc": rc, "doc": doc}
t0 = time.monotonic()
rc, doc, _ = run("session", "cancel", "--id", sid)
facts["cancel"] = {"rc": rc, "doc": doc}
end = time.monotonic() + 20
while time.monotonic() < end and status(sid).get("status") != "finished":
    time.sleep(0.1)
facts["cancel_ms"] = round((time.monotonic() - t0) * 1000)
facts["final_status"] = status(sid)
try:
    follower.wait(timeout=10)
except subprocess.TimeoutExpired:
    follower.kill()
facts["follower_rc"] = follower.returncode
rc, doc, _ = run("session", "send", "--id", sid, stdin=b"too late")
facts["send_after_end"] = {"rc": rc, "err": _.stderr.decode()[-300:]}
rc, doc, _ = run("session", "events", "--id", sid)
facts["all_events"] = doc

# A second session, started and followed by one call with an --approve policy: the policy
# answers the Write, the turn ends; an interrupt ends the follower, a cancel the session.
import signal
fol = open(os.path.join(out, "start-follow.jsonl"), "w")
t0 = time.monotonic()
starter = subprocess.Popen(ctl + ["session", "start", "--follow", "--approve", "Write",
                                  "--approve", "Edit"] + env,
                           stdin=subprocess.PIPE, stdout=fol,
                           stderr=open(os.path.join(out, "start-follow.err"), "w"))
starter.stdin.write(b"Write e.txt")
starter.stdin.close()
end = time.monotonic() + 40
while time.monotonic() < end and starter.poll() is None:
    lines = [json.loads(l) for l in open(os.path.join(out, "start-follow.jsonl")) if l.strip()]
    if any(e.get("type") == "result" for e in lines):
        break
    time.sleep(0.1)
facts["start_follow_ms"] = round((time.monotonic() - t0) * 1000)
starter.send_signal(signal.SIGINT)
try:
    starter.wait(timeout=10)
except subprocess.TimeoutExpired:
    starter.kill()
facts["start_follow_rc"] = starter.returncode

# A person at a terminal: the follower asks there (the tool, its input), "y" allows.
import fcntl
import pty
import termios
before2 = events("2")
master, slave = pty.openpty()


def ctty():
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


asker = subprocess.Popen(ctl + ["session", "events", "--id", "2", "--from",
                                str(before2["next_offset"] if before2 else 0), "--follow"],
                         stdin=slave, stdout=open(os.path.join(out, "tty-follow.jsonl"), "w"),
                         stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=ctty)
os.close(slave)
send("2", "Write f.txt")
seen = b""
end = time.monotonic() + 30
while time.monotonic() < end and b"Allow?" not in seen:
    import select
    r, _w, _x = select.select([master], [], [], 0.5)
    if r:
        try:
            seen += os.read(master, 4096)
        except OSError:
            break
facts["tty_prompt"] = seen.decode(errors="replace")
os.write(master, b"y\n")
end = time.monotonic() + 30
while time.monotonic() < end:
    lines = [json.loads(l) for l in open(os.path.join(out, "tty-follow.jsonl")) if l.strip()]
    if any(e.get("type") == "result" for e in lines):
        break
    time.sleep(0.1)
asker.send_signal(signal.SIGINT)
try:
    asker.wait(timeout=10)
except subprocess.TimeoutExpired:
    asker.kill()
facts["tty_rc"] = asker.returncode
os.close(master)
rc, doc, _ = run("session", "cancel", "--id", "2")
facts["cancel2"] = {"rc": rc, "doc": doc}
end = time.monotonic() + 20
while time.monotonic() < end and status("2").get("status") != "finished":
    time.sleep(0.1)
facts["final_status2"] = status("2")
json.dump(facts, open(os.path.join(out, "facts.json"), "w"), indent=1)
