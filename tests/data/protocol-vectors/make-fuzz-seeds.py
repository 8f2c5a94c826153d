#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Write the seed corpora of tests/fuzz/fuzz_frame.c and tests/fuzz/fuzz_handshake.c from the
test vectors (v1.json, and v1-aes256gcm.json for the cipher offer), so the fuzzers start from
real handshakes and sessions.

    python3 tests/data/protocol-vectors/make-fuzz-seeds.py
"""
import hashlib
import json
import struct
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent.parent
MARKER = b"\xff\xffsandbox-chan\r\n"

v = json.loads((HERE / "v1.json").read_text())
x = lambda k: bytes.fromhex(v[k])
host_sends, guest_sends = x("host_sends"), x("guest_sends")
host_frames = [bytes.fromhex(m["frame"]) for m in v["messages"] if m["from"] == "host"]
guest_frames = [bytes.fromhex(m["frame"]) for m in v["messages"] if m["from"] == "guest"]
plaintexts = [bytes.fromhex(m["plaintext"]) for m in v["messages"]]


def frame(body):
    return struct.pack(">I", len(body)) + body


def split(wire):
    """marker + frames -> list of frames"""
    assert wire.startswith(MARKER)
    out, off = [], len(MARKER)
    while off < len(wire):
        n = 4 + struct.unpack(">I", wire[off:off + 4])[0]
        out.append(wire[off:off + n])
        off += n
    return out


ch, ha = split(host_sends)
sh, ga = split(guest_sends)
ch_hash = hashlib.blake2b(ch, digest_size=32).digest()
e_h = ch[-32:]

aes = json.loads((HERE / "v1-aes256gcm.json").read_text())
aes_host_sends, aes_guest_sends = bytes.fromhex(aes["host_sends"]), bytes.fromhex(aes["guest_sends"])
aes_host_frames = [bytes.fromhex(m["frame"]) for m in aes["messages"] if m["from"] == "host"]
aes_guest_frames = [bytes.fromhex(m["frame"]) for m in aes["messages"] if m["from"] == "guest"]
aes_ch = split(aes_host_sends)[0]

# The first byte: bit 0 the host's side, bit 1 a host that offers this machine's ciphers
# (AES-256-GCM first where it has AES-NI, as in v1-aes256gcm.json) rather than ChaCha20 alone.
GUEST, HOST, HOST_OFFERING = b"\x00", b"\x01", b"\x03"
handshake = {
    "guest-handshake": GUEST + host_sends,
    "guest-session": GUEST + host_sends + b"".join(host_frames),
    "guest-replayed-frame": GUEST + host_sends + host_frames[0] + host_frames[1] + host_frames[1],
    "guest-reordered": GUEST + host_sends + host_frames[1] + host_frames[0],
    "guest-garbage-first": GUEST + b"login: \xff\xfe garbage\r\n" + host_sends,
    "guest-hello-only": GUEST + MARKER + ch,
    "guest-no-common-version": GUEST + MARKER + frame(b"\x01SBXC\x02\x00\x02\x00\x03" + e_h),
    "guest-short-hello": GUEST + MARKER + frame(b"\x01SBXC\x01\x00\x01"),
    "guest-stale-then-fresh": GUEST + MARKER + ch + ha[:40] + host_sends,
    "host-handshake": HOST + guest_sends + b"".join(guest_frames),
    "host-refused": HOST + MARKER + frame(b"\x05" + ch_hash + b"\x02\x01\x00\x01"),
    "host-bad-signature": HOST + guest_sends[:-1] + bytes([guest_sends[-1] ^ 1]),
    "guest-aes-session": GUEST + aes_host_sends + b"".join(aes_host_frames),
    "guest-aes-bad-offer": GUEST + MARKER + frame(aes_ch[4:-3] + b"\x05"),
    "host-aes-session": HOST_OFFERING + aes_guest_sends + b"".join(aes_guest_frames),
}

session_wire = b"".join(host_frames)
frames = {
    # mode byte: bit 0 resync, bit 1 session limit, bit 2 decode messages, bits 3.. piece size
    "resync-handshake": bytes([0x01 | 0x18]) + host_sends,
    "strict-session": bytes([0x02]) + session_wire,
    "strict-session-pieces": bytes([0x02 | 0x38]) + session_wire + guest_frames[0],
    "resync-garbage": bytes([0x01]) + b"\x00\x01garbage\xff\xff" + MARKER + frame(b"hello"),
    "strict-oversized": bytes([0x02]) + b"\x7f\xff\xff\xff" + b"x" * 16,
    "strict-zero": bytes([0x00]) + b"\x00\x00\x00\x00",
    "marker-in-body": bytes([0x03]) + frame(b"x" * 40)[:20] + MARKER + frame(b"next"),
    "repeated-ff": bytes([0x01]) + b"\xff\xff\xff" + MARKER[:-1] + b"\xff" + MARKER + frame(b"a"),
    "messages": bytes([0x06]) + b"".join(frame(p) for p in plaintexts),
    "message-bad-json": bytes([0x06]) + frame(struct.pack(">HHII", 1, 0, 0, 5) + b"{\"a\":"),
}

for name, corpus in (("handshake", handshake), ("frame", frames)):
    d = ROOT / "tests" / "fuzz" / "corpus" / name
    d.mkdir(parents=True, exist_ok=True)
    for f, data in corpus.items():
        (d / f).write_bytes(data)
    print(f"{d}: {len(corpus)} seeds")
