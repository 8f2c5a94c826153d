#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A loopback HTTP server for the readiness probe tests.

Usage: ready_server.py ADDRESS   (127.0.0.1 or ::1); prints the chosen port on stdout.
  /status/NNN   answers NNN
  /accept       200 when the Accept header is application/json, else 406
  /host         200 when the Host header is the address probed (IP:port), else 403
  /redirect     302 to /status/200
  /big          200 with a 1 MiB body
  /slow         answers after 5 s (longer than the probe's 2 s)
  /delay/MS     answers 200 after MS milliseconds
  /hangup       closes the connection without answering
"""
import http.server
import socket
import sys
import time


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def answer(self, status, body=b"", headers=()):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path
        if path.startswith("/status/"):
            self.answer(int(path[len("/status/"):]))
        elif path == "/accept":
            ok = self.headers.get("Accept") == "application/json"
            self.answer(200 if ok else 406)
        elif path == "/host":
            host = self.headers.get("Host", "")
            ok = host.rsplit(":", 1)[0].strip("[]") == self.server.server_address[0]
            self.answer(200 if ok else 403, host.encode())
        elif path == "/redirect":
            self.answer(302, headers=[("Location", "/status/200")])
        elif path == "/big":
            self.answer(200, b"x" * (1 << 20))
        elif path.startswith("/delay/"):
            time.sleep(int(path[len("/delay/"):]) / 1000)
            self.answer(200)
        elif path == "/slow":
            time.sleep(5)
            self.answer(200)
        elif path == "/hangup":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self.answer(404)

    def log_message(self, *args):
        pass


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True


def main():
    addr = sys.argv[1]
    Server.address_family = socket.AF_INET6 if ":" in addr else socket.AF_INET
    server = Server((addr, 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


main()
