#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Stops the server tests/git-server/start.sh started in DIR, by the pid it recorded.
set -u
dir=${1:?usage: stop.sh DIR}
[ -f "$dir/pid" ] || exit 0
pid=$(cat "$dir/pid")
if kill -0 "$pid" 2>/dev/null; then
	kill -TERM "$pid"
	for _ in $(seq 1 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.05
	done
	kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
fi
rm -f "$dir/pid"
exit 0
