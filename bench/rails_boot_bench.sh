#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A Rails 6.1 boot in the spec shape (examples/rails-app: bundle install, db:prepare, the
# manifest task, the server, start_url /up) against the same commands run by hand, interleaved
# RUNS times (default 9) in the same run, each in a fresh workspace (so no step is skipped):
#   wall       sandbox-app-boot --spec from exec to exit, against the commands by hand until the
#              MCP path answers (401: no token)
#   tail       the app's port first accepting a connection -> the boot exiting ready (the MCP
#              path, start_url, runtime.json), against the same moment by hand -> the MCP path
#              answering
#   timeline   each phase of the boots' state.json: its duration, the app's part (its command
#              from exec to exit) and ours
# An observer connects to the app's port every millisecond to see it first accept. Needs root
# and Rails (apt-get install ruby-rails). BOOT=build-static/sandbox-app-boot for the static build.
set -euo pipefail
cd "$(dirname "$0")/.."
BOOT=${BOOT:-build/sandbox-app-boot}
RUNS=${RUNS:-9}
command -v rails >/dev/null 2>&1 || {
	echo "rails_boot_bench: Rails is not installed (apt-get install ruby-rails)" >&2
	exit 1
}
TMP=$(mktemp -d "${BENCH_TMP:-/tmp}/sandbox-railsbench.XXXXXX")
chmod 755 "$TMP"
cleanup() {
	[ -n "${SERVER:-}" ] && kill "$SERVER" 2>/dev/null
	[ -n "${OBSERVER:-}" ] && kill "$OBSERVER" 2>/dev/null
	for s in "$TMP"/e*/boot/spec.json; do
		[ -f "$s" ] && { "$BOOT" --stop --grace 1000 --spec "$s" >/dev/null 2>&1 || true; }
	done
	rm -rf "$TMP"
}
trap cleanup EXIT
id sandbox >/dev/null 2>&1 || useradd --system --create-home --shell /bin/sh sandbox

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ns() { date +%s%N; }
# Prints the CLOCK_REALTIME ns at which 127.0.0.1:PORT first accepts; gives up after 300 s.
observe() {
	python3 - "$1" <<'PY'
import socket, sys, time
end = time.time() + 300
while time.time() < end:
    s = socket.socket()
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        print(time.time_ns())
        sys.exit(0)
    except OSError:
        time.sleep(0.001)
    finally:
        s.close()
sys.exit(1)
PY
}
workspace() { # DIR: a fresh copy of the app, the run user's
	mkdir -p "$1"
	cp -a examples/rails-app "$1/app"
	rm -rf "$1/app/tmp" "$1/app/log"
	chown -R sandbox: "$1/app"
}
# DIR: a workspace the run user owns, for the commands by hand
hand_workspace() {
	workspace "$1"
	chown sandbox: "$1"
}
SKB=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')

# The same commands by hand, as the run user, with what the engine gives them (the database in
# the workspace, a SECRET_KEY_BASE), then the server until the MCP path answers 401.
by_hand() {
	local w=$TMP/d$1 port t0 t1 accept
	hand_workspace "$w"
	port=$(free_port)
	t0=$(ns)
	runuser -u sandbox -- env -i PATH=/usr/bin:/bin HOME=/home/sandbox LANG=C.UTF-8 \
		DATABASE_URL="sqlite3:$w/db.sqlite3" SECRET_KEY_BASE="$SKB" \
		ACTION_AGENT_SANDBOX_MANIFEST="$w/manifest.json" sh -c "cd '$w/app' && bundle install &&
			bin/rails db:prepare && bin/rails action_agent:sandbox:manifest" >"$w/out" 2>&1 || {
		cat "$w/out" >&2
		exit 1
	}
	observe "$port" >"$w/accept" &
	OBSERVER=$!
	runuser -u sandbox -- env -i PATH=/usr/bin:/bin HOME=/home/sandbox LANG=C.UTF-8 \
		DATABASE_URL="sqlite3:$w/db.sqlite3" SECRET_KEY_BASE="$SKB" PORT="$port" \
		sh -c "cd '$w/app' && exec bin/rails server -b 127.0.0.1 -p $port" >>"$w/out" 2>&1 &
	SERVER=$!
	local deadline=$(($(date +%s) + 300))
	until [ "$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' \
		"http://127.0.0.1:$port/action_agent/mcp" 2>/dev/null)" = 401 ]; do
		if ! kill -0 "$SERVER" 2>/dev/null || [ "$(date +%s)" -gt "$deadline" ]; then
			echo "rails_boot_bench: the server by hand did not answer (its output: $w/out)" >&2
			cat "$w/out" >&2
			exit 1
		fi
		sleep 0.001
	done
	t1=$(ns)
	wait "$OBSERVER"
	OBSERVER=
	accept=$(cat "$w/accept")
	kill "$SERVER"
	wait "$SERVER" 2>/dev/null || true
	SERVER=
	echo "$(((t1 - t0) / 1000000)) $(((t1 - accept) / 1000))"
}

