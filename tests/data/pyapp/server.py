#!/usr/bin/python3
# A tiny app for the engine's tests: /up answers 200, /mcp answers 401 without the token and
# 405 to a GET with it, like the real engine's MCP endpoint. BIND and UP_STATUS change it.
import http.server
import json
import os
import sys

PORT = int(os.environ["PORT"])
BIND = os.environ.get("BIND", "127.0.0.1")
TOKEN = json.load(open("data/key.json"))["token"]
UP = int(os.environ.get("UP_STATUS", "200"))


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/up":
            self.reply(UP, b"up\n")
        elif self.path == "/mcp":
            if self.headers.get("Authorization") == "Bearer " + TOKEN:
                self.reply(405, b"use POST\n")
            else:
                self.reply(401, b"unauthorized\n")
        elif self.path == "/env":
            self.reply(200, "\n".join(sorted(os.environ)).encode() + b"\n")
        else:
            self.reply(404, b"not found\n")

    def reply(self, status, body):
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, fmt, *args):
        sys.stderr.write("request: " + (fmt % args) + "\n")


class Server(http.server.ThreadingHTTPServer):
    address_family = __import__("socket").AF_INET6 if ":" in BIND else __import__("socket").AF_INET


server = Server((BIND, PORT), Handler)
# The benchmark notes when the listener is up (bench/boot_bench.sh).
if os.environ.get("LISTEN_STAMP"):
    import time
    with open(os.environ["LISTEN_STAMP"], "w") as f:
        f.write(str(time.time_ns()))
print("listening on %s:%d" % (BIND, PORT), flush=True)
server.serve_forever()
