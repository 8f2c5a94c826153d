#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A stand-in for the CLI in bench/session_live_bench.sh: stream-json turns on stdin.

A user turn "ev" prints {"type":"bench","t":NS} five times, 5 ms apart; "ask" prints a
can_use_tool control_request; a control_response prints {"type":"bench_answered","t":NS} at
once. Turns are answered 50 ms late, so the sandbox-ctl call that sent the turn has ended and
only the path measured is at work. NS: time.time_ns() just before the write. Ends at end of
input.
"""
import json
import sys
import time

n = 0
for line in sys.stdin:
    try:
        m = json.loads(line)
    except ValueError:
        sys.exit(1)
    if m.get("type") == "user":
        n += 1
        time.sleep(0.05)
        if m["message"]["content"] == "ev":
            for i in range(5):
                sys.stdout.write(json.dumps({"type": "bench", "n": n, "i": i,
                                             "t": time.time_ns()}) + "\n")
                sys.stdout.flush()
                time.sleep(0.005)
            continue
        if m["message"]["content"] == "ask":
            out = {"type": "control_request", "request_id": "r%d" % n,
                   "request": {"subtype": "can_use_tool", "tool_name": "Bench",
                               "input": {"n": n}, "tool_use_id": "t%d" % n}}
        else:
            out = {"type": "bench", "n": n}
    elif m.get("type") == "control_response":
        out = {"type": "bench_answered", "n": n}
    else:
        continue
    out["t"] = time.time_ns()
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
