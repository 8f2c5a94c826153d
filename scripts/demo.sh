#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make demo`: boots the bundled Rails example the way the platform does and shows the result.
#   1. copies examples/rails-app to /tmp/sandbox-demo/app (a fresh workspace each time)
#   2. runs `sandbox-app-boot /tmp/sandbox-demo/app` with the platform's environment
#   3. prints runtime.json and the answers of GET /up and of the MCP endpoint
#   4. stops the app (`sandbox-app-boot --stop`); set KEEP=1 to leave it running
set -euo pipefail
cd "$(dirname "$0")/.."

BOOT=${BOOT:-build/sandbox-app-boot}
WS=${DEMO_WORKSPACE:-/tmp/sandbox-demo}
LISTEN=${DEMO_LISTEN:-0.0.0.0:8080}
PORT=${LISTEN##*:}

if [ "$(id -u)" -ne 0 ]; then
	echo "demo: run as root (the app runs as the unprivileged 'sandbox' user)" >&2
	exit 1
fi
id sandbox >/dev/null 2>&1 || useradd --system --create-home --home-dir /home/sandbox \
	--shell /bin/sh sandbox

[ -e "$WS" ] && "$BOOT" --discard "$WS/app" >/dev/null 2>&1 || true
rm -rf "$WS"
mkdir -p "$WS"
cp -a examples/rails-app "$WS/app"

echo "demo: booting $WS/app (Rails 6.1, sqlite3, no sandbox.yml: the defaults)"
start=$(date +%s.%N)
env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root LANG=C.UTF-8 \
	RAILS_ENV=sandbox SANDBOX_SESSION_ID=demo0001 \
	"$BOOT" --listen "$LISTEN" "$WS/app"
end=$(date +%s.%N)
printf 'demo: ready in %.1f s\n' "$(echo "$end - $start" | bc 2>/dev/null || python3 -c "print($end-$start)")"

echo "demo: $WS/runtime.json:"
cat "$WS/runtime.json"
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$WS/runtime.json")
path=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_path"])' "$WS/runtime.json")
echo "demo: GET http://127.0.0.1:$PORT/up -> $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://127.0.0.1:$PORT/up")"
echo "demo: GET $path without the token -> $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' "http://127.0.0.1:$PORT$path")"
echo "demo: GET $path with the token -> $(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' -H "Authorization: Bearer $token" "http://127.0.0.1:$PORT$path")"
"$BOOT" --status "$WS/app"
if [ "${KEEP:-0}" = 1 ]; then
	echo "demo: left running; stop it with: $BOOT --stop $WS/app"
else
	"$BOOT" --stop "$WS/app"
	echo "demo: stopped (logs kept in $WS/.sandbox/logs)"
fi
