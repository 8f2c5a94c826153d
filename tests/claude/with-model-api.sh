#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Starts the stand-in model API (model_api.py), runs a command against it, stops it:
#
#   tests/claude/with-model-api.sh SCRIPT.json REQUESTS.jsonl COMMAND [ARGS...]
#
# The command gets ANTHROPIC_BASE_URL=http://127.0.0.1:PORT (and MODEL_API_PORT) added to the
# environment it is given, so it can be run under `env -i ...` with exactly the variables a test
# chooses. Meant to run inside tests/claude/run-in-netns.sh, so the port is private. The
# stand-in's stderr goes to REQUESTS.jsonl.stderr. The exit status is the command's.
set -u
[ $# -ge 3 ] || { echo "usage: with-model-api.sh SCRIPT REQUESTS COMMAND [ARGS...]" >&2; exit 2; }
script=$1 requests=$2
shift 2
here=$(cd "$(dirname "$0")" && pwd)
portfile=$(mktemp "${requests}.port.XXXXXX")

/usr/bin/python3 "$here/model_api.py" --script "$script" --log "$requests" --port 0 \
	</dev/null >"$portfile" 2>"$requests.stderr" &
api=$!
stop_api() {
	kill -TERM "$api" 2>/dev/null
	wait "$api" 2>/dev/null
	rm -f "$portfile"
}
port=
for _ in $(seq 1 200); do
	port=$(head -1 "$portfile" 2>/dev/null)
	[ -n "$port" ] && break
	kill -0 "$api" 2>/dev/null || break
	sleep 0.025
done
if [ -z "$port" ]; then
	echo "with-model-api.sh: the stand-in did not start:" >&2
	cat "$requests.stderr" >&2
	stop_api
	exit 125
fi
trap 'stop_api' EXIT
trap 'exit 143' TERM
ANTHROPIC_BASE_URL=http://127.0.0.1:$port MODEL_API_PORT=$port "$@"
