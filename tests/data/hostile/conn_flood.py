#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""An unauthenticated connection flood against a unix socket: keeps up to COUNT connections
open that never send a byte, opening a new one whenever the daemon closes one, for SECONDS.
Prints "opened N held M" to stdout every second, and once more when it ends.
Bounded in count and time. Usage: conn_flood.py SOCKET COUNT SECONDS
"""
import errno
import os
import resource
import select
import socket
import sys
import time


def main(path, count, seconds):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, count + 64), hard))
    end = time.monotonic() + seconds
    held, opened, report = [], 0, time.monotonic() + 1
    while time.monotonic() < end:
        if time.monotonic() >= report:
            print("opened", opened, "held", len(held), flush=True)
            report += 1
        while len(held) < count and time.monotonic() < end:
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
            except BlockingIOError:
                pass  # in the backlog
            except OSError as e:
                s.close()
                if e.errno in (errno.EAGAIN, errno.ECONNREFUSED):
                    break
                raise
            held.append(s)
            opened += 1
        # Drop what the daemon closed, then open again.
        p = select.poll()
        by_fd = {s.fileno(): s for s in held}
        for fd in by_fd:
            p.register(fd, select.POLLIN)
        for fd, _ in p.poll(10):
            s = by_fd[fd]
            try:
                if s.recv(1) != b"":
                    continue
            except (BlockingIOError, InterruptedError):
                continue
            except OSError:
                pass
            held.remove(s)
            s.close()
    print("opened", opened, "held", len(held), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), float(sys.argv[3]))
