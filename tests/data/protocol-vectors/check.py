#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Check v1.json (ChaCha20-Poly1305) and v1-aes256gcm.json (AES-256-GCM offered and chosen)
against docs/protocol.md with an implementation written from the document alone: Python's
hashlib (BLAKE2b, SHA-256) and the `cryptography` package (Ed25519, X25519, ChaCha20-Poly1305,
AES-GCM; Debian: python3-cryptography). Every handshake frame and every message frame is
rebuilt from the keys and compared byte for byte.

    python3 tests/data/protocol-vectors/check.py [FILE.json ...]
"""
import base64
import hashlib
import json
import struct
import sys
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, ChaCha20Poly1305
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

MARKER = b"\xff\xffsandbox-chan\r\n"
MAGIC = b"SBXC"


def raw_public(key):
    return key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw)


def frame(body):
    return struct.pack(">I", len(body)) + body


def h(*parts, key=b""):
    b = hashlib.blake2b(digest_size=32, key=key)
    for p in parts:
        b.update(p)
    return b.digest()


def check(what, got, want):
    if got != want:
        sys.exit(f"MISMATCH {what}:\n  document: {got.hex() if isinstance(got, bytes) else got}"
                 f"\n  vectors:  {want.hex() if isinstance(want, bytes) else want}")
    print(f"ok  {what}")


# The ciphers (section 4.7): id, name, AEAD.
CIPHERS = {1: ("chacha20-poly1305", ChaCha20Poly1305), 2: ("aes256-gcm", AESGCM)}


def main():
    paths = [Path(p) for p in sys.argv[1:]] or \
        [Path(__file__).with_name(n) for n in ("v1.json", "v1-aes256gcm.json")]
    for path in paths:
        print(f"== {path.name}")
        check_file(path)


def check_file(path):
    v = json.loads(path.read_text())
    x = lambda k: bytes.fromhex(v[k])

    host = Ed25519PrivateKey.from_private_bytes(x("host_identity_seed"))
    guest = Ed25519PrivateKey.from_private_bytes(x("guest_identity_seed"))
    s_h, s_g = raw_public(host), raw_public(guest)
    check("host identity", s_h, x("host_identity_public"))
    check("guest identity", s_g, x("guest_identity_public"))
    # OpenSSH's wire form of a key: string "ssh-ed25519", string key.
    blob = lambda pk: struct.pack(">I", 11) + b"ssh-ed25519" + struct.pack(">I", 32) + pk
    check("public line", "ssh-ed25519 " + base64.b64encode(blob(s_h)).decode() + " host",
          v["host_public_line"])
    fp = lambda pk: "SHA256:" + base64.b64encode(hashlib.sha256(blob(pk)).digest()).decode().rstrip("=")
    check("host fingerprint", fp(s_h), v["host_fingerprint"])
    check("guest fingerprint", fp(s_g), v["guest_fingerprint"])
    check("marker", MARKER, x("marker"))

    eh = X25519PrivateKey.from_private_bytes(x("host_ephemeral_secret"))
    eg = X25519PrivateKey.from_private_bytes(x("guest_ephemeral_secret"))
    e_h, e_g = raw_public(eh), raw_public(eg)

    # The four handshake messages, built from the document. A host that offers AES-256-GCM
    # sends the offer extension (01, length, ids), and the guest answers with its choice.
    cipher = next(i for i, (name, _) in CIPHERS.items() if name == v["cipher"])
    offer = b"\x01\x02\x02\x01" if cipher == 2 else b""
    choice = b"\x01\x01" + bytes([cipher]) if offer else b""
    versions = b"\x01" + struct.pack(">H", 1)
    ch = frame(b"\x01" + MAGIC + versions + e_h + offer)
    sh = frame(b"\x02" + MAGIC + h(ch) + struct.pack(">H", 1) + versions + e_g + s_g + choice)
    ha_prefix = struct.pack(">I", 97) + b"\x03" + s_h
    th_h = h(ch, sh, ha_prefix)
    ha = ha_prefix + host.sign(b"sandbox-channel v1 host auth" + th_h)
    ga_prefix = struct.pack(">I", 65) + b"\x04"
    th_g = h(ch, sh, ha, ga_prefix)
    ga = ga_prefix + guest.sign(b"sandbox-channel v1 guest auth" + th_g)
    check("host sends: marker, CLIENT_HELLO, HOST_AUTH", MARKER + ch + ha, x("host_sends"))
    check("guest sends: marker, SERVER_HELLO, GUEST_AUTH", MARKER + sh + ga, x("guest_sends"))

    sid = h(ch, sh, ha, ga)
    check("session id", sid, x("session_id"))
    dh = eh.exchange(X25519PrivateKey.from_private_bytes(x("guest_ephemeral_secret")).public_key())
    check("X25519 both ways", dh, eg.exchange(eh.public_key()))
    k_h2g = h(b"sandbox-channel v1 host->guest", sid, key=dh)
    k_g2h = h(b"sandbox-channel v1 guest->host", sid, key=dh)
    check("key host->guest", k_h2g, x("key_host_to_guest"))
    check("key guest->host", k_g2h, x("key_guest_to_host"))

    seq = {"host": 0, "guest": 0}
    for m in v["messages"]:
        js = m["json"].encode()
        plain = struct.pack(">HHII", m["type_id"], m["flags"], m["stream"], len(js)) + js + \
            bytes.fromhex(m["data"])
        check(f"plaintext of {m['from']} {m['type']}", plain, bytes.fromhex(m["plaintext"]))
        n = seq[m["from"]]
        seq[m["from"]] += 1
        length = 8 + len(plain) + 16
        ad = struct.pack(">IQ", length, n)
        nonce = b"\x00" * 4 + struct.pack(">Q", n)
        key = k_h2g if m["from"] == "host" else k_g2h
        wire = ad + CIPHERS[cipher][1](key).encrypt(nonce, plain, ad)
        check(f"frame {n} of {m['from']} ({m['type']})", wire, bytes.fromhex(m["frame"]))
    print(f"all vectors of {path.name} agree with the document")


if __name__ == "__main__":
    main()
