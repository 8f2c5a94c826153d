#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Boots each example app in examples/ BY HAND, the way the boot contract describes (not through
# our engine), to prove the fixtures behave: a copy of the checkout, a scrubbed environment, an
# unprivileged user (nobody, when run as root), the setup / manifest / start commands run with
# `sh -c` in the checkout, a temporary manifest path and a free port on 127.0.0.1. Then:
# GET /up 200, the MCP path 401 without (or with a wrong) token, 405 to a GET with the token,
# POST initialize answered, the token reused by a second manifest run and after a server restart,
# nothing written outside the directories the app may write. Prints the time of each step.
#
# FIXTURES_KEEP=1 keeps the temporary directory (logs, checkouts) for a look afterwards.
# Exit 0 pass, 77 skip (Ruby/Rails or the npm registry unavailable; the reason is printed).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BASE58_TOKEN_RE='^aa_[1-9A-HJ-NP-Za-km-z]{32}$'
MCP_PATH=/action_agent/mcp

WORK=""
SERVER_PGID=""
TIMINGS=()

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

skip() {
	echo "SKIP: $*" >&2
	exit 77
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# group_alive PGID: a process of the group has not exited yet. An orphan that exited stays a
# zombie in the group until init reaps it, so kill -0 on the group is not the test.
group_alive() {
	local f stat
	if command -v ps >/dev/null; then
		# shellcheck disable=SC2009 # pgrep cannot filter out zombies
		ps -e -o pgid=,stat= | grep -qE "^ *$1 +[^Z]"
		return
	fi
	for f in /proc/[0-9]*/stat; do
		stat=$(cat "$f" 2>/dev/null) || continue
		stat=${stat##*) }
		read -r -a stat <<<"$stat"
		[ "${stat[2]}" = "$1" ] && [ "${stat[0]}" != Z ] && return 0
	done
	return 1
}

# stop_server [LABEL]: TERM to the server's process group, 10 s grace, then KILL.
stop_server() {
	local pgid=$SERVER_PGID t0
	[ -n "$pgid" ] || return 0
	SERVER_PGID=""
	t0=$(now_ms)
	kill -TERM -- "-$pgid" 2>/dev/null || return 0
	for _ in $(seq 100); do
		group_alive "$pgid" || break
		sleep 0.1
	done
	kill -KILL -- "-$pgid" 2>/dev/null || true
	wait "$pgid" 2>/dev/null || true
	[ -z "${1:-}" ] || TIMINGS+=("$1 $(($(now_ms) - t0)) ms")
}

cleanup() {
	stop_server
	if [ -n "${FIXTURES_KEEP:-}" ] && [ -n "$WORK" ]; then
		echo "kept $WORK (FIXTURES_KEEP is set)" >&2
	elif [ -n "$WORK" ] && [ -d "$WORK" ]; then
		chmod -R u+w "$WORK" 2>/dev/null || true
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT

command -v curl >/dev/null || skip "curl is not installed"
command -v setsid >/dev/null || skip "setsid is not installed"

WORK=$(mktemp -d /tmp/test_fixtures.XXXXXX)
chmod 755 "$WORK"

# The user the apps run as: nobody when we are root (root would ignore read-only permissions).
RUN_AS=()
AS_ROOT=0
if [ "$(id -u)" -eq 0 ]; then
	id nobody >/dev/null 2>&1 || skip "no 'nobody' user to run the apps as"
	RUN_AS=(setpriv --reuid=nobody --regid="$(id -g nobody)" --clear-groups --)
	AS_ROOT=1
fi

# give_user PATH...: make paths (recursively) writable by the app's user.
give_user() {
	if [ $AS_ROOT -eq 1 ]; then
		chown -R nobody:"$(id -g nobody)" "$@"
	else
		chmod -R u+w "$@"
	fi
}

# read_only_tree DIR: nothing in DIR writable by the app's user (afterwards give_user exceptions).
read_only_tree() {
	if [ $AS_ROOT -eq 1 ]; then
		chown -R root:root "$1"
		chmod -R go-w,go+rX "$1"
	else
		chmod -R a-w "$1"
	fi
}

# copy_checkout NAME DEST: the example as a checkout would hold it (tracked and untracked files,
# not the ignored ones a local run may have left behind).
copy_checkout() {
	local src="$ROOT/examples/$1" dest=$2
	mkdir -p "$dest"
	if git -C "$ROOT" rev-parse --git-dir >/dev/null 2>&1; then
		(cd "$src" && git ls-files -z --cached --others --exclude-standard . |
			tar --null -T - -cf -) | tar -C "$dest" -xf -
	else
		cp -a "$src/." "$dest/"
	fi
	[ -n "$(ls -A "$dest")" ] || fail "examples/$1 is empty"
}

# tree_sums DIR PRUNE...: checksums of every file in DIR except under the pruned subdirectories.
tree_sums() {
	local dir=$1 args=() p
	shift
	for p in "$@"; do args+=(-path "./$p" -prune -o); done
	(cd "$dir" && find . "${args[@]}" -type f -print0 | sort -z | xargs -0 -r sha256sum)
}

# App environment: what the engine hands a child, roughly (no RAILS_ENV, BUNDLE_*, secrets).
APP_ENV=()
set_app_env() {
	APP_ENV=(env -i "PATH=/usr/local/bin:/usr/bin:/bin" "HOME=$WORK/home" "LANG=C.UTF-8"
		"ACTION_AGENT_SANDBOX_SESSION_ID=fixtures-test" "$@")
}

# run_step LABEL LOG DIR CMD [VAR=VALUE...]: one command the way the engine runs it, timed.
run_step() {
	local label=$1 log=$2 dir=$3 cmd=$4 t0 rc=0
	shift 4
	t0=$(now_ms)
	(cd "$dir" && setsid "${RUN_AS[@]}" "${APP_ENV[@]}" "$@" sh -c "$cmd") \
		</dev/null >>"$log" 2>&1 || rc=$?
	TIMINGS+=("$label $(($(now_ms) - t0)) ms")
	if [ $rc -ne 0 ]; then
		tail -n 30 "$log" >&2
		fail "$label ('$cmd') exited $rc"
	fi
}

# start_server LOG DIR CMD PORT: detached in its own process group; SERVER_PGID is its pid.
start_server() {
	local log=$1 dir=$2 cmd=$3 port=$4
	cd "$dir"
	setsid "${RUN_AS[@]}" "${APP_ENV[@]}" "PORT=$port" sh -c "$cmd" </dev/null >>"$log" 2>&1 &
	SERVER_PGID=$!
	cd - >/dev/null
}

# alive PID: the process exists and has not exited (a zombie has).
alive() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat:0:1}" != Z ]
}

# wait_up LABEL LOG PORT: poll GET /up until 200 (bounded; fails at once if the server exits).
wait_up() {
	local label=$1 log=$2 port=$3 t0 code="" deadline
	t0=$(now_ms)
	deadline=$((t0 + 120000))
	while :; do
		if ! alive "$SERVER_PGID"; then
			tail -n 30 "$log" >&2
			fail "$label: the server exited before /up answered"
		fi
		code=$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time 2 \
			"http://127.0.0.1:$port/up" || true)
		[ "$code" = 200 ] && break
		if [ "$(now_ms)" -gt "$deadline" ]; then
			tail -n 30 "$log" >&2
			fail "$label: /up never answered 200 (last status '$code')"
		fi
		sleep 0.05
	done
	TIMINGS+=("$label $(($(now_ms) - t0)) ms")
}

