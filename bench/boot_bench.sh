#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Measures, from outside the process, what sandbox-app-boot adds to a boot:
#   overhead   its wall time minus the wall time of the app's own commands (setup, manifest,
#              then the server until /mcp answers) typed into a shell: bash runs each of the
#              same strings itself (`eval`), one after the other, in the app's directory; both
#              sides start alike (a subshell with an emptied environment); the median of the
#              pairs' differences, the two sides' order alternating from pair to pair
#   detection  the time from the app's listener being up to sandbox-app-boot exiting ready
#   memory     the supervisor's resident set (VmRSS) with the forwarder running
#   timeline   from each boot's state.json: the engine's own time inside the boot (engine_ms:
#              started_ms to finished_ms minus the phases' app_ms; median, min and max) and
#              each phase's median duration with the app's part and ours (preflight includes
#              making the cgroups, toolchain joining the limits' v1 cgroups where there are any)
# The app is tests/data/pyapp (python3's http.server), whose commands are quick, so the
# figures are mostly the engine's. Prints medians over RUNS pairs (default 45: at 15 the
# median of a pair's difference moved by several ms from run to run here). Needs root.
# The workspace (and so state.json, the logs and runtime.json) is made under BENCH_TMP (/tmp);
# BENCH_TMP=/dev/shm measures the same on tmpfs, which shows the root filesystem's share (each
# figure names the filesystem it was measured on). Times are bash's $EPOCHREALTIME: no process
# is started to read the clock.
set -euo pipefail
cd "$(dirname "$0")/.."
BOOT=${BOOT:-build/sandbox-app-boot}
RUNS=${RUNS:-45}
export -n BOOT RUNS
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/sandbox-bench.XXXXXX")
chmod 755 "$TMP"
trap '"$BOOT" --stop --grace 1000 "$TMP/ws/app" >/dev/null 2>&1 || true; rm -rf "$TMP"' EXIT

id sandbox >/dev/null 2>&1 || useradd --system --create-home --shell /bin/sh sandbox
mkdir -p "$TMP/ws"
cp -a tests/data/pyapp "$TMP/ws/app"
# The app's commands, as both sides run them. The setup step is a program, as a real app's
# are (`bundle install`, `npm ci`): a shell runs its builtin `true` without a process, where the
# boot contract makes every step one (BENCH_SETUP=true measures that case too). The server
# notes when its listener is up (CLOCK_REALTIME, ns) before serving.
SETUP=${BENCH_SETUP:-/usr/bin/true}
MANIFEST='/usr/bin/python3 manifest.py'
START='LISTEN_STAMP=data/listening exec /usr/bin/python3 server.py'
cat >"$TMP/ws/app/.activeagents/sandbox.yml" <<EOF
setup:
  - "$SETUP"
manifest: "$MANIFEST"
start: "$START"
EOF
chown -R sandbox: "$TMP/ws/app"
LISTEN_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
APP_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

# The clock: $EPOCHREALTIME with its decimal point (whatever the locale's) taken out, in
# microseconds, read inline where it is needed (a function called as $(...) would fork).
# A FIFO nobody writes to: `read -t` on it is a pause without a process.
mkfifo "$TMP/pause"
exec {PAUSE_FD}<>"$TMP/pause"

