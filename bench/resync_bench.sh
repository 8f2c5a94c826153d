#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Re-sync to a new ref against a fresh boot, through the real channel (sandbox-agent serve on
# a unix socket, sandbox-ctl), from the token-protected git test server (tests/git-server):
#   fresh    a new workspace: checkout (host fetch, pack streamed) + boot to ready
#   re-sync  the same workspace, app running: checkout of a new commit + boot again (the
#            running server is stopped, setup runs again with caches and databases kept),
#            after a sync (the fresh boot's writes on the disk, as they are by the time an
#            agent's change is re-synced)
# Both as a controller does them with one `sandbox-ctl boot --checkout`; after each re-sync,
# one more by two calls (`checkout`, then `boot`) is timed beside it.
# The app is examples/$EXAMPLE: node-app (the default: npm ci against the shared download
# cache) or rails-app (bundle install from the system gems, db:prepare). Prints medians of RUNS
# (default 5). AGENT and CTL name the binaries (build/: the dynamic build; `make figures` runs
# the static agent, as the guest image carries it). Needs root, lighttpd and the npm registry
# (first run fills the cache) or Rails.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
EXAMPLE=${EXAMPLE:-node-app}
AGENT=${AGENT:-build/sandbox-agent}
CTL=${CTL:-build/sandbox-ctl}
TMP=$(mktemp -d /tmp/sandbox-resync.XXXXXX)
chmod 755 "$TMP"
export HOME=$TMP/home
mkdir -p "$HOME"
cleanup() {
	# The apps first, through the daemon, then the daemon (an app stopped already answers 3:
	# not a failure of the bench)
	for ws in "$TMP"/ws*; do
		[ -d "$ws/app" ] && { "$CTL" --connect "unix:$TMP/agent.sock" stop --app-dir "$ws/app" \
			--grace 1 >/dev/null 2>&1 || true; }
	done
	[ -n "${AGENT_PID:-}" ] && kill "$AGENT_PID" 2>/dev/null
	tests/git-server/stop.sh "$TMP/server" >/dev/null 2>&1 || true
	[ -n "${KEEP:-}" ] || rm -rf "$TMP"
}
trap cleanup EXIT
id sandbox >/dev/null 2>&1 || useradd --system --create-home --shell /bin/sh sandbox

TOKEN="ghs_resync$(head -c 8 /dev/urandom | od -An -tx1 | tr -d ' \n')"
mkdir -p "$TMP/server"
url=$(tests/git-server/start.sh "$TMP/server" x-access-token <<<"$TOKEN")
SRC=$TMP/src
cp -a "examples/$EXAMPLE" "$SRC"
(cd "$SRC" && git init -q -b main && git add -A &&
	git -c user.name=b -c user.email=b@example.com commit -qm v0)
git clone -q --bare "$SRC" "$TMP/server/repos/app.git"
CLONE_URL=${url%/}/app.git

"$CTL" keygen >/dev/null
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
LISTEN=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$AGENT" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/agent.state" \
	--listen "127.0.0.1:$LISTEN" --grace 1000 --cache-root "$TMP/cache" >"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
for _ in $(seq 100); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
C=(--connect "unix:$TMP/agent.sock" --timeout 300)
"$CTL" "${C[@]}" --accept-new-guest-key hello >/dev/null

