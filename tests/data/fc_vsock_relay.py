#!/usr/bin/python3
# Stands in for Firecracker's vsock device on the host side (Firecracker cannot run here):
# a unix socket where a client writes "CONNECT <port>\n" and gets "OK <host port>\n", after
# which the bytes flow to the guest's listener, here the real daemon's unix socket.
# Like Firecracker, it closes a connection without a word while "nothing listens": the first
# SILENT_CLOSES connections are closed at once.
import os
import socket
import sys
import threading

path, target = sys.argv[1], sys.argv[2]
silent = int(os.environ.get("SILENT_CLOSES", "2"))
count = 0


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def serve(conn):
    global count
    count += 1
    if count <= silent:
        conn.close()
        return
    line = b""
    while not line.endswith(b"\n") and len(line) < 64:
        b = conn.recv(1)
        if not b:
            conn.close()
            return
        line += b
    if not line.startswith(b"CONNECT ") or not line[8:-1].isdigit():
        conn.close()
        return
    guest = socket.socket(socket.AF_UNIX)
    guest.connect(target)
    conn.sendall(b"OK 1073741824\n")
    threading.Thread(target=pump, args=(conn, guest), daemon=True).start()
    pump(guest, conn)


srv = socket.socket(socket.AF_UNIX)
srv.bind(path)
srv.listen(8)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
