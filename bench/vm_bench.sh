#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The channel in the test VM (tests/vm/): prints figures, never passes or fails a test.
#   - push throughput over virtio-serial against a raw copy of the same bytes over the same
#     port in the same run (host: qemu's chardev socket; guest: busybox dd into tmpfs);
#   - sandbox-ctl hello latency over virtio-serial (host to guest) and over vsock loopback
#     inside the guest, whole commands (exec, connect, handshake, hello, close);
#   - sandbox-ctl push over vsock loopback inside the guest, and vsock_echo's raw loopback.
# Software emulation (TCG): the guest runs several times slower than the host; compare figures
# within one run. `make bench-vm` builds the static binaries first. BENCH_BYTES sets the size
# (default 16 MiB). The in-process handshake cost is bench/handshake_bench.c's.
set -euo pipefail
cd "$(dirname "$0")/.."

size=${BENCH_BYTES:-16777216}
out=$(VM_TESTS=vsock,bench VM_TIMEOUT=${VM_TIMEOUT:-400} \
	tests/vm/vm-test.sh "vmtest_bench_bytes=$size" "vmtest_vsock_bytes=$size" 2>&1) || {
	echo "$out" | tail -n 60
	echo "vm_bench: the VM run failed" >&2
	exit 1
}
echo "vm_bench: $(grep -m1 '^test-vm: kernel' <<<"$out" | sed 's/^test-vm: //')"
grep -E '^    (vsock_echo|bench):' <<<"$out" | sed 's/^    /  /'
sed -n '/^host_driver: bench: /,/^[^ ]/p' <<<"$out" | grep -v '^test-vm' |
	sed 's/^host_driver: bench: //'
# The figure lines (scripts/figures.py): push against the raw copy over virtio-serial, and over
# vsock loopback inside the guest against vsock_echo's raw loopback.
/usr/bin/python3 - <<'FIG' "$out"
import re, sys
out = sys.argv[1]
raw = re.search(r"raw copy \(chardev socket[^:]*: ([\d.]+) ms, ([\d.]+) MiB/s", out)
push = re.search(r"sandbox-ctl push \(median of (\d+), whole command\): ([\d.]+) ms, ([\d.]+) MiB/s = (\d+) % of raw", out)
less = re.search(r"push less one connection[^:]*: ([\d.]+) ms, ([\d.]+) MiB/s = (\d+) % of raw", out)
if raw and push:
    print("figure: `sandbox-ctl push` over virtio-serial against a raw copy of the same bytes in the "
          "same VM run (software emulation, median of %s) | %s %% of raw (%s vs %s MiB/s)%s | >= 80 %%"
          % (push.group(1), push.group(4), push.group(3), raw.group(2),
             "; %s %% less one connection's set-up" % less.group(3) if less else ""))
vpush = re.search(r"push of (\d+) MiB over vsock loopback inside the guest: ([\d.]+) ms \(([\d.]+) MiB/s", out)
echo = re.search(r"vsock_echo: .*\(([\d.]+) MiB/s each way\)", out)
if vpush and echo:
    print("figure: `sandbox-ctl push` over vsock loopback inside the guest against vsock_echo's raw "
          "loopback, the same VM run (one emulated CPU runs both ends) | %d %% (%s vs %s MiB/s) | >= 80 %%"
          % (round(100 * float(vpush.group(3)) / float(echo.group(1))), vpush.group(3), echo.group(1)))
FIG
