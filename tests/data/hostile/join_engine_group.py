# A setup step's leftover that joins the engine's process group (allowed within one session)
# and waits: tests/integration/test_setup_leftovers.sh. argv[1] is a marker the test looks for.
import os
import sys
import time


def stat(pid):
    s = open("/proc/%d/stat" % pid).read()
    return s[: s.rindex(")")].split("(", 1)[1], s[s.rindex(")") + 2 :].split()


pid, engine = os.getppid(), None
for _ in range(32):
    comm, fields = stat(pid)
    if comm.startswith("sandbox-app-boo") or comm.startswith("sandbox-agent"):
        engine = pid
        break
    pid = int(fields[1])
if engine is None:
    sys.exit("no engine above us")
if os.fork():
    os._exit(0)
try:
    os.setpgid(0, os.getpgid(engine))
    print("joined", os.getpgid(engine), flush=True)
except OSError as e:
    print("setpgid refused:", e, flush=True)
time.sleep(120)