# http METHOD URL [curl args...]: prints "STATUS\nBODY"; headers go to $WORK/headers.
http() {
	local method=$1 url=$2
	shift 2
	curl -s --noproxy '*' --max-time 10 -X "$method" -D "$WORK/headers" -o "$WORK/body" \
		-w '%{http_code}' "$@" "$url" || echo "curl-failed"
}

# check_mcp NAME PORT TOKEN: the MCP endpoint's authentication and its initialize answer.
check_mcp() {
	local name=$1 port=$2 token=$3 url="http://127.0.0.1:$2$MCP_PATH" code wrong
	wrong="${token:0:34}x"
	[ "$wrong" != "$token" ] || wrong="${token:0:34}y"
	code=$(http GET "$url" -H 'Accept: application/json')
	[ "$code" = 401 ] || fail "$name: GET $MCP_PATH without a token answered $code, not 401"
	code=$(http GET "$url" -H "Authorization: Bearer $wrong")
	[ "$code" = 401 ] || fail "$name: GET $MCP_PATH with a wrong token answered $code, not 401"
	code=$(http POST "$url" -H 'Authorization: Bearer' -H 'Content-Type: application/json' \
		--data '{"jsonrpc":"2.0","id":1,"method":"initialize"}')
	[ "$code" = 401 ] || fail "$name: POST $MCP_PATH with an empty bearer answered $code"
	code=$(http GET "$url" -H "Authorization: Bearer $token" -H 'Accept: application/json')
	[ "$code" = 405 ] || fail "$name: GET $MCP_PATH with the token answered $code, not 405"
	grep -qi '^allow: *POST' "$WORK/headers" || fail "$name: the 405 names no 'Allow: POST'"
	code=$(http POST "$url" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		-H 'Accept: application/json, text/event-stream' \
		--data '{"jsonrpc":"2.0","id":1,"method":"initialize"}')
	[ "$code" = 200 ] || fail "$name: POST initialize answered $code: $(cat "$WORK/body")"
	json_check "$name" "$WORK/body" \
		'd["jsonrpc"] == "2.0" && d["id"] == 1 && d["result"]["serverInfo"]["name"] == ARGV_NAME' \
		"$name"
	code=$(http POST "$url" -H "Authorization: Bearer $token" -H 'Content-Type: application/json' \
		--data '{"jsonrpc":"2.0","id":7,"method":"no/such/method"}')
	[ "$code" = 200 ] || fail "$name: POST of an unknown method answered $code"
	json_check "$name" "$WORK/body" 'd["id"] == 7 && d["error"]["code"] == -32601' "$name"
}

