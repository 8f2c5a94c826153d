#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs a command inside a fresh network namespace with only loopback, up:
#
#   tests/claude/run-in-netns.sh COMMAND [ARGS...]
#
# The command and everything it starts (the Claude Code CLI, the stand-in model API) can reach
# 127.0.0.1 inside the namespace and nothing else: no route leaves the machine, and nothing
# outside sees their ports. The namespace is made with `unshare --net` together with a PID
# namespace (and a private /proc): a small shell is its first process and runs the command; when
# the command ends that shell exits, the kernel kills whatever the command left behind in there,
# and the network namespace goes with its last process. Nothing is bind-mounted, so nothing
# outlives the command. Standard input, output and error are the caller's; the exit status is
# the command's (125 when the namespace could not be made). SIGTERM, SIGINT or SIGHUP to this
# script is passed on as SIGTERM to the command. As a non-root user the namespaces are made
# inside a user namespace (`unshare -r`).
set -u
[ $# -gt 0 ] || { echo "usage: run-in-netns.sh COMMAND [ARGS...]" >&2; exit 2; }

userns=()
[ "$(id -u)" -eq 0 ] || userns=(--map-root-user)

# The first process of the namespace: loopback up, then the command as its child (not exec'd:
# the first process of a PID namespace ignores signals it has no handler for, and its exit is
# what clears the namespace).
inner='
ip link set lo up || { echo "run-in-netns.sh: could not bring up loopback" >&2; exit 125; }
"$@" <&0 &
child=$!
# A trapped signal interrupts wait; wait again for the status (bash keeps it once reaped).
sig=0
trap "sig=1; kill -TERM $child 2>/dev/null" TERM INT HUP
while :; do
	sig=0
	wait "$child"
	rc=$?
	[ "$sig" -eq 1 ] || break
done
exit "$rc"
'

unshare "${userns[@]}" --net --pid --fork --mount-proc --kill-child=SIGTERM \
	bash -c "$inner" run-in-netns "$@" <&0 &
upid=$!

forward() {
	# unshare itself holds SIGTERM while it waits; the namespace's first process is its child.
	local c
	c=$(cat "/proc/$upid/task/$upid/children" 2>/dev/null)
	if [ -n "$c" ]; then
		kill -TERM "$c" 2>/dev/null
	else
		kill -KILL "$upid" 2>/dev/null
	fi
}
sig=0
trap 'sig=1; forward' TERM INT HUP

while :; do
	sig=0
	wait "$upid"
	rc=$?
	[ "$sig" -eq 1 ] || break
done
exit "$rc"