spec() { printf '{"repository":"b/app","ref":"%s","clone_url":"%s","username":"x-access-token","token":"%s"}' "$1" "$CLONE_URL" "$TOKEN"; }
# now_ms VAR: the wall clock in milliseconds, read by bash itself (EPOCHREALTIME): a `date` forked
# between the checkout and the boot would add its own 5-15 ms to every re-sync measured here.
now_ms() {
	local us=${EPOCHREALTIME//[!0-9]/}
	printf -v "$1" '%d' $((10#$us / 1000))
}
# push a new commit to the server's branch
commit() {
	echo "$1" >>"$SRC/CHANGES"
	(cd "$SRC" && git add CHANGES && git -c user.name=b -c user.email=b@example.com commit -qm "$1" &&
		git push -q "$TMP/server/repos/app.git" main)
}
# checkout + boot of WORKSPACE, by one `sandbox-ctl boot --checkout` (one process, one
# handshake), or with FORM=two by `sandbox-ctl checkout` then `sandbox-ctl boot`; appends
# "total checkout boot app engine ours" (milliseconds; checkout and boot 0 for one call) to FILE
cycle() {
	local app=$1/app t0 t1=0 t2 form=${3:-one}
	mkdir -p "$1"
	now_ms t0
	if [ "$form" = one ]; then
		spec main | "$CTL" "${C[@]}" boot --checkout - --shared-user --app-dir "$app" \
			--wait >"$TMP/boot.out" 2>&1 || {
			cat "$TMP/boot.out" >&2
			return 1
		}
	else
		spec main | "$CTL" "${C[@]}" checkout --spec - --app-dir "$app" >"$TMP/checkout.out"
		now_ms t1
		"$CTL" "${C[@]}" boot --shared-user --app-dir "$app" --wait >"$TMP/boot.out" 2>&1 || {
			cat "$TMP/boot.out" >&2
			return 1
		}
	fi
	now_ms t2
	local total=$((t2 - t0)) co=0
	[ "$form" = one ] || co=$((t1 - t0))
	# the app's own time in the boot (its commands from exec to exit) and the engine's
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(d.get("app_ms") or 0, d.get("engine_ms") or 0)' \
		"$1/.sandbox/state.json" >"$TMP/times"
	read -r app engine <"$TMP/times"
	echo "$total $co $((co ? total - co : 0)) $app $engine $((total - app))" >>"$2"
}
# The git server's part of a checkout: the two requests a fetch of the new commit makes (the
# ref advertisement, then the upload-pack POST that wants the commit and has nothing), made
# with curl from one process, the token in a configuration file (never in argv). curl's
# time_total of each, from the request's start to the answer's last byte, summed: what any
# client waits for on this server. Appends its milliseconds to FILE.
server_fetch() {
	local body=$TMP/upload-pack-request auth=$TMP/curl-auth line
	line="want $(git -C "$TMP/server/repos/app.git" rev-parse main) no-progress ofs-delta"
	{
		printf '%04x%s\n' $((${#line} + 5)) "$line"
		printf '00000009done\n'
	} >"$body"
	(umask 077 && printf 'header = "Authorization: Basic %s"\n' \
		"$(printf 'x-access-token:%s' "$TOKEN" | base64 -w0)" >"$auth")
	curl -sSf -K "$auth" -o /dev/null -w '%{time_total}\n' \
		"$CLONE_URL/info/refs?service=git-upload-pack" --next -f -K "$auth" -o /dev/null \
		-w '%{time_total}\n' -H 'Content-Type: application/x-git-upload-pack-request' \
		--data-binary "@$body" "$CLONE_URL/git-upload-pack" |
		awk '{t += $1} END {printf "%d\n", t * 1000}' >>"$1"
}
# median of column COL of FILE
median() { awk -v c="$2" '{print $c}' "$1" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# Warm the shared npm cache once, outside the figures.
cycle "$TMP/ws-warm" /dev/null
"$CTL" "${C[@]}" stop --app-dir "$TMP/ws-warm/app" --grace 1 >/dev/null

: >"$TMP/fresh"
: >"$TMP/resync"
: >"$TMP/resync-two"
: >"$TMP/server-fetch"
for i in $(seq "$RUNS"); do
	cycle "$TMP/ws$i" "$TMP/fresh"
	commit "change $i"
	# What the fresh boot wrote (npm ci: tens of MB) reaches the disk first, outside the time:
	# the kernel writes dirty pages back within 30 s (vm.dirty_expire_centisecs), long before
	# an agent's first change is re-synced, so a re-sync does not find them. Unsynced, the
	# checkout's syncfs() would write them out on the re-sync's clock (15-18 ms here).
	sync
	cycle "$TMP/ws$i" "$TMP/resync"
	# what this re-sync did (the two-call one below would overwrite both)
	cp "$TMP/ws$i/.sandbox/state.json" "$TMP/resync-state.json"
	(grep -h 'carried over\|not carried' "$TMP/agent.log" || true) | tail -1 >"$TMP/resync-carry"
	server_fetch "$TMP/server-fetch"
	# the same re-sync as a controller that calls checkout, then boot
	commit "change $i, two calls"
	sync
	cycle "$TMP/ws$i" "$TMP/resync-two" two
	"$CTL" "${C[@]}" stop --app-dir "$TMP/ws$i/app" --grace 1 >/dev/null
done
fresh=$(median "$TMP/fresh" 1)
resync=$(median "$TMP/resync" 1)
printf 're-sync benchmark, examples/%s over the channel, %d runs, medians (%s, %s)\n' "$EXAMPLE" \
	"$RUNS" "$AGENT" "$CTL"
printf '  fresh boot (new workspace: checkout + setup + manifest + server)   %6d ms (one boot --checkout)\n' \
	"$fresh"
printf '  re-sync to a new commit (checkout + boot again, app running)       %6d ms (one boot --checkout)\n' \
	"$resync"
printf '  the same re-sync by two calls (sandbox-ctl checkout, then boot)    %6d ms (checkout %d, boot %d)\n' \
	"$(median "$TMP/resync-two" 1)" "$(median "$TMP/resync-two" 2)" "$(median "$TMP/resync-two" 3)"
# Tenths of a percent: a floor to whole percents would print 25 for 25.9.
pct() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.1f", a * 100 / b}'; }
printf '  re-sync / fresh boot                                               %6s %%  (goal <= 25 %%)\n' \
	"$(pct "$resync" "$fresh")"
# What a re-sync cannot skip: the app's own manifest and server at the new commit (the boot
# contract runs both again on a changed checkout, one after the other). The rest is ours.
app_ms=$(median "$TMP/resync" 4)
ours=$(median "$TMP/resync" 6)
engine=$(median "$TMP/resync" 5)
printf '  of it the app'"'"'s own commands (manifest, then server, new commit)  %6d ms = %s %% of the fresh boot\n' \
	"$app_ms" "$(pct "$app_ms" "$fresh")"
printf '  of it ours (checkout, channel, engine: engine %d ms)               %6d ms = %s %% of the fresh boot\n' \
	"$engine" "$ours" "$(pct "$ours" "$fresh")"
# The checkout's fetch waits on the git server as any client does.
server=$(median "$TMP/server-fetch" 1)
printf '  of it the git server answering the checkout'"'"'s two requests (curl)  %6d ms\n' "$server"
# What the last re-sync did, from its state.json: each phase's status and time.
carried=$(sed 's/^.*: checkout of [^:]*: //' "$TMP/resync-carry")
python3 - "$TMP/resync-state.json" "$EXAMPLE" "$RUNS" "$fresh" "$resync" "$carried" \
	"$app_ms" "$ours" "$engine" "$server" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
example, runs, carried = sys.argv[2], sys.argv[3], sys.argv[6]
fresh, resync, app_ms, ours, engine, server = (int(a) for a in sys.argv[4:6] + sys.argv[7:11])
print("  last re-sync's phases (state.json):", ", ".join(
    "%s %s %s ms" % (s["name"], s["status"], s["duration_ms"]) for s in d["steps"]))
print("  carry-over:", carried)
skipped = [s["name"] for s in d["steps"] if s["status"] == "skipped"]
print("figure: examples/%s over the channel: a fresh workspace (checkout from the git server, "
      "setup, manifest, server; median of %s) | %.1f s | " % (example, runs, fresh / 1000))
print("figure: the same app re-synced to a new commit while it runs (checkout + boot again; "
      "the fresh boot's writes synced to disk first) | "
      "%.2f s = %.1f %% of the fresh boot; skipped: %s; %s; of it the app's own manifest and "
      "server at the new commit (which a re-sync runs again) %d ms = %.1f %%, ours (checkout, "
      "channel, engine %d ms) %d ms = %.1f %%, of which the git server's answers to the "
      "checkout %d ms | <= 25 %%"
      % (resync / 1000, resync * 100 / fresh, ", ".join(skipped) or "none", carried,
         app_ms, app_ms * 100 / fresh, engine, ours, ours * 100 / fresh, server))
PY