# json_check NAME FILE EXPR ARG: EXPR (valid Ruby and JavaScript, over d and ARGV_NAME) holds.
JSON_RUNTIME=""
json_check() {
	local name=$1 file=$2 expr=$3 arg=$4 ok
	case "$JSON_RUNTIME" in
	ruby)
		ok=$(ruby -rjson -e "ARGV_NAME = ARGV[1]; d = JSON.parse(File.read(ARGV[0]));
			puts((begin; $expr; rescue StandardError; false; end) ? 'yes' : 'no')" \
			"$file" "$arg" 2>/dev/null || echo error)
		;;
	node)
		ok=$(node -e "const ARGV_NAME = process.argv[2];
			const d = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
			let r = false; try { r = ($expr); } catch (e) {}
			console.log(r ? 'yes' : 'no')" "$file" "$arg" 2>/dev/null || echo error)
		;;
	esac
	[ "$ok" = yes ] || fail "$name: $(head -c 300 "$file") does not satisfy $expr"
}

# json_field FILE KEY: a top-level string field.
json_field() {
	case "$JSON_RUNTIME" in
	ruby) ruby -rjson -e 'print JSON.parse(File.read(ARGV[0]))[ARGV[1]].to_s' "$1" "$2" ;;
	node) node -e 'process.stdout.write(String(JSON.parse(require("fs").readFileSync(
		process.argv[1], "utf8"))[process.argv[2]] ?? ""))' "$1" "$2" ;;
	esac
}

# run_manifest LABEL LOG DIR CMD MANIFEST PORT: remove, run, validate; sets TOKEN.
TOKEN=""
run_manifest() {
	local label=$1 log=$2 dir=$3 cmd=$4 manifest=$5 port=$6 token mode
	rm -f "$manifest"
	run_step "$label" "$log" "$dir" "$cmd" "PORT=$port"
	[[ -f "$manifest" && ! -L "$manifest" ]] || fail "$label: no manifest written at $manifest"
	mode=$(stat -c %a "$manifest")
	[ "$mode" = 600 ] || fail "$label: the manifest has mode $mode, not 600"
	json_check "$label" "$manifest" "d[\"mcp_path\"] == \"$MCP_PATH\"" ""
	token=$(json_field "$manifest" mcp_token)
	[[ "$token" =~ $BASE58_TOKEN_RE ]] || fail "$label: mcp_token '$token' is not aa_ + 32 base58"
	TOKEN=$token
}

# manifest_needs_target LABEL DIR CMD: without ACTION_AGENT_SANDBOX_MANIFEST the manifest
# command fails and names the variable.
manifest_needs_target() {
	local label=$1 dir=$2 cmd=$3 out rc=0 e
	local saved=("${APP_ENV[@]}")
	APP_ENV=()
	for e in "${saved[@]}"; do
		[[ "$e" == ACTION_AGENT_SANDBOX_MANIFEST=* ]] || APP_ENV+=("$e")
	done
	out=$(cd "$dir" && "${RUN_AS[@]}" "${APP_ENV[@]}" PORT=1 sh -c "$cmd" </dev/null 2>&1) || rc=$?
	APP_ENV=("${saved[@]}")
	[ $rc -ne 0 ] || fail "$label: succeeded without ACTION_AGENT_SANDBOX_MANIFEST"
	[[ "$out" == *ACTION_AGENT_SANDBOX_MANIFEST* ]] ||
		fail "$label: its failure does not name ACTION_AGENT_SANDBOX_MANIFEST: $out"
}

