#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The host side of the raw virtio-serial exchange with the test VM (tests/vm/init, t_serial).

    serial_host.py SOCKET [BYTES [TIMEOUT]]

Connects to qemu's chardev socket of the port "vmtest.raw" (qemu starts the guest only once
this connection is made), waits for the guest's READY, sends "SEND n sha256" and n random bytes,
then expects "GOT n sha256" and the same bytes back. Prints the figures of both directions;
exit 0 when the guest received and returned every byte, 1 otherwise.
"""
import hashlib
import os
import socket
import sys
import time


def connect(path, deadline):
    while True:
        try:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.connect(path)
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


def read_line(s, buf):
    while b"\n" not in buf:
        chunk = s.recv(65536)
        if not chunk:
            raise EOFError("the port closed while waiting for a line")
        buf += chunk
    line, _, rest = buf.partition(b"\n")
    return line.decode(errors="replace"), rest


def main():
    path = sys.argv[1]
    size = int(sys.argv[2]) if len(sys.argv) > 2 else 4 << 20
    limit = float(sys.argv[3]) if len(sys.argv) > 3 else 120.0
    deadline = time.monotonic() + limit
    s = connect(path, time.monotonic() + 20)
    s.settimeout(limit)
    payload = os.urandom(size)
    digest = hashlib.sha256(payload).hexdigest()

    line, rest = read_line(s, b"")
    if line != "READY":
        print(f"serial_host: expected READY from the guest, got {line!r}")
        return 1
    start = time.monotonic()
    s.sendall(f"SEND {size} {digest}\n".encode() + payload)
    line, rest = read_line(s, rest)
    up = time.monotonic() - start
    if line != f"GOT {size} {digest}":
        print(f"serial_host: the guest answered {line!r}, expected GOT {size} {digest}")
        return 1
    start = time.monotonic()
    back = bytearray(rest)
    while len(back) < size and time.monotonic() < deadline:
        chunk = s.recv(1 << 20)
        if not chunk:
            break
        back += chunk
    down = time.monotonic() - start
    s.close()
    if bytes(back[:size]) != payload or len(back) != size:
        print(f"serial_host: {len(back)} bytes came back, not the {size} sent")
        return 1
    mib = size / 1048576
    print(f"serial_host: {size} bytes host->guest in {up * 1e3:.0f} ms ({mib / up:.1f} MiB/s, "
          f"guest writes them to tmpfs and hashes them), guest->host in {down * 1e3:.0f} ms "
          f"({mib / down:.1f} MiB/s); checksums match")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (OSError, EOFError) as e:
        print(f"serial_host: {e}")
        sys.exit(1)
