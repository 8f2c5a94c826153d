#!/usr/bin/python3
# The pyapp's server, which grows past any memory limit once the file `grow` appears in its
# directory: the test's stand-in for a server that leaks after it was ready.
import os
import runpy
import threading
import time


def grow():
    while not os.path.exists("grow"):
        time.sleep(0.1)
    hog = []
    while True:
        hog.append(bytearray(16 << 20))


threading.Thread(target=grow, daemon=True).start()
runpy.run_path("server.py", run_name="__main__")
