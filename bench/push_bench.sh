#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `sandbox-ctl push` against a raw copy of the same bytes over the same transport, in one run:
# a unix socket on this machine, both destinations in tmpfs. The raw copy (bench/push_raw.c)
# is a plain reader writing files; the push goes to a real `sandbox-agent serve --unix` daemon
# over the encrypted channel. Each run pushes into a fresh app directory (no old tree to set
# aside). Runs alternate raw and push; medians of RUNS (7). Two trees: 64 MiB in 64 files, and
# 16 MiB in 4096 files of 4 KiB (64 directories). Both are timed the same way, as whole
# processes started by this script: the push's wall time is the whole sandbox-ctl process
# (key load, connect, handshake, walk, send, the agent's checks, flush and swap), the raw
# copy's the whole push_raw process (socketpair, fork of the reader, walk, send, the reader's
# acknowledgement). "in-session" is the time sandbox-ctl reports from the first tree message to
# the agent's confirmation, against the time push_raw reports from the start of its walk to the
# acknowledgement. Then the 64 MiB tree again with each end of both copies on a CPU of its own
# (taskset: sandbox-ctl and the raw copy's sender on the first CPU this script may use, the daemon
# and the raw copy's reader on the second): where the scheduler puts two processes that wake each
# other moves both figures from run to run, and this takes that out of the comparison.
#
#   bench/push_bench.sh    (needs root; BUILD=build-static for the static build; RUNS=N)
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${BUILD:-$ROOT/build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
case $BUILD in *build-static*) KIND="static build" ;; *) KIND="dynamic build" ;; esac
RUNS=${RUNS:-7}
AGENT=$BUILD/sandbox-agent
CTL=$BUILD/sandbox-ctl
RAW=${RAW:-$ROOT/build/bench/push_raw}
[ "$(id -u)" -eq 0 ] || {
	echo "push_bench: needs root (the daemon serves root peers only)" >&2
	exit 77
}
for b in "$AGENT" "$CTL" "$RAW"; do
	[ -x "$b" ] || {
		echo "push_bench: $b is not built (make, make $ROOT/build/bench/push_raw)" >&2
		exit 1
	}
done

