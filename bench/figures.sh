#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make figures`: runs the programs of bench/ one after the other, each one's output in
# build/figures/ (and on the terminal), then regenerates README.md's figures table from the
# figure lines they printed (scripts/figures.py). A bench that fails leaves its rows as they
# were and is named at the end; the exit status is then 1. Needs root, the static build
# (`make static`), qemu for the VM rows, lighttpd, Rails and the npm registry for the re-sync
# rows (packaging/install-deps.sh installs them).
#
#   bench/figures.sh [NAME...]      only the benches whose name contains one of NAME
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=build/figures
mkdir -p "$OUT"
rm -f "$OUT"/*.out
failed=()
outs=()
n=0
# run NAME COMMAND...: NAME is how the table's last column names the bench
run() {
	local name=$1 file
	shift
	if [ "${#want[@]}" -gt 0 ]; then
		local w hit=
		for w in "${want[@]}"; do [[ $name == *"$w"* ]] && hit=1; done
		[ -n "$hit" ] || return 0
	fi
	n=$((n + 1))
	file=$OUT/$(printf '%02d' "$n").out
	echo "=== $name"
	{
		echo "bench: $name"
		"$@" 2>&1
	} | tee "$file"
	if [ "${PIPESTATUS[0]}" -eq 0 ] && grep -q '^ *figure:' "$file"; then
		outs+=("$file")
	else
		failed+=("$name")
	fi
}
want=("$@")

run "bench/static_size.sh" bench/static_size.sh
run "bench/boot_bench.sh, static" env BOOT=build-static/sandbox-app-boot bench/boot_bench.sh
run "bench/boot_bench.sh, static, tmpfs" env BENCH_TMP=/dev/shm BOOT=build-static/sandbox-app-boot \
	bench/boot_bench.sh
# The kernel's part of the same path, alone: what of the engine's own time is not its code.
run "bench/boot_floor_bench" build/bench/boot_floor_bench /tmp
run "bench/boot_floor_bench, tmpfs" build/bench/boot_floor_bench /dev/shm
run "bench/rails_boot_bench.sh, static" env BOOT=build-static/sandbox-app-boot bench/rails_boot_bench.sh
run "bench/daemon_rss_bench, static" build/bench/daemon_rss_bench --agent build-static/sandbox-agent
run "bench/push_bench.sh, static" env BUILD=build-static RAW=build/bench/push_raw \
	HSB=build/bench/handshake_bench bench/push_bench.sh
# The guest's agent as it ships (static); the host's sandbox-ctl as Debian's package builds it.
run "bench/resync_bench.sh" env AGENT=build-static/sandbox-agent bench/resync_bench.sh
run "EXAMPLE=rails-app bench/resync_bench.sh" env AGENT=build-static/sandbox-agent \
	EXAMPLE=rails-app bench/resync_bench.sh
run "bench/session_live_bench.sh" bench/session_live_bench.sh
run "bench/scrub_bench" build/bench/scrub_bench
run "bench/handshake_bench" build/bench/handshake_bench -n 200 -m 16
run "bench/vm_bench.sh" bench/vm_bench.sh

if [ "${#outs[@]}" -gt 0 ]; then
	scripts/figures.py README.md "${outs[@]}" || failed+=("scripts/figures.py")
fi
if [ "${#failed[@]}" -gt 0 ]; then
	printf 'figures: failed (their rows are unchanged): %s\n' "${failed[*]}" >&2
	exit 1
fi
