#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
#
# What each library and object takes in a static binary, from the GNU ld link map that
# `make static` writes next to it (build-static/sandbox-agent.map, sandbox-ctl.map).
#
#   packaging/static/size-report.py build-static/sandbox-agent.map          bytes per archive
#   packaging/static/size-report.py build-static/sandbox-agent.map libgit2  objects of one
#
# Counts the input sections the linker kept (after --gc-sections) that take room in the file:
# code, read-only data, data; not .bss, not debug sections. Merged strings are counted in the
# object that brought them, so the sum is a little above the binary's `size`.
import collections
import re
import sys

LTO_NAME = "our-objects-lto"  # guest or host, common and main, optimized together
SKIP = (".debug", ".comment", ".note", ".bss", ".tbss", ".gnu.warning")


def kept_sections(lines):
    start = False
    pending = None
    for line in lines:
        if line.startswith("Linker script and memory map"):
            start = True
            continue
        if not start or line.startswith("/DISCARD/"):
            continue
        if pending:
            m = re.match(r"^\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)$", line)
            if m:
                yield pending, int(m.group(1), 16), m.group(2)
            pending = None
            continue
        m = re.match(r"^ (\.\S+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+(\S+)$", line)
        if m:
            yield m.group(1), int(m.group(2), 16), m.group(3)
            continue
        m = re.match(r"^ (\.\S+)$", line)
        if m:
            pending = m.group(1)


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: size-report.py MAP [ARCHIVE]", file=sys.stderr)
        return 2
    try:
        with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
            lines = f.read().split("\n")
    except OSError as e:
        print(f"size-report.py: cannot read {sys.argv[1]}: {e.strerror}", file=sys.stderr)
        return 1
    only = sys.argv[2] if len(sys.argv) == 3 else None
    total = collections.Counter()
    for sec, size, path in kept_sections(lines):
        if sec.startswith(SKIP) or size == 0:
            continue
        name = path.split("/")[-1]
        # Our objects are optimized together at the link (-flto): the linker sees gcc's
        # partitions of them (cc*.ltrans0.ltrans.o, ...), not our archives.
        if re.search(r"\.ltrans\d*\.ltrans\.o$", name):
            name = LTO_NAME
        if only:
            if only not in name:
                continue
        else:
            name = re.sub(r"\(.*\)$", "", name)
        total[name] += size
    for name, size in total.most_common():
        print(f"{size:9d}  {name}")
    print(f"{sum(total.values()):9d}  total")
    return 0


if __name__ == "__main__":
    sys.exit(main())