TMP=$(mktemp -d /dev/shm/push-bench.XXXXXX)
DAEMON=
cleanup() {
	[ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null && wait "$DAEMON" 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT

# The trees.
mkdir -p "$TMP/big" "$TMP/small"
for i in $(seq -w 1 64); do
	head -c 1048576 /dev/urandom >"$TMP/big/f$i"
done
for d in $(seq -w 1 64); do
	mkdir "$TMP/small/d$d"
	head -c $((64 * 4096)) /dev/urandom >"$TMP/chunk"
	split -b 4096 -a 2 "$TMP/chunk" "$TMP/small/d$d/f"
done
rm "$TMP/chunk"

# Keys and the daemon.
export HOME=$TMP/home
mkdir -p "$HOME" "$TMP/ws"
"$CTL" keygen >/dev/null
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
"$AGENT" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/state" \
	--no-forward --cache-root "$TMP/cache" >"$TMP/agent.log" 2>&1 &
DAEMON=$!
for _ in $(seq 100); do
	[ -S "$TMP/agent.sock" ] && break
	sleep 0.1
done
A=unix:$TMP/agent.sock
"$CTL" --connect "$A" hello --accept-new-guest-key >/dev/null

# The daemon's CPU time in ns (it is one thread).
daemon_ns() { awk '{print $1}' "/proc/$DAEMON/schedstat"; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ns() { date +%s%N; }

# Set for the run with each end on a CPU of its own: what starts sandbox-ctl and push_raw (the same
# for both, so that both whole processes are timed alike) and push_raw's own option.
PIN=()
RAW_OPTS=()

bench_tree() { # bench_tree NAME LABEL
	local name=$1 label=$2 mib raw rawin push sess
	local f
	for f in raw rawwall push sess cpu; do : >"$TMP/$f.t"; done
	for i in $(seq "$RUNS"); do
		local t0 t1 d0 d1
		t0=$(ns)
		# The same wrapper as the push's, so both whole processes are timed alike.
		/usr/bin/time -f '%U %S' -o /dev/null "${PIN[@]}" "$RAW" "${RAW_OPTS[@]}" \
			"$TMP/$name" "$TMP/raw-$i" >>"$TMP/raw.t"
		t1=$(ns)
		awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}' >>"$TMP/rawwall.t"
		rm -rf "$TMP/raw-$i"
		d0=$(daemon_ns)
		t0=$(ns)
		/usr/bin/time -f '%U %S' -o "$TMP/ctl.cpu" "${PIN[@]}" \
			"$CTL" --connect "$A" --timeout 60 push "$TMP/$name" --app-dir "$TMP/ws/app-$i" \
			>"$TMP/push.json" 2>"$TMP/push.err" || {
			cat "$TMP/push.err" >&2
			exit 1
		}
		t1=$(ns)
		d1=$(daemon_ns)
		awk -v a="$t0" -v b="$t1" 'BEGIN {print (b - a) / 1e9}' >>"$TMP/push.t"
		read -r cu cs <"$TMP/ctl.cpu"
		echo "$cu $cs $(((d1 - d0)))" >>"$TMP/cpu.t"
		/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["seconds"])' \
			"$TMP/push.json" >>"$TMP/sess.t"
		[ "$i" -gt 1 ] || diff -r "$TMP/$name" "$TMP/ws/app-$i" >/dev/null || {
			echo "push_bench: the pushed tree differs from the source" >&2
			exit 1
		}
		rm -rf "$TMP/ws/app-$i"
	done
	mib=$(du -sm --apparent-size "$TMP/$name" | cut -f1)
	raw=$(median <"$TMP/rawwall.t")
	rawin=$(awk '{print $1}' "$TMP/raw.t" | median)
	push=$(median <"$TMP/push.t")
	sess=$(median <"$TMP/sess.t")
	printf '%s, median of %d:\n' "$label" "$RUNS"
	local cpu
	cpu=$(awk 'NR == FNR {rc += $4; nr++; next} {cu += $1 + $2; d += $3 / 1e9; n++}
		END {printf "%.0f %.0f %.0f", rc * 1000 / nr, cu * 1000 / n, d * 1000 / n}' "$TMP/raw.t" "$TMP/cpu.t")
	awk -v mib="$mib" -v raw="$raw" -v rawin="$rawin" -v push="$push" -v sess="$sess" -v cpu="$cpu" \
		-v label="$label" -v build="$KIND" -v runs="$RUNS" 'BEGIN {
		split(cpu, c, " ")
		printf "  raw copy     %7.1f ms  %5.0f MiB/s  (the whole push_raw process)\n", raw * 1000, mib / raw
		printf "  push (wall)  %7.1f ms  %5.0f MiB/s  %3.0f %% of raw (the whole sandbox-ctl process)\n", push * 1000, mib / push, 100 * raw / push
		printf "  raw, inside  %7.1f ms  %5.0f MiB/s  (push_raw'"'"'s own time: its walk to the acknowledgement)\n", rawin * 1000, mib / rawin
		printf "  in-session   %7.1f ms  %5.0f MiB/s  %3.0f %% of raw inside (sandbox-ctl \"seconds\": first tree message to the confirmation)\n", sess * 1000, mib / sess, 100 * rawin / sess
		printf "  CPU, means:  raw copy (both ends) %.0f ms; push: sandbox-ctl %.0f ms, the daemon %.0f ms\n", c[1], c[2], c[3]
		printf "figure: `sandbox-ctl push` of %s against a raw copy of the same bytes, unix socket into tmpfs, %s (median of %d) | %.0f %% of raw (%.0f vs %.0f MiB/s, both whole processes; %.0f %% from the first tree message against push_raw'"'"'s own time, %.0f MiB/s); CPU: push %.0f + %.0f ms, raw %.0f ms both ends | >= 80 %%\n", label, build, runs, 100 * raw / push, mib / push, mib / raw, 100 * rawin / sess, mib / rawin, c[2], c[3], c[1]
	}'
}

echo "push against a raw copy over a unix socket into tmpfs ($BUILD)"
bench_tree big "64 MiB in 64 files"
bench_tree small "16 MiB in 4096 files of 4 KiB"
# Each end on a CPU of its own, the push's and the raw copy's alike.
read -r CPU_A CPU_B _ < <(/usr/bin/python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
if [ -n "${CPU_B:-}" ] && command -v taskset >/dev/null; then
	mask=$(taskset -pc "$DAEMON" | sed 's/.*: //')
	taskset -a -pc "$CPU_B" "$DAEMON" >/dev/null
	PIN=(taskset -c "$CPU_A")
	RAW_OPTS=(--reader-cpu "$CPU_B")
	bench_tree big "64 MiB in 64 files with each end (of both copies) on a CPU of its own"
	taskset -a -pc "$mask" "$DAEMON" >/dev/null
	PIN=()
	RAW_OPTS=()
else
	echo "each end on a CPU of its own: skipped (one CPU to run on, or no taskset)"
fi
# The channel alone, without files (memory to memory): what the AEAD leaves of the socket.
HSB=${HSB:-$ROOT/build/bench/handshake_bench}
if [ -x "$HSB" ]; then
	echo "the channel alone, 64 MiB memory to memory ($HSB, best of 3):"
	"$HSB" -n 1 -m 64 | grep -E 'raw copy|64 KiB'
fi
