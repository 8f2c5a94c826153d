#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The host side of a test VM run: answers the guest's requests on the control port.

    host_driver.py WORK_DIR TIMEOUT [SANDBOX_CTL]

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
  CTL app_dir the full scenario across the VM boundary: the guest runs `sandbox-agent serve`
              on its end of the agent's port; the driver runs SANDBOX_CTL with
              --connect serial:WORK_DIR/agent.sock and the key WORK_DIR/host_key (listed in
              the guest's authorized_keys): hello (pinning the guest's key), the same with
              WORK_DIR/stranger_key (not listed: refused), secrets put (a boot and a fetch
              secret), push of tests/vm/app to app_dir, boot --wait to ready (no --pass-env:
              every boot secret reaches the app), runtime, logs (the secret scrubbed),
              status; then "RUNNING boot_secret fetch_secret": the guest looks for the values
              where they must be and must not be, and answers "CHECKED ok" or "CHECKED fail
              why"; then stop. Last answer: "RESULT ok" or "RESULT fail why".
  BENCH n     the benchmark (bench/vm_bench.sh): the driver makes a tree of n random bytes
              (16 files), copies the same bytes raw over the agent's port as RAW does, and
              answers "SERVE" once the guest's end is closed again; the guest starts the daemon
              and says "SERVING"; the driver times sandbox-ctl hello (10 runs) and push of the
              tree (3 runs) over the port, prints the figures and answers "BENCHDONE".
  HOLD        for debugging by hand (VM_TESTS=hold): the guest waits with the daemon running;
              the driver answers "GO" once WORK_DIR/release exists.
  BYE         the guest is done; the driver closes the port and exits.