engine() {
	local w=$TMP/e$1 port t0 t1 accept
	workspace "$w"
	mkdir -p "$w/boot" "$w/run"
	port=$(free_port)
	cat >"$w/boot/spec.json" <<EOF
{"version": 1, "app_dir": "$w/app", "manifest_path": "$w/run/runtime.json",
 "port": $port, "listen_port": $(free_port), "timeout": 300, "user": "sandbox",
 "steps": [
   {"name": "bundle", "command": "bundle install"},
   {"name": "db_prepare", "command": "bin/rails db:prepare"}
 ],
 "manifest": {"command": "bin/rails action_agent:sandbox:manifest"},
 "start": {"command": "exec bin/rails server -b 127.0.0.1 -p \$PORT"},
 "start_url": "/up"}
EOF
	chmod 600 "$w/boot/spec.json"
	observe "$port" >"$w/accept" &
	OBSERVER=$!
	t0=$(ns)
	env -i PATH=/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 SANDBOX_SESSION_ID=bench0001 \
		"$BOOT" --spec "$w/boot/spec.json" --cache-root "$TMP/cache" >/dev/null 2>"$w/err" || {
		cat "$w/err" >&2
		exit 1
	}
	t1=$(ns)
	wait "$OBSERVER"
	OBSERVER=
	accept=$(cat "$w/accept")
	cp "$w/boot/state.json" "$TMP/timeline.$1"
	"$BOOT" --stop --grace 1000 --spec "$w/boot/spec.json" >/dev/null 2>&1 || true
	echo "$(((t1 - t0) / 1000000)) $(((t1 - accept) / 1000))"
}

: >"$TMP/hand"
: >"$TMP/engine"
# One of each first, outside the figures: the page cache and Ruby's own caches warm up.
engine 0 >/dev/null
by_hand 0 >/dev/null
for i in $(seq "$RUNS"); do
	engine "$i" >>"$TMP/engine"
	by_hand "$i" >>"$TMP/hand"
done
fs=$(findmnt -n -o FSTYPE --target "$TMP" 2>/dev/null | head -1)
fs=${fs:-$(stat -f -c %T "$TMP")}
python3 - "$RUNS" "$BOOT" "$fs" "$TMP/engine" "$TMP/hand" "$TMP"/timeline.[1-9]* <<'PY'
import json, sys
sys.path.insert(0, "bench")
from state_phases import median as med, phase_parts
runs, boot, fs = sys.argv[1], sys.argv[2], sys.argv[3]
del sys.argv[3]
rows = lambda f: [tuple(int(x) for x in l.split()) for l in open(f)]
eng, hand = rows(sys.argv[3]), rows(sys.argv[4])
build = "static build" if boot.startswith("build-static/") else "dynamic build"
build += ", workspace on " + fs
ew, hw = med([r[0] for r in eng]), med([r[0] for r in hand])
et, ht = med([r[1] for r in eng]) / 1000, med([r[1] for r in hand]) / 1000
over = med([e[0] - h[0] for e, h in zip(eng, hand)])
tl = [json.load(open(f)) for f in sys.argv[5:]]
engine_ms = sorted(d["engine_ms"] for d in tl)
app_ms = med([d["app_ms"] for d in tl])
print("Rails boot benchmark, examples/rails-app in the spec shape, %s runs interleaved, medians"
      % runs)
print("  by hand (bundle, db:prepare, manifest, server until the MCP path answers)  %6d ms" % hw)
print("  sandbox-app-boot --spec (the same, then start_url and runtime.json)        %6d ms" % ew)
print("  boot minus by hand, pair by pair                                           %+6d ms" % over)
print("  port first accepting -> boot exits ready %7.1f ms; by hand -> MCP answers %7.1f ms"
      % (et, ht))
print("  the boots' state.json: the app's commands %d ms, the engine's own %g ms (min %g, max %g)"
      % (app_ms, med(engine_ms), engine_ms[0], engine_ms[-1]))
parts = phase_parts(tl)
print("  phases, medians in ms: " + ", ".join(parts))
print("figure: a Rails 6.1 boot in the spec shape against the same commands by hand, interleaved "
      "(examples/rails-app, fresh workspaces, %s, median of %s) | %d ms against %d ms (%+d ms a "
      "pair); port accepting -> ready %.1f ms against %.1f ms by hand to the MCP answer; the "
      "engine's own time %g ms (by phase: %s) | "
      % (build, runs, ew, hw, over, et, ht, med(engine_ms), ", ".join(parts)))
PY
