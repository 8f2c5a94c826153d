#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Drives one long-lived Claude Code process over its stream-json stdin/stdout.

    drive_stream.py --turns TURNS.json --out DIR [--timeout SECONDS] -- claude ARGS...

ARGS are the CLI's, typically `--print --input-format stream-json --output-format stream-json
--verbose --permission-prompt-tool stdio`. TURNS is a JSON list, one entry per turn:
  {"prompt": "...",                       the user message of the turn
   "permission": "allow" | "deny",        the answer to each can_use_tool request (default allow)
   "message": "...",                      a deny's message
   "interrupt": true,                     a deny that also ends the turn
   "bare_allow": true}                    allow without echoing the input as updatedInput
Each turn writes {"type":"user","message":{"role":"user","content":PROMPT}} as one stdin line
and reads events until that turn's `result`. A `control_request` with subtype `can_use_tool`
is answered on stdin with a `control_response` ({"behavior":"allow","updatedInput":<the
request's input>} or {"behavior":"deny","message":...}). After the last turn stdin is closed
and the process is waited for (it exits 0 when idle at EOF).

In DIR: events.jsonl (every stdout line, in order), turn-N.jsonl (the lines of turn N, from 1),
stderr.log, and summary.json, also printed on stdout:
  {"exit": CODE, "init_seconds": first system/init after the start,
   "turns": [{"seconds": write to result, "result": <the result event>,
              "control_requests": [...], "answers": [...]}], "error": null or a reason}
Exit 0 when every turn got a result and the process exited, else 1. Standard library only.
"""

import argparse
import json
import os
import queue
import subprocess
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per turn")
    ap.add_argument("argv", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    argv = a.argv[1:] if a.argv[:1] == ["--"] else a.argv
    if not argv:
        ap.error("no command after --")
    with open(a.turns, encoding="utf-8") as f:
        turns = json.load(f)
    os.makedirs(a.out, exist_ok=True)

    start = time.monotonic()
    err = open(os.path.join(a.out, "stderr.log"), "wb")
    proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    lines = queue.Queue()

    def reader():
        for raw in proc.stdout:
            lines.put((time.monotonic(), raw.decode("utf-8", "replace").rstrip("\n")))
        lines.put((time.monotonic(), None))

    threading.Thread(target=reader, daemon=True).start()
    allf = open(os.path.join(a.out, "events.jsonl"), "w", encoding="utf-8")
    summary = {"exit": None, "init_seconds": None, "turns": [], "error": None}
    eof = False

    def send(obj):
        proc.stdin.write((json.dumps(obj) + "\n").encode())
        proc.stdin.flush()

    for n, turn in enumerate(turns, 1):
        tf = open(os.path.join(a.out, "turn-%d.jsonl" % n), "w", encoding="utf-8")
        rec = {"seconds": None, "result": None, "control_requests": [], "answers": []}
        summary["turns"].append(rec)
        t0 = time.monotonic()
        try:
            send({"type": "user", "message": {"role": "user", "content": turn["prompt"]}})
        except BrokenPipeError:
            summary["error"] = "the process closed stdin before turn %d" % n
            break
        deadline = t0 + a.timeout
        while rec["result"] is None:
            try:
                when, line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                summary["error"] = "turn %d: no result within %.0f s" % (n, a.timeout)
                break
            if line is None:
                eof = True
                summary["error"] = "turn %d: stdout closed before the result" % n
                break
            allf.write(line + "\n")
            allf.flush()
            tf.write(line + "\n")
            tf.flush()
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            if not isinstance(ev, dict):
                continue
            kind = ev.get("type")
            if kind == "system" and ev.get("subtype") == "init" and summary["init_seconds"] is None:
                summary["init_seconds"] = round(when - start, 3)
            elif kind == "control_request":
                req = ev.get("request") or {}
                rec["control_requests"].append(ev)
                if req.get("subtype") == "can_use_tool":
                    if turn.get("permission", "allow") == "allow":
                        inner = {"behavior": "allow"}
                        if not turn.get("bare_allow"):
                            inner["updatedInput"] = req.get("input", {})
                    else:
                        inner = {"behavior": "deny", "message": turn.get("message", "denied")}
                        if turn.get("interrupt"):
                            inner["interrupt"] = True
                    resp = {"subtype": "success", "request_id": ev.get("request_id"),
                            "response": inner}
                else:
                    resp = {"subtype": "error", "request_id": ev.get("request_id"),
                            "error": "unsupported control request: %s" % req.get("subtype")}
                answer = {"type": "control_response", "response": resp}
                rec["answers"].append(answer)
                try:
                    send(answer)
                except BrokenPipeError:
                    pass
            elif kind == "result":
                rec["result"] = ev
                rec["seconds"] = round(when - t0, 3)
        tf.close()
        if summary["error"]:
            break

    try:
        proc.stdin.close()
    except BrokenPipeError:
        pass
    try:
        summary["exit"] = proc.wait(timeout=30 if not summary["error"] else 5)
    except subprocess.TimeoutExpired:
        proc.terminate()
        try:
            summary["exit"] = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            summary["exit"] = proc.wait()
        summary["error"] = summary["error"] or "the process did not exit at EOF"
    # Whatever it printed after the last result.
    while not eof:
        try:
            _, line = lines.get(timeout=2)
        except queue.Empty:
            break
        if line is None:
            break
        allf.write(line + "\n")
    allf.close()
    err.close()
    with open(os.path.join(a.out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1)
    print(json.dumps(summary))
    ok = summary["error"] is None and summary["exit"] == 0 and \
        all(t["result"] is not None for t in summary["turns"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