Prints one line per request with its figures; exit 0 when every request succeeded.
"""
import hashlib
import json
import os
import secrets
import socket
import subprocess
import sys
import time

APP_TREE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "app")


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


class Failed(Exception):
    pass


class Ctl:
    """sandbox-ctl over the agent's virtio-serial port, with this run's keys."""

    def __init__(self, binary, work, timeout):
        self.binary = binary
        self.work = work
        self.timeout = timeout
        self.base = [binary, "--connect", "serial:" + os.path.join(work, "agent.sock"),
                     "--known-guests", os.path.join(work, "known_guests"),
                     "--instance", "vmtest", "--timeout", "60"]

    def run(self, *args, key="host_key", stdin=None, expect=0, quiet=False):
        cmd = self.base + ["--key", os.path.join(self.work, key)] + list(args)
        start = time.monotonic()
        p = subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                           timeout=self.timeout)
        took = time.monotonic() - start
        name = " ".join(args[:2])
        if p.returncode != expect:
            raise Failed(f"sandbox-ctl {name} exited {p.returncode}, expected {expect}: "
                         f"{p.stderr.strip()[-600:]} {p.stdout.strip()[-300:]}")
        try:
            doc = json.loads(p.stdout) if p.stdout.strip() else {}
        except ValueError:
            raise Failed(f"sandbox-ctl {name} printed no JSON document: {p.stdout[:300]!r}")
        if not quiet:
            print(f"host_driver: ctl: {name} -> exit {p.returncode} in {took * 1e3:.0f} ms",
                  flush=True)
        return doc, p


def ctl_scenario(ctl, port, app_dir):
    """The host's part of CTL, up to and including the guest's checks while the app runs."""
    doc, _ = ctl.run("--accept-new-guest-key", "hello")
    if not doc.get("version"):
        raise Failed(f"hello: no version in {doc}")
    ctl.run("hello")  # the pinned key again, without --accept-new-guest-key
    ctl.run("hello", key="stranger_key", expect=3)

    boot_secret = "vmtest-boot-" + secrets.token_hex(16)
    fetch_secret = "vmtest-fetch-" + secrets.token_hex(16)
    ctl.run("secrets", "put", "--scope", "boot", "VMTEST_BOOT_SECRET",
            stdin=json.dumps({"VMTEST_BOOT_SECRET": boot_secret}))
    ctl.run("secrets", "put", "--scope", "fetch", "VMTEST_FETCH_TOKEN",
            stdin=json.dumps({"VMTEST_FETCH_TOKEN": fetch_secret}))

    ctl.run("push", APP_TREE, "--app-dir", app_dir)
    # No --pass-env: every boot secret reaches the app (the in-guest scenario names it).
    doc, _ = ctl.run("boot", "--app-dir", app_dir, "--wait", "--deadline", "120")
    if doc.get("status") != "ready":
        raise Failed(f"boot --wait: {doc}")
    doc, _ = ctl.run("runtime", "--app-dir", app_dir)
    text = json.dumps(doc)
    if "/cgi-bin/mcp" not in text or "aa_" not in text:
        raise Failed(f"runtime: no mcp_path /cgi-bin/mcp and token in {text[:300]}")
    _, p = ctl.run("logs", "--log", "setup", "--app-dir", app_dir)
    if boot_secret in p.stdout or "[REDACTED]" not in p.stdout:
        raise Failed(f"logs --log setup: the setup step's echo of the boot secret was not "
                     f"scrubbed: {p.stdout[-300:]!r}")
    doc, _ = ctl.run("status", "--app-dir", app_dir)
    if "ready" not in json.dumps(doc):
        raise Failed(f"status after a ready boot: {doc}")

    port.send(f"RUNNING {boot_secret} {fetch_secret}\n".encode())
    answer = port.line()
    if answer != "CHECKED ok":
        raise Failed(f"the guest's checks with the app running: {answer}")
    # Discarded, not only stopped: the guest's next app (over vsock) may then boot alone, since
    # a guest holds one app unless the caller accepts one user for all.
    ctl.run("stop", "--app-dir", app_dir, "--discard")


def do_ctl(port, ctl, app_dir):
    try:
        ctl_scenario(ctl, port, app_dir)
    except (Failed, subprocess.TimeoutExpired, OSError) as e:
        why = str(e).replace("\n", " ")
        port.send(f"RESULT fail {why}\n".encode())
        return False, why
    port.send(b"RESULT ok\n")
    return True, (f"hello, stranger refused, secrets put, push, boot --wait ready, runtime, "
                  f"logs scrubbed, status, guest checks, stop over serial:agent.sock")


def make_tree(root, size, files=16):
    os.makedirs(root, exist_ok=True)
    chunks = []
    each = size // files
    for i in range(files):
        data = os.urandom(each if i < files - 1 else size - each * (files - 1))
        with open(os.path.join(root, f"blob{i:02d}.bin"), "wb") as f:
            f.write(data)
        chunks.append(data)
    return b"".join(chunks)


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def do_bench(port, ctl, work, size):
    tree = os.path.join(work, "bench-tree")
    payload = make_tree(tree, size)
    digest = hashlib.sha256(payload).hexdigest()
    agent = connect(os.path.join(work, "agent.sock"), 10)
    try:
        port.send(b"CONNECTED\n")
        if port.line() != "OPEN":
            return False, "the guest did not open the agent's port"
        start = time.monotonic()
        agent.sendall(payload)
        answer = port.line()
        raw = time.monotonic() - start
        if answer != f"RAWDONE {size}" or port.line() != f"SHA {digest}":
            return False, f"the raw copy did not arrive whole ({answer})"
    finally:
        agent.close()
    port.send(b"SERVE\n")
    if port.line() != "SERVING":
        return False, "the guest's daemon did not start"
    try:
        ctl.run("--accept-new-guest-key", "hello", quiet=True)
        hellos = []
        for _ in range(10):
            start = time.monotonic()
            ctl.run("hello", quiet=True)
            hellos.append(time.monotonic() - start)
        pushes = []
        for _ in range(3):
            start = time.monotonic()
            ctl.run("push", tree, "--app-dir", "/workspace/bench/app", quiet=True)
            pushes.append(time.monotonic() - start)
    except (Failed, subprocess.TimeoutExpired, OSError) as e:
        port.send(b"BENCHDONE fail\n")
        return False, str(e)
    port.send(b"BENCHDONE ok\n")
    hello, push = median(hellos), median(pushes)
    mib = size / 1048576
    lines = [
        f"virtio-serial, host -> guest, {mib:.0f} MiB in 16 files, the same bytes, one run:",
        f"  raw copy (chardev socket -> guest dd into tmpfs): {raw * 1e3:.0f} ms, "
        f"{mib_s(size, raw):.1f} MiB/s",
        f"  sandbox-ctl push (median of 3, whole command): {push * 1e3:.0f} ms, "
        f"{mib_s(size, push):.1f} MiB/s = {raw / push * 100:.0f} % of raw",
        f"  push less one connection (median hello): {(push - hello) * 1e3:.0f} ms, "
        f"{mib_s(size, push - hello):.1f} MiB/s = {raw / (push - hello) * 100:.0f} % of raw",
        f"  sandbox-ctl hello over virtio-serial (median of 10, whole command: exec, connect, "
        f"handshake, hello): {hello * 1e3:.1f} ms (min {min(hellos) * 1e3:.1f}, "
        f"max {max(hellos) * 1e3:.1f})",
    ]
    return True, "\n".join(lines)


def main():
    work, limit = sys.argv[1], float(sys.argv[2])
    ctl = Ctl(sys.argv[3] if len(sys.argv) > 3 else "sandbox-ctl", work, limit)
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
        elif words[0] == "BENCH" and len(words) == 2 and words[1].isdigit():
            good, what = do_bench(port, ctl, work, int(words[1]))
        elif words[0] == "HOLD":
            print(f"host_driver: hold: touch {work}/release to let the guest go on", flush=True)
            while not os.path.exists(os.path.join(work, "release")):
                time.sleep(0.2)
            port.send(b"GO\n")
            good, what = True, "released"
        elif words[0] == "CTL" and len(words) == 2:
            good, what = do_ctl(port, ctl, words[1])
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