free_port() {
	case "$JSON_RUNTIME" in
	ruby) ruby -rsocket -e 's = TCPServer.new("127.0.0.1", 0); print s.addr[1]; s.close' ;;
	node) node -e 'const s = require("net").createServer().listen(0, "127.0.0.1", () => {
		process.stdout.write(String(s.address().port)); s.close(); })' ;;
	esac
}

mkdir -p "$WORK/home"
give_user "$WORK/home"

# ---------------------------------------------------------------------------------------------
# Rails 6.1 from Debian's packages, engine defaults (no .activeagents/sandbox.yml).
# ---------------------------------------------------------------------------------------------
# The engine's defaults for an app without .activeagents/sandbox.yml.
# shellcheck disable=SC2016 # $PORT is expanded by the app's shell
RAILS_START='bin/rails server -b 127.0.0.1 -p $PORT'

boot_rails() {
	local top="$WORK/rails" app="$WORK/rails/app" log="$WORK/rails/boot.log" port token
	local manifest="$WORK/rails/run/runtime.json" before after
	local cmd="bin/rails action_agent:sandbox:manifest"
	JSON_RUNTIME=ruby
	mkdir -p "$top/ws/db" "$top/run"
	copy_checkout rails-app "$app"
	[ ! -e "$app/.activeagents/sandbox.yml" ] || fail "rails-app should boot on the defaults"
	read_only_tree "$app"
	give_user "$app/tmp" "$app/log" "$app/db" "$top/ws" "$top/run"
	before=$(tree_sums "$app" tmp log db)
	cp "$app/db/schema.rb" "$top/schema.rb.orig"

	set_app_env "DATABASE_URL=sqlite3:$top/ws/db/development.sqlite3" SKIP_TEST_DATABASE=1 \
		"ACTION_AGENT_SANDBOX_MANIFEST=$manifest"
	run_step "rails: bundle install" "$log" "$app" "bundle install"
	run_step "rails: bin/rails db:prepare" "$log" "$app" "bin/rails db:prepare"
	[ -s "$top/ws/db/development.sqlite3" ] ||
		fail "rails: DATABASE_URL=sqlite3:/abs/path was not honoured (no database file)"
	[ ! -e "$app/db/development.sqlite3" ] || fail "rails: a database was created in the checkout"

	port=$(free_port)
	run_manifest "rails: manifest" "$log" "$app" "$cmd" "$manifest" "$port"
	token=$TOKEN
	run_manifest "rails: manifest again" "$log" "$app" "$cmd" "$manifest" "$port"
	[ "$token" = "$TOKEN" ] || fail "rails: the second manifest run minted a new token"
	manifest_needs_target "rails: manifest" "$app" "$cmd"

	start_server "$log" "$app" "$RAILS_START" "$port"
	wait_up "rails: server to /up" "$log" "$port"
	# Development's host authorization answers 403 to hosts it does not know.
	[ "$(http GET "http://127.0.0.1:$port/up" -H 'Host: 10.20.30.40:8080')" = 200 ] ||
		fail "rails: /up refuses the Host header of an IP address (config.hosts)"
	[ "$(http GET "http://127.0.0.1:$port/up" -H 'Host: app.sandbox.example:8080')" = 200 ] ||
		fail "rails: /up refuses an unknown host name (config.hosts)"
	check_mcp rails-app "$port" "$token"

	# --restart: stop, manifest again, start again; the same token still authenticates.
	stop_server "rails: stop server"
	port=$(free_port)
	run_manifest "rails: manifest on restart" "$log" "$app" "$cmd" "$manifest" "$port"
	[ "$token" = "$TOKEN" ] || fail "rails: the manifest after a restart minted a new token"
	start_server "$log" "$app" "$RAILS_START" "$port"
	wait_up "rails: restarted server to /up" "$log" "$port"
	check_mcp rails-app "$port" "$token"
	stop_server "rails: stop restarted server"

	after=$(tree_sums "$app" tmp log db)
	[ "$before" = "$after" ] || fail "rails: files outside tmp/ log/ db/ changed:
$(diff <(echo "$before") <(echo "$after"))"
	cmp -s "$top/schema.rb.orig" "$app/db/schema.rb" ||
		fail "rails: db/schema.rb as dumped differs from the committed one"
	echo "ok: rails-app"
}

# ---------------------------------------------------------------------------------------------
# Node 20 + express 4 from the npm registry, with .activeagents/sandbox.yml.
# ---------------------------------------------------------------------------------------------
NODE_SETUP='npm ci --prefer-offline --no-audit --no-fund'
NODE_MANIFEST='node bin/manifest.js'
NODE_START='node server.js'

boot_node() {
	local top="$WORK/node" app="$WORK/node/app" log="$WORK/node/boot.log" port token
	local manifest="$WORK/node/run/runtime.json" yml before after mode
	JSON_RUNTIME=node
	mkdir -p "$top/run"
	copy_checkout node-app "$app"
	yml="$app/.activeagents/sandbox.yml"
	# The commands and env this test runs are the ones the app's sandbox.yml declares.
	grep -qFx "  - $NODE_SETUP" "$yml" || fail "node: sandbox.yml lacks setup '$NODE_SETUP'"
	grep -qFx "manifest: $NODE_MANIFEST" "$yml" || fail "node: sandbox.yml lacks the manifest"
	grep -qFx "start: $NODE_START" "$yml" || fail "node: sandbox.yml lacks the start command"
	grep -qFx "  NODE_ENV: development" "$yml" || fail "node: sandbox.yml lacks env NODE_ENV"
	grep -qFx "  APP_GREETING: hello" "$yml" || fail "node: sandbox.yml lacks env APP_GREETING"
	give_user "$app" "$top/run"
	before=$(tree_sums "$app" node_modules data)

	set_app_env "ACTION_AGENT_SANDBOX_MANIFEST=$manifest" NODE_ENV=development APP_GREETING=hello
	run_step "node: $NODE_SETUP" "$log" "$app" "$NODE_SETUP"
	[ -f "$app/node_modules/express/package.json" ] || fail "node: npm ci installed no express"

	port=$(free_port)
	run_manifest "node: manifest" "$log" "$app" "$NODE_MANIFEST" "$manifest" "$port"
	token=$TOKEN
	run_manifest "node: manifest again" "$log" "$app" "$NODE_MANIFEST" "$manifest" "$port"
	[ "$token" = "$TOKEN" ] || fail "node: the second manifest run minted a new token"
	manifest_needs_target "node: manifest" "$app" "$NODE_MANIFEST"
	mode=$(stat -c %a "$app/data/api-key.json")
	[ "$mode" = 600 ] || fail "node: data/api-key.json has mode $mode, not 600"

	start_server "$log" "$app" "$NODE_START" "$port"
	wait_up "node: server to /up" "$log" "$port"
	check_mcp node-app "$port" "$token"
	[ "$(http GET "http://127.0.0.1:$port/env-check?present=ACTION_AGENT_SANDBOX_MANIFEST,NO_SUCH_VAR_X")" = 200 ] ||
		fail "node: /env-check did not answer 200"
	json_check node "$WORK/body" "d.env.NODE_ENV === 'development' && \
		d.env.APP_GREETING === 'hello' && d.env.PORT === '$port' && \
		d.present.ACTION_AGENT_SANDBOX_MANIFEST === true && d.present.NO_SUCH_VAR_X === false" ""

	stop_server "node: stop server"
	port=$(free_port)
	run_manifest "node: manifest on restart" "$log" "$app" "$NODE_MANIFEST" "$manifest" "$port"
	[ "$token" = "$TOKEN" ] || fail "node: the manifest after a restart minted a new token"
	start_server "$log" "$app" "$NODE_START" "$port"
	wait_up "node: restarted server to /up" "$log" "$port"
	check_mcp node-app "$port" "$token"
	stop_server "node: stop restarted server"

	after=$(tree_sums "$app" node_modules data)
	[ "$before" = "$after" ] || fail "node: files outside node_modules/ data/ changed:
$(diff <(echo "$before") <(echo "$after"))"
	echo "ok: node-app"
}

report_timings() {
	local t
	for t in "${TIMINGS[@]}"; do echo "  $t"; done
	TIMINGS=()
}

# Each app that cannot run here is skipped with its reason; the others still run.
SKIPPED=()
if ! command -v ruby >/dev/null || ! command -v bundle >/dev/null ||
	! ruby -e 'gem "railties", "~> 6.1.7"; gem "sqlite3"; gem "puma"' 2>/dev/null; then
	SKIPPED+=("rails-app: Ruby with Debian's Rails 6.1 is not installed (apt-get install ruby
	  ruby-rails ruby-sqlite3 bundler sqlite3 puma ruby-byebug ruby-web-console)")
else
	boot_rails
	report_timings
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	SKIPPED+=("node-app: node and npm are not installed")
elif ! ping_out=$(timeout 30 npm ping 2>&1); then
	SKIPPED+=("node-app: the npm registry is unreachable ($(echo "$ping_out" | tail -n 1))")
else
	boot_node
	report_timings
fi

if [ ${#SKIPPED[@]} -gt 0 ]; then
	printf 'skipped %s\n' "${SKIPPED[@]}" >&2
	exit 77
fi
