#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Regenerate README.md's figures table from what the programs in bench/ printed.

    scripts/figures.py README.md OUTPUT...

Each OUTPUT is one bench program's output; its first line "bench: NAME" names it (the command,
as bench/figures.sh writes it), else the file's name does. A bench prints each of its figures
as one line

    figure: WHAT | FIGURE | GOAL

(GOAL may be empty). The table sits between the lines "<!-- figures:begin -->" and
"<!-- figures:end -->" with the columns what, figure, goal and the bench that measured it. The
rows of every bench given here are replaced by what it printed, in its order, where its first
row was (a new bench's rows go last); the rows of benches not given stay as they are, so a run
of some benches updates their figures only. A bench given without any figure line fails: a
bench that stopped half way must not erase its rows.
"""
import os
import re
import sys

BEGIN = "<!-- figures:begin -->"
END = "<!-- figures:end -->"
HEADER = ["| what | figure | goal | measured by |", "| --- | --- | --- | --- |"]
FIGURE = re.compile(r"^\s*figure:\s*(.*?)\s*\|\s*(.*?)\s*\|\s*(.*?)\s*$")


def cell(text):
    return text.replace("|", "\\|")


def bench_rows(path):
    name = os.path.basename(path)
    name = name[:-4] if name.endswith(".out") else name
    rows = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for i, line in enumerate(f):
            if i == 0 and line.startswith("bench: "):
                name = line[len("bench: "):].strip()
                continue
            m = FIGURE.match(line)
            if m:
                what, fig, goal = m.groups()
                rows.append("| %s | %s | %s | `%s` |" % (cell(what), cell(fig), cell(goal), name))
    return name, rows


def row_bench(row):
    m = re.search(r"\| `([^`]+)` \|\s*$", row)
    return m.group(1) if m else None


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    readme = argv[1]
    text = open(readme, encoding="utf-8").read()
    if BEGIN not in text or END not in text:
        sys.stderr.write("figures.py: %s has no %s ... %s block\n" % (readme, BEGIN, END))
        return 1
    head, rest = text.split(BEGIN, 1)
    block, tail = rest.split(END, 1)
    old = [l for l in block.strip("\n").split("\n") if l.startswith("|")][2:]
    new = {}
    for path in argv[2:]:
        name, rows = bench_rows(path)
        if not rows:
            sys.stderr.write("figures.py: %s printed no figure line; its rows stay\n" % path)
            return 1
        new[name] = rows
    out, placed = [], set()
    for row in old:
        b = row_bench(row)
        if b in new:
            if b not in placed:
                out.extend(new[b])
                placed.add(b)
        else:
            out.append(row)
    for b, rows in new.items():
        if b not in placed:
            out.extend(rows)
    table = "\n".join(HEADER + out)
    with open(readme + ".tmp", "w", encoding="utf-8") as f:
        f.write(head + BEGIN + "\n" + table + "\n" + END + tail)
    os.replace(readme + ".tmp", readme)
    print("figures.py: %s: %d rows from %s" % (readme, sum(len(r) for r in new.values()),
                                                 ", ".join(sorted(new))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
