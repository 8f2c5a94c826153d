#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Two apps in one guest (docs/design.md, "Two apps in one guest"): every app of a daemon runs as
# the same user, so a second app could read the first one's environment (its
# SECRET_KEY_BASE, its passed secrets, its session id) from /proc and its files. The daemon
# refuses to boot a second app while another one's workspace is there, unless the caller
# accepts one user for all (`sandbox-ctl boot --shared-user`). App B's setup here is the
# attack: it searches every process it can read for A's secret and writes what it finds.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
ensure_sandbox_user || skip "cannot create the sandbox user"
export HOME=$TMP/home
mkdir -p "$HOME"
SECRET=sk-ant-two-apps-$$-0123456789abcdef

"$CTL" keygen >/dev/null 2>&1 || die "keygen failed"
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
SOCK=$TMP/agent.sock
"$AGENT" serve --unix "$SOCK" --authorized-keys "$TMP/authorized_keys" --authorized-keys-dir '' \
	--key "$TMP/guest_key" --state-dir "$TMP/state" --no-forward --grace 500 \
	--cache-root "$TMP/cache" >"$TMP/agent.log" 2>&1 &
on_exit "kill $!"
for _ in $(seq 100); do [ -S "$SOCK" ] && break; sleep 0.1; done
[ -S "$SOCK" ] || die "the daemon did not start: $(cat "$TMP/agent.log")"
C="--timeout 60 --connect unix:$SOCK --accept-new-guest-key"

# app NAME SETUP: a pyapp workspace $TMP/NAME pushed over the channel; prints the app dir.
app() {
	local src=$TMP/src-$1 dir=$TMP/$1/app
	cp -a "$ROOT/tests/data/pyapp" "$src"
	cp "$ROOT/tests/data/hostile/find_secret.sh" "$src/"
	printf 'setup: %s\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
		"$2" >"$src/.activeagents/sandbox.yml"
	mkdir -p "$TMP/$1"
	"$CTL" $C push "$src" --app-dir "$dir" >/dev/null 2>"$TMP/push.err" || die "push failed: $(cat "$TMP/push.err")"
	echo "$dir"
}

echo "--- app A, with a passed secret"
A=$(app a '["echo a"]')
# Registered here, not in app(): a command substitution's on_exit would be lost with its subshell.
on_exit "'$BOOT' --stop --grace 500 '$A'"
printf '{"ANTHROPIC_API_KEY": "%s"}' "$SECRET" | "$CTL" $C secrets put --scope boot ANTHROPIC_API_KEY >/dev/null 2>&1 ||
	die "secrets put failed"
"$CTL" $C boot --app-dir "$A" --pass-env ANTHROPIC_API_KEY --wait >"$TMP/a.out" 2>"$TMP/a.err"
check "app A is ready" [ "$?" -eq 0 ]
check "A's server holds the secret (the caller passed it)" [ -n "$(procs_holding "$SECRET")" ]

echo "--- app B searches the guest for A's secret"
B=$(app b "[\"sh find_secret.sh $SECRET >found.txt\"]")
on_exit "'$BOOT' --stop --grace 500 '$B'"
"$CTL" $C boot --app-dir "$B" --wait >"$TMP/b.out" 2>"$TMP/b.err"
RC=$?
log "app B: exit $RC, $(tail -1 "$TMP/b.err")"
check "B is refused (exit 2)" [ "$RC" -eq 2 ]
check "the refusal says why and what to do" grep -q -- "--shared-user" "$TMP/b.err"
check "B's setup found nothing of A's" [ ! -s "$B/found.txt" ]
[ -s "$B/found.txt" ] && log "found: $(head -c 200 "$B/found.txt")"

echo "--- the caller accepts one user for all"
"$CTL" $C boot --app-dir "$B" --shared-user --wait >"$TMP/b.out" 2>"$TMP/b.err"
check "B boots with --shared-user" [ "$?" -eq 0 ]

echo "--- after A is discarded, B needs no --shared-user"
"$CTL" $C stop --app-dir "$B" >/dev/null 2>&1
"$CTL" $C stop --app-dir "$A" --discard >/dev/null 2>&1
"$CTL" $C boot --app-dir "$B" --wait >"$TMP/b.out" 2>"$TMP/b.err"
RC=$?
check "B boots alone" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$TMP/b.err"
"$CTL" $C stop --app-dir "$B" >/dev/null 2>&1
check "nothing of B runs after its stop" [ -z "$(pgrep -f "sandbox-agent supervise" | while read -r p; do
	readlink "/proc/$(pgrep -P "$p" | head -1)/cwd" 2>/dev/null; done | grep -F "$B")" ]
finish
