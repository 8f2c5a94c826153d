#!/usr/bin/python3
# Accept TCP connections on each HOST:PORT given and close them: the stand-in proxy, a
# forbidden host and a loopback service. Runs until killed.
import selectors
import socket
import sys

sel = selectors.DefaultSelector()
for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host.strip("[]"), int(port)))
    s.listen(16)
    sel.register(s, selectors.EVENT_READ)
print("listening", flush=True)
while True:
    for key, _ in sel.select():
        conn, _ = key.fileobj.accept()
        conn.close()
