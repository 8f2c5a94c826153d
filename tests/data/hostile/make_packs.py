#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the hostile packs tests/unit/test_git_pack.c feeds to the pack receiver:

  delta-bomb.pack  180-odd bytes: a 64 KiB blob of zeros and one delta of 16384 copy
                   instructions (0x80: copy 0x10000 bytes from offset 0) that resolves into a
                   1 GiB blob
  count-bomb.pack  a header that declares 2^32-1 objects, then one small blob

Usage: make_packs.py DIR
"""
import hashlib
import os
import struct
import sys
import zlib


def obj_header(kind, size):
    b = [(kind << 4) | (size & 15)]
    size >>= 4
    while size:
        b[-1] |= 0x80
        b.append(size & 0x7F)
        size >>= 7
    return bytes(b)


def varint(n):
    out = bytearray()
    while True:
        c = n & 0x7F
        n >>= 7
        if n:
            out.append(c | 0x80)
        else:
            out.append(c)
            return bytes(out)


def ofs(distance):
    out = [distance & 0x7F]
    distance >>= 7
    while distance:
        distance -= 1
        out.insert(0, 0x80 | (distance & 0x7F))
        distance >>= 7
    return bytes(out)


def pack(count, body):
    data = b"PACK" + struct.pack(">II", 2, count) + body
    return data + hashlib.sha1(data).digest()


def main(out_dir):
    base = b"\0" * 65536
    first = obj_header(3, len(base)) + zlib.compress(base, 9)
    delta = varint(len(base)) + varint(1 << 30) + b"\x80" * 16384
    second = obj_header(6, len(delta)) + ofs(len(first)) + zlib.compress(delta, 9)
    with open(os.path.join(out_dir, "delta-bomb.pack"), "wb") as f:
        f.write(pack(2, first + second))
    small = obj_header(3, 5) + zlib.compress(b"hello")
    with open(os.path.join(out_dir, "count-bomb.pack"), "wb") as f:
        f.write(pack(0xFFFFFFFF, small))


if __name__ == "__main__":
    main(sys.argv[1])
