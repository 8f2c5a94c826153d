#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `sandbox-agent serve` and `sandbox-agent keygen` from the outside: the command line, the
# guest key file, READY=1 to $NOTIFY_SOCKET, the unix socket's peer check (root only), an
# unauthenticated peer cut off at the deadline, SIGTERM. The protocol itself, boots included,
# is driven by tests/unit/test_serve.c with a host written on common/channel.h. Never AF_VSOCK
# here (docs/test-machines.md): every daemon gets an explicit transport.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"

echo "--- keygen"
out=$("$AGENT" keygen --key "$TMP/guest_key" 2>"$TMP/keygen.err")
check "keygen exits 0" [ $? -eq 0 ]
check "prints a public key line" [ "${out%% *}" = ssh-ed25519 ]
check "the key file is 0600" [ "$(stat -c %a "$TMP/guest_key")" = 600 ]
check "the public half is beside it" grep -qF "${out%% sandbox-agent@*}" "$TMP/guest_key.pub"
check "says it made a key" grep -q "made a new key" "$TMP/keygen.err"
again=$("$AGENT" keygen --key "$TMP/guest_key" 2>/dev/null)
check "a second keygen prints the same key" [ "$again" = "$out" ]
chmod 644 "$TMP/guest_key"
"$AGENT" keygen --key "$TMP/guest_key" >/dev/null 2>&1
check "a key file others can read is refused" [ $? -ne 0 ]
chmod 600 "$TMP/guest_key"

echo "--- the command line"
"$AGENT" serve --vsock 0 >/dev/null 2>&1
check "--vsock 0 is refused (exit 2)" [ $? -eq 2 ]
"$AGENT" serve --stdio --unix "$TMP/x.sock" >/dev/null 2>&1
check "--stdio with another transport is refused (exit 2)" [ $? -eq 2 ]
"$AGENT" serve --bogus >/dev/null 2>&1
check "an unknown option is refused (exit 2)" [ $? -eq 2 ]
check "--help names the vsock port" sh -c "'$AGENT' serve --help | grep -q 7340"

echo "--- a daemon on a unix socket"
mkdir -p "$TMP/ak.d"
: >"$TMP/ak"
SOCK=$TMP/agent.sock
NOTIFY=$TMP/notify.sock
python3 - "$NOTIFY" >"$TMP/notify.out" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(30)
try:
    print(s.recv(256).decode())
except OSError:
    print("nothing")
PY
notify_pid=$!
on_exit "kill $notify_pid"
for _ in $(seq 100); do [ -S "$NOTIFY" ] && break; sleep 0.05; done
NOTIFY_SOCKET=$NOTIFY "$AGENT" serve --unix "$SOCK" --authorized-keys "$TMP/ak" \
	--authorized-keys-dir "$TMP/ak.d" --key "$TMP/guest_key" --state-dir "$TMP/state" \
	--handshake-timeout 1000 2>"$TMP/daemon.log" &
daemon=$!
on_exit "kill -9 $daemon"
wait "$notify_pid"
check "READY=1 reached \$NOTIFY_SOCKET" grep -q "READY=1" "$TMP/notify.out"
check "the socket is 0600" [ "$(stat -c %a "$SOCK")" = 600 ]
check "the state directory is 0700" [ "$(stat -c %a "$TMP/state")" = 700 ]
check "the daemon makes no core files" grep -q "^Max core file size *0 *0 " "/proc/$daemon/limits"

# peer_read USER: connect as USER, send a byte, print what came back before the close.
peer_read() {
	runuser -u "$1" -- python3 - "$SOCK" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.settimeout(20)
try:
    s.sendall(b"\x00")
    print(len(s.recv(4096)))
except (BrokenPipeError, ConnectionResetError):
    print(0)  # closed before our byte went out: closed all the same
except OSError as e:
    print("error", e)
PY
}
# The socket is 0600; the peer check behind it still holds when a mode is loosened.
chmod 666 "$SOCK"
r=$(peer_read sandbox 2>&1)
check "a peer that is not root is closed at once ($r)" [ "$r" = 0 ]
check "and the refusal is logged" grep -q "only root may connect" "$TMP/daemon.log"
check "a root peer that never authenticates is closed at the deadline" [ "$(peer_read root)" = 0 ]
check "and that is logged" grep -q "did not complete within 1000 ms" "$TMP/daemon.log"

kill -TERM "$daemon"
wait "$daemon"
check "SIGTERM: exit 0" [ $? -eq 0 ]
check "the socket is removed" [ ! -e "$SOCK" ]
finish
