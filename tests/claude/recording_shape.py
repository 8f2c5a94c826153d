#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Checks that a session recording has the shape of the shipped examples.

    recording_shape.py FRESH.jsonl EXAMPLE.jsonl...

A recording is a session's events.jsonl (docs/sessions.md, "Recordings"): one JSON object a
line. The shape of an event is its `type` (and `subtype`) with the names and JSON types of its
top-level members; of a `control_request`, also its `request`'s members. FRESH matches when
each of its lines is a JSON object with a `type`, and, for every kind of event FRESH and an
example both have, the members every example line of that kind has are found on FRESH's lines
of that kind with the same JSON types (members may be added: a newer CLI adds fields; a
controller must ignore the ones it does not know).
An example with no line of a kind FRESH has is fine: examples cover different paths. Prints
what differs, exit 1; no example file: exit 2.
"""
import json
import sys


def kind(e):
    return "%s/%s" % (e.get("type"), e.get("subtype", ""))


def jtype(v):
    return {dict: "object", list: "array", str: "string", bool: "boolean",
            int: "number", float: "number", type(None): "null"}[type(v)]


def shapes(path, union=False):
    out, bad = {}, []
    for n, line in enumerate(open(path, encoding="utf-8"), 1):
        if not line.strip():
            continue
        try:
            e = json.loads(line)
        except ValueError as ex:
            bad.append("%s:%d: not JSON (%s)" % (path, n, ex))
            continue
        if not isinstance(e, dict) or not isinstance(e.get("type"), str):
            bad.append("%s:%d: not an object with a type" % (path, n))
            continue
        members = {k: jtype(v) for k, v in e.items()}
        if e["type"] == "control_request" and isinstance(e.get("request"), dict):
            members.update({"request." + k: jtype(v) for k, v in e["request"].items()})
        # The members every line of this kind has (union: any line has).
        k = kind(e)
        if k not in out:
            out[k] = {m: {t} for m, t in members.items()} if union else members
        elif union:
            for m, t in members.items():
                out[k].setdefault(m, set()).add(t)
        else:
            out[k] = {m: t for m, t in out[k].items() if members.get(m) == t}
    return out, bad


def main():
    if len(sys.argv) < 3:
        print(__doc__.strip().split("\n")[2])
        return 2
    fresh, bad = shapes(sys.argv[1], union=True)
    for ex in sys.argv[2:]:
        want, exbad = shapes(ex)
        bad += exbad
        for k, members in want.items():
            if k not in fresh:
                continue
            for m, t in members.items():
                if t not in fresh[k].get(m, ()):
                    bad.append("%s: %s: member %s (%s) is %s in %s" % (
                        ex, k, m, t, "/".join(sorted(fresh[k].get(m, {"missing"}))),
                        sys.argv[1]))
    common = sum(1 for ex in sys.argv[2:] for k in shapes(ex)[0] if k in fresh)
    if common == 0:
        bad.append("%s shares no kind of event with the examples" % sys.argv[1])
    for b in bad:
        print(b)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
