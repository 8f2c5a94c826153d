#!/usr/bin/python3
# Try a TCP connect to each HOST:PORT given and print "HOST:PORT ok" or "HOST:PORT refused (why)",
# with a 3 s timeout each; then the proxy variables of our environment.
import os
import socket
import sys

for target in sys.argv[1:]:
    host, port = target.rsplit(":", 1)
    s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    s.settimeout(3)
    try:
        s.connect((host.strip("[]"), int(port)))
        print(target, "ok")
    except OSError as e:
        print(target, "refused", "(%s)" % e)
    finally:
        s.close()
for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NO_PROXY", "no_proxy"):
    print("%s=%s" % (name, os.environ.get(name, "")))
