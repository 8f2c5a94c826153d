#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The host side of a test VM run: answers the guest's requests on the control port.

    host_driver.py WORK_DIR TIMEOUT

WORK_DIR holds qemu's chardev sockets (run-vm.sh). The driver connects to WORK_DIR/raw.sock,
the socket of the virtio-serial port "vmtest.raw" (qemu starts the guest only once this
connection is made, so the guest never writes to a port nobody reads), and keeps it for the
whole run. The guest's /init (tests/vm/init) drives; each request is one line, and so is each
answer:

  ECHO n      the raw exchange: the driver answers "SEND n sha256" and n random bytes; the
              guest answers "GOT n sha256" and sends the same bytes back; the driver compares.
  RAW n       a raw copy over the AGENT's port (the baseline of the push benchmark): the
              driver connects to WORK_DIR/agent.sock and answers "CONNECTED"; the guest opens
              its end and says "OPEN"; the driver writes n random bytes there; the guest reads
              them into a tmpfs file and says "RAWDONE n", then "SHA sha256". The time from the
              first byte to RAWDONE is the raw copy's.
  BYE         the guest is done; the driver closes the port and exits.

Prints one line per request with its figures; exit 0 when every request succeeded.
"""
import hashlib
import os
import socket
import sys
import time


class Port:
    """A line-and-bytes reader over a stream socket."""

    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def line(self):
        while b"\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the guest closed the control port")
            self.buf += chunk
        line, _, self.buf = self.buf.partition(b"\n")
        return line.decode(errors="replace").rstrip("\r")

    def exactly(self, n):
        out = bytearray(self.buf[:n])
        self.buf = self.buf[n:]
        while len(out) < n:
            chunk = self.sock.recv(min(1 << 20, n - len(out)))
            if not chunk:
                raise EOFError(f"the guest closed the port after {len(out)} of {n} bytes")
            out += chunk
        return bytes(out)

    def send(self, data):
        self.sock.sendall(data)


def connect(path, limit):
    deadline = time.monotonic() + limit
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def mib_s(n, seconds):
    return n / 1048576 / seconds if seconds > 0 else float("inf")


def do_echo(port, size):
    payload = os.urandom(size)
    digest = hashlib.sha256(payload).hexdigest()
    start = time.monotonic()
    port.send(f"SEND {size} {digest}\n".encode() + payload)
    answer = port.line()
    up = time.monotonic() - start
    if answer != f"GOT {size} {digest}":
        return False, f"the guest answered {answer!r}, expected GOT {size} {digest}"
    start = time.monotonic()
    back = port.exactly(size)
    down = time.monotonic() - start
    if back != payload:
        return False, f"the {size} bytes that came back differ from those sent"
    return True, (f"{size} bytes host->guest in {up * 1e3:.0f} ms ({mib_s(size, up):.1f} MiB/s, "
                  f"into a tmpfs file, hashed), guest->host in {down * 1e3:.0f} ms "
                  f"({mib_s(size, down):.1f} MiB/s); checksums match")


def do_raw(port, work, size):
    payload = os.urandom(size)
    digest = hashlib.sha256(payload).hexdigest()
    agent = connect(os.path.join(work, "agent.sock"), 10)
    try:
        port.send(b"CONNECTED\n")
        answer = port.line()
        if answer != "OPEN":
            return False, f"the guest answered {answer!r}, expected OPEN"
        start = time.monotonic()
        agent.sendall(payload)
        answer = port.line()
        took = time.monotonic() - start
        if answer != f"RAWDONE {size}":
            return False, f"the guest answered {answer!r}, expected RAWDONE {size}"
        answer = port.line()
        if answer != f"SHA {digest}":
            return False, f"the guest's checksum {answer!r} is not that of the bytes sent"
    finally:
        agent.close()
    return True, (f"{size} bytes host->guest over the agent's port in {took * 1e3:.0f} ms "
                  f"({mib_s(size, took):.1f} MiB/s, into a tmpfs file); checksums match")


def main():
    work, limit = sys.argv[1], float(sys.argv[2])
    sock = connect(os.path.join(work, "raw.sock"), 30)
    sock.settimeout(limit)
    port = Port(sock)
    ok = True
    while True:
        words = port.line().split()
        if not words:
            continue
        if words[0] == "BYE":
            break
        if words[0] == "ECHO" and len(words) == 2 and words[1].isdigit():
            good, what = do_echo(port, int(words[1]))
        elif words[0] == "RAW" and len(words) == 2 and words[1].isdigit():
            good, what = do_raw(port, work, int(words[1]))
        else:
            port.send(b"UNKNOWN\n")
            good, what = False, f"unknown request {' '.join(words)!r}"
        print(f"host_driver: {words[0].lower()}: {what}", flush=True)
        ok = ok and good
    sock.close()
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, EOFError) as e:
        print(f"host_driver: {e}")
        sys.exit(1)