# One GET /mcp from the shell itself (no process per try, as the engine's probe is in-process):
# true once the server answers with a status line.
answers() {
	exec 3<>"/dev/tcp/127.0.0.1/$1" || return 1
	printf 'GET /mcp HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n' >&3
	IFS= read -r line <&3 || line=
	exec 3>&-
	[[ $line == HTTP/* ]]
}

# Both sides start alike: a subshell of this shell, with the environment the engine is given and
# nothing else, runs the commands or execs the engine (no `env` process on either side).
ENV_VARS=(PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8)
clean_env() {
	local v
	for v in $(compgen -e); do export -n "${v?}"; done
	for v in "${ENV_VARS[@]}" "$@"; do export "${v?}"; done
}

# The same commands typed into a shell: bash runs each string itself, in the app's directory,
# the manifest and the server with PORT (and the manifest's path), until /mcp answers. The
# server's errors go to direct.err; it must answer within 30 s.
direct_once() {
	local t0
	t0=${EPOCHREALTIME//[!0-9]/}
	(
		clean_env
		cd "$TMP/ws/app"
		eval "$SETUP"
		export PORT=$APP_PORT ACTION_AGENT_SANDBOX_MANIFEST=$TMP/direct.json
		eval "$MANIFEST" >/dev/null
		(eval "$START") >/dev/null 2>"$TMP/direct.err" &
		server=$!
		give_up=$((SECONDS + 30))
		# A look every millisecond, as the engine's: a pause the shell waits out itself.
		until answers "$APP_PORT" 2>/dev/null; do
			if ((SECONDS > give_up)) || ! kill -0 "$server" 2>/dev/null; then
				echo "boot_bench: the server run directly did not answer (see $TMP/direct.err)" >&2
				kill "$server" 2>/dev/null
				exit 1
			fi
			read -r -t 0.001 -u "$PAUSE_FD" || :
		done
		t1=${EPOCHREALTIME//[!0-9]/}
		kill "$server"
		wait "$server" 2>/dev/null || true
		echo $((t1 - t0))
	) || exit 1
	# Its key file is root's now: the run user's again, for the next boot's manifest.
	chown -R sandbox: "$TMP/ws/app/data"
}

engine_once() {
	local t0 t1 listening
	rm -f "$TMP/ws/app/data/listening"
	t0=${EPOCHREALTIME//[!0-9]/}
	(clean_env SANDBOX_SESSION_ID=bench0001 &&
		exec "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --cache-root "$TMP/cache" "$TMP/ws/app" 2>"$TMP/engine.err") ||
		{ cat "$TMP/engine.err" >&2; exit 1; }
	t1=${EPOCHREALTIME//[!0-9]/}
	listening=$(cat "$TMP/ws/app/data/listening")
	echo "$((t1 - t0)) $((t1 - listening / 1000))"
}

settle() { read -r -t 0.3 -u "$PAUSE_FD" || :; }

# The boot, what it left measured, then stopped.
engine_run() {
	read -r wall detect < <(engine_once) && [[ -n $wall ]] || exit 1
	echo "$wall" >>"$TMP/engine"
	echo "$detect" >>"$TMP/detect"
	sup=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["supervisor_pid"])' "$TMP/ws/.sandbox/state.json")
	awk '/VmRSS/ {print $2}' "/proc/$sup/status" >>"$TMP/rss"
	cp "$TMP/ws/.sandbox/state.json" "$TMP/timeline.$1"
	"$BOOT" --stop --grace 1000 "$TMP/ws/app" >/dev/null 2>&1
}

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# The quartiles around the median: "LOW HIGH".
quartiles() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+3)/4)], a[int((3*NR+3)/4)]}'; }

for f in direct engine pair detect rss timeline; do : >"$TMP/$f"; done
for i in $(seq "$RUNS"); do
	# Which side goes first alternates: neither always runs on the other's leftovers. A pause
	# before each lets the kernel finish tearing down what the one before stopped.
	if ((i % 2)); then
		settle
		engine_run "$i"
		settle
		direct=$(direct_once)
	else
		settle
		direct=$(direct_once)
		settle
		engine_run "$i"
	fi
	echo "$direct" >>"$TMP/direct"
	echo "$(($(tail -1 "$TMP/engine") - direct))" >>"$TMP/pair"
done
"$BOOT" --stop --grace 1000 "$TMP/ws/app" >/dev/null 2>&1 || true

d=$(median <"$TMP/direct")
e=$(median <"$TMP/engine")
p=$(median <"$TMP/pair")
read -r p_low p_high < <(quartiles <"$TMP/pair")
t=$(median <"$TMP/detect")
r=$(median <"$TMP/rss")
printf 'boot benchmark, %d runs, medians (tests/data/pyapp)\n' "$RUNS"
printf '  app commands typed in a shell %6.1f ms\n' "$(echo "$d / 1000" | bc -l)"
printf '  sandbox-app-boot wall time  %8.1f ms\n' "$(echo "$e / 1000" | bc -l)"
printf '  boot minus the shell         %8.1f ms  (pair by pair, quartiles %.1f to %.1f; %.1f between the medians)\n' \
	"$(echo "$p / 1000" | bc -l)" "$(echo "$p_low / 1000" | bc -l)" "$(echo "$p_high / 1000" | bc -l)" "$(echo "($e - $d) / 1000" | bc -l)"
printf '  listener up -> boot exits   %8.1f ms  (detection, /up check and runtime.json)\n' "$(echo "$t / 1000" | bc -l)"
printf '  supervisor resident memory  %8.1f MiB\n' "$(echo "$r / 1024" | bc -l)"
case $BOOT in build-static/*) build="static build" ;; *) build="dynamic build" ;; esac
fs=$(findmnt -n -o FSTYPE --target "$TMP" 2>/dev/null | head -1)
fs=${fs:-$(stat -f -c %T "$TMP")}
build="$build, workspace on $fs"
ms() { printf '%.1f' "$(echo "$1 / 1000" | bc -l)"; }
echo "figure: app listening -> \`sandbox-app-boot\` exits ready (detection, \`/up\` check and runtime.json), $build | $(ms "$t") ms | < 20 ms"
echo "figure: supervisor resident memory, with the forwarder, $build | $(printf '%.1f' "$(echo "$r / 1024" | bc -l)") MiB | < 2 MiB"
echo "figure: \`sandbox-app-boot\`'s wall time against the app's own commands typed into a shell (setup \`$SETUP\`), same run, $build (median of $RUNS pairs, order alternating) | $(ms "$p") ms more pair by pair (quartiles $(ms "$p_low") to $(ms "$p_high"); medians $(ms "$e") ms against $(ms "$d") ms) | <= 7 ms more"
python3 - "$build" "$RUNS" "$TMP"/timeline.* <<'PY'
import json, sys
sys.path.insert(0, "bench")
from state_phases import median as med, phase_parts
build, nruns = sys.argv[1], sys.argv[2]
runs = [json.load(open(f)) for f in sys.argv[3:]]
eng = sorted(r["engine_ms"] for r in runs)
print("  engine's own time (state.json engine_ms) %6.1f ms  (goal <= 7 ms; min %g, max %g)"
      % (med(eng), eng[0], eng[-1]))
parts = phase_parts(runs)
print("  phases, medians in ms: " + ", ".join(parts))
print("figure: the engine's own time in a boot, %s (state.json `engine_ms`: `started_ms` to "
      "`finished_ms` minus the app's commands from exec to exit; median of %s) | %g ms (min %g, "
      "max %g; by phase: %s) | <= 7 ms"
      % (build, nruns, med(eng), eng[0], eng[-1], ", ".join(parts)))
PY
