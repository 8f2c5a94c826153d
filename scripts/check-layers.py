#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks the source tree's structure (make test runs it; docs/hacking.md explains the rules).

1. No include cycle between modules. A module is a .c file and its .h file (a header without a
   .c file is a module of its own); module A depends on module B when a file of A includes B's
   header. Any cycle in that graph is printed and fails the check.
2. No cycle of calls between object files: with --objects, the objects of a build are read with
   nm, and file A depends on file B when A uses a symbol B defines. A header that declares
   another file's functions cannot hide a cycle from this check.
3. Exported symbols carry their file's name: every global symbol an object defines starts with
   the file's name and "_" (or is the name itself). Prints the count; --objects DIR checks the
   objects of a build and fails on any symbol without its prefix.

Usage: scripts/check-layers.py [--objects BUILD_DIR]
"""
import os
import re
import subprocess
import sys

ROOTS = ["common", "guest", "host"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def sources():
    out = []
    for root in ROOTS:
        for d, _, files in os.walk(root):
            out += [os.path.join(d, f) for f in files if f.endswith((".c", ".h"))]
    return sorted(out)


def module_of(path):
    return os.path.splitext(path)[0]


def include_graph(files):
    by_header = {}
    for f in files:
        if f.endswith(".h"):
            by_header.setdefault(os.path.basename(f), []).append(f)
    dup = {h: p for h, p in by_header.items() if len(p) > 1}
    if dup:
        for h, p in dup.items():
            print(f"check-layers: header name {h} is used twice: {', '.join(p)}")
        sys.exit(1)
    graph = {module_of(f): set() for f in files}
    for f in files:
        with open(f, encoding="utf-8") as fh:
            for name in INCLUDE.findall(fh.read()):
                target = by_header.get(os.path.basename(name))
                if target and module_of(target[0]) != module_of(f):
                    graph[module_of(f)].add(module_of(target[0]))
    return graph


def cycles(graph):
    """Strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def unprefixed(build):
    bad, total = [], 0
    for d, _, files in os.walk(build):
        rel = os.path.relpath(d, build)
        if rel.split(os.sep)[0] not in ROOTS:
            continue
        for f in sorted(files):
            if not f.endswith(".o"):
                continue
            stem = f[:-2]
            nm = subprocess.run(["nm", "--defined-only", "-g", os.path.join(d, f)],
                                capture_output=True, text=True, check=True).stdout
            for line in nm.splitlines():
                parts = line.split()
                if len(parts) < 3 or parts[2] == "main":
                    continue
                total += 1
                sym = parts[2]
                if sym != stem and not sym.startswith(stem + "_"):
                    bad.append(f"{os.path.join(rel, f)}: {sym}")
    return bad, total


def nm_objects(build):
    objs = []
    for d, _, files in os.walk(build):
        rel = os.path.relpath(d, build)
        if rel.split(os.sep)[0] not in ROOTS:
            continue
        objs += [os.path.join(d, f) for f in sorted(files) if f.endswith(".o")]
    defined, used = {}, {}
    for o in objs:
        nm = subprocess.run(["nm", o], capture_output=True, text=True, check=True).stdout
        name = os.path.relpath(o, build)[:-2]
        used[name] = set()
        for line in nm.splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == "U":
                used[name].add(parts[1])
            elif len(parts) == 3 and parts[1] in "TDBRVWGS" and parts[2] != "main":
                defined[parts[2]] = name
    graph = {o: set() for o in used}
    for o, syms in used.items():
        for sym in syms:
            target = defined.get(sym)
            if target and target != o:
                graph[o].add(target)
    return graph


def main():
    files = sources()
    found = cycles(include_graph(files))
    for comp in found:
        print("check-layers: include cycle between " + " ".join(comp))
    print(f"check-layers: {len(files)} files, {len(found)} include cycles")
    failed = bool(found)
    if len(sys.argv) == 3 and sys.argv[1] == "--objects":
        calls = cycles(nm_objects(sys.argv[2]))
        for comp in calls:
            print("check-layers: call cycle between " + " ".join(comp))
        print(f"check-layers: {len(calls)} call cycles between object files")
        failed = failed or bool(calls)
        bad, total = unprefixed(sys.argv[2])
        for b in bad:
            print(f"check-layers: exported without its file's name: {b}")
        print(f"check-layers: {total} exported symbols, {len(bad)} without their file's name")
        failed = failed or bool(bad)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
