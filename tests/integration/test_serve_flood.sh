#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# An unauthenticated connection flood against `sandbox-agent serve` (tests/data/hostile/
# conn_flood.py: 1,500 connections that never send a byte, reopened as the daemon closes them)
# with the daemon at a descriptor limit of 1,024: legitimate hellos still succeed, the daemon
# holds a bounded number of descriptors, and its log stays small. On a unix socket (as root):
# the daemon's handling of unauthenticated connections is the same for every transport.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
export HOME=$TMP/home
mkdir -p "$HOME"

"$CTL" keygen >/dev/null 2>&1 || die "keygen failed"
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
SOCK=$TMP/agent.sock
prlimit --nofile=1024:1024 "$AGENT" serve --unix "$SOCK" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/state" \
	>"$TMP/agent.log" 2>&1 &
AGENT_PID=$!
on_exit "kill $AGENT_PID"
wait_socket "$SOCK" || die "the daemon did not start: $(cat "$TMP/agent.log")"

hello() { "$CTL" --timeout 10 hello --connect "unix:$SOCK" --accept-new-guest-key >/dev/null 2>"$TMP/hello.err" </dev/null; }
hello || die "hello before the flood failed: $(cat "$TMP/hello.err")"

echo "--- 1,500 idle connections held for 20 s"
python3 "$ROOT/tests/data/hostile/conn_flood.py" "$SOCK" 1500 20 >"$TMP/flood.out" 2>&1 &
FLOOD_PID=$!
on_exit "kill $FLOOD_PID"
# Until the flood has opened 3,000 connections (more than the daemon's 1,024 descriptors).
for _ in $(seq 150); do
	n=$(tail -1 "$TMP/flood.out" 2>/dev/null | awk '{print $2}')
	[ "${n:-0}" -ge 3000 ] && break
	sleep 0.1
done
log "flood: $(tail -1 "$TMP/flood.out")"
ok=0
for i in 1 2 3 4 5; do
	if hello; then ok=$((ok + 1)); else log "hello $i: $(tail -1 "$TMP/hello.err")"; fi
done
fds=$(ls /proc/$AGENT_PID/fd | wc -l)
log "$ok of 5 hellos succeeded during the flood; the daemon holds $fds descriptors"
check "every hello during the flood succeeds" [ "$ok" -eq 5 ]
check "the daemon holds at most 300 descriptors" [ "$fds" -le 300 ]
kill "$FLOOD_PID" 2>/dev/null
wait "$FLOOD_PID" 2>/dev/null
size=$(stat -c %s "$TMP/agent.log")
log "the daemon's log: $size bytes"
check "the daemon's log stays under 256 KiB" [ "$size" -le 262144 ]
check "the daemon still answers after the flood" hello
finish
