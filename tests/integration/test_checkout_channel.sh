#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Checkouts over the channel (docs/protocol.md §7.8): `sandbox-ctl checkout` against the real
# daemon and the git test server (a copy of tests/data/pyapp committed with git), both ways:
# the host fetches and streams a pack (checkout.pack), and the guest fetches with a `fetch`
# secret (checkout.fetch). The checked-out app boots to ready. While the fetches run every
# process's command line and environment is sampled for the token (raw, base64 of
# user:token, URL-encoded); afterwards the workspaces' git files, the daemon's state and logs
# and sandbox-ctl's output are searched too. A wrong token fails with exit 1, a clear message,
# and the app directory untouched.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"
"$CTL" --help 2>&1 | grep -q checkout || skip "sandbox-ctl has no checkout command"
ensure_sandbox_user || skip "cannot create the sandbox user"

export HOME=$TMP/home
mkdir -p "$HOME"
LISTEN_PORT=$(free_port)
USER_NAME=x-access-token
TOKEN="ghs_tok+en/$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')=x"
B64=$(printf '%s:%s' "$USER_NAME" "$TOKEN" | base64 -w0)
URLENC=$(/usr/bin/python3 -c 'import sys,urllib.parse; print(urllib.parse.quote(sys.argv[1], safe=""))' "$TOKEN")
json() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
OUT=$TMP/ctl.out ERR=$TMP/ctl.err

# --- the git server and the repository
GS=$ROOT/tests/git-server
SRV=$TMP/server
mkdir -p "$SRV"
url=$("$GS/start.sh" "$SRV" "$USER_NAME" <<<"$TOKEN") || { fail "start.sh failed"; finish; }
on_exit "'$GS/stop.sh' '$SRV'"
SRC=$TMP/src
cp -a "$ROOT/tests/data/pyapp" "$SRC"
(cd "$SRC" && git init -q -b main && git add -A &&
	git -c user.name=t -c user.email=t@example.com commit -qm app) || { fail "git commit failed"; finish; }
COMMIT=$(git -C "$SRC" rev-parse HEAD)
git clone -q --bare "$SRC" "$SRV/repos/app.git" || { fail "cannot publish the repository"; finish; }
CLONE_URL=${url%/}/app.git

# --- the daemon
"$CTL" keygen >/dev/null 2>&1 || { fail "keygen failed"; finish; }
cp "$HOME/.config/sandbox-ctl/key.pub" "$TMP/authorized_keys"
"$AGENT" serve --unix "$TMP/agent.sock" --authorized-keys "$TMP/authorized_keys" \
	--authorized-keys-dir '' --key "$TMP/guest_key" --state-dir "$TMP/agent.state" \
	--listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" -v \
	>"$TMP/agent.log" 2>&1 &
on_exit "kill $!"
for _ in $(seq 100); do [ -S "$TMP/agent.sock" ] && break; sleep 0.1; done
A=unix:$TMP/agent.sock
"$CTL" --connect "$A" --accept-new-guest-key hello >/dev/null 2>&1 || { fail "hello failed"; finish; }

spec() { # spec TOKEN REF
	printf '{"repository": "t/app", "ref": "%s", "clone_url": "%s", "username": "%s", "token": "%s"}' \
		"$2" "$CLONE_URL" "$USER_NAME" "$1"
}
# Sample every process's argv and environment for the token until told to stop.
sampler() {
	while [ ! -e "$TMP/stop-sampling" ]; do
		for f in /proc/[0-9]*/cmdline /proc/[0-9]*/environ; do
			if grep -aqF -e "$TOKEN" -e "$B64" -e "$URLENC" "$f" 2>/dev/null; then
				echo "$f: $(tr '\0' ' ' <"${f%/*}/cmdline")" >>"$TMP/found"
			fi
		done
		echo x >>"$TMP/samples"
	done
}
: >"$TMP/found"
sampler &
SAMPLER=$!
on_exit "touch '$TMP/stop-sampling'; kill $SAMPLER"

echo "--- host fetch: checkout.pack"
APP1=$TMP/ws1/app
mkdir -p "$TMP/ws1"
spec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" checkout --spec - --app-dir "$APP1" >"$OUT" 2>"$ERR"
RC=$?
check "checkout exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
cp "$OUT" "$TMP/out1" && cp "$ERR" "$TMP/err1"
check "it reports the commit" [ "$(json "$OUT" 'd["commit"]')" = "$COMMIT" ]
check "it reports the method" [ "$(json "$OUT" 'd["method"]')" = host-fetch ]
check "the app directory is at the commit" [ "$(git -c safe.directory="*" -C "$APP1" rev-parse HEAD)" = "$COMMIT" ]
check "the files arrived" cmp -s "$SRC/server.py" "$APP1/server.py"
check "the tree belongs to the run user" [ "$(stat -c %U "$APP1/server.py")" = sandbox ]
check "origin is the clone URL, without credentials" [ "$(git -c safe.directory="*" -C "$APP1" config remote.origin.url)" = "$CLONE_URL" ]

echo "--- guest fetch: checkout.fetch with a fetch secret"
APP2=$TMP/ws2/app
mkdir -p "$TMP/ws2"
spec "$TOKEN" main >"$TMP/spec.json"
chmod 644 "$TMP/spec.json"
"$CTL" --connect "$A" checkout --spec "$TMP/spec.json" --app-dir "$APP2" --guest-fetch >"$OUT" 2>"$ERR"
RC=$?
check "a spec file others can read is refused (exit 2)" [ "$RC" -eq 2 ]
chmod 600 "$TMP/spec.json"
"$CTL" --timeout 60 --connect "$A" checkout --spec "$TMP/spec.json" --app-dir "$APP2" --guest-fetch >"$OUT" 2>"$ERR"
RC=$?
rm -f "$TMP/spec.json"
check "checkout --guest-fetch exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR" "$TMP/agent.log"
cp "$OUT" "$TMP/out2" && cp "$ERR" "$TMP/err2"
check "it reports the commit" [ "$(json "$OUT" 'd["commit"]')" = "$COMMIT" ]
check "it reports the method" [ "$(json "$OUT" 'd["method"]')" = guest-fetch ]
check "the app directory is at the commit" [ "$(git -c safe.directory="*" -C "$APP2" rev-parse HEAD)" = "$COMMIT" ]
check "the tree belongs to the run user" [ "$(stat -c %U "$APP2/server.py")" = sandbox ]
"$CTL" --connect "$A" status --app-dir "$APP2" >/dev/null 2>&1
check "the fetch secret was dropped after the fetch" \
	bash -c "'$CTL' --connect '$A' secrets drop SANDBOX_CHECKOUT_TOKEN 2>/dev/null | grep -q '\"dropped\": *0'"

echo "--- a wrong token"
find "$APP1" -printf '%p %s %T@\n' | sort >"$TMP/before"
spec "wrong-token-0123456789" main | "$CTL" --connect "$A" checkout --spec - --app-dir "$APP1" >"$OUT" 2>"$ERR"
RC=$?
check "a wrong token exits 1" [ "$RC" -eq 1 ]
check "it says authentication failed" grep -qi "authentication failed" "$ERR"
find "$APP1" -printf '%p %s %T@\n' | sort >"$TMP/after"
check "the app directory is unchanged" cmp -s "$TMP/before" "$TMP/after"
spec "wrong-token-0123456789" main | "$CTL" --connect "$A" checkout --spec - --app-dir "$APP1" --guest-fetch >"$OUT" 2>"$ERR"
RC=$?
check "a wrong token exits 1 with --guest-fetch" [ "$RC" -eq 1 ]
check "it says authentication failed" grep -qi "authentication failed" "$ERR"
find "$APP1" -printf '%p %s %T@\n' | sort >"$TMP/after"
check "the app directory is unchanged" cmp -s "$TMP/before" "$TMP/after"

touch "$TMP/stop-sampling"
wait "$SAMPLER" 2>/dev/null
echo "--- the token went nowhere"
check "the sampler made full passes while the fetches ran" [ "$(wc -l <"$TMP/samples")" -ge 1 ]
check "no process's argv or environment held the token" [ ! -s "$TMP/found" ]
[ -s "$TMP/found" ] && cat "$TMP/found"
# Positive control: the search finds the token where it is planted.
echo "x $B64 y" >"$TMP/control"
check "the search finds a planted token" grep -rqF -e "$TOKEN" -e "$B64" -e "$URLENC" "$TMP/control"
for d in "$APP1" "$APP2"; do
	check "nothing in $d/.git (config, FETCH_HEAD, logs, packed-refs)" \
		bash -c "! grep -rqaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$d/.git'"
done
check "nothing in the daemon's state or logs" \
	bash -c "! grep -rqaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$TMP/agent.state' '$TMP/agent.log' '$TMP/ws1' '$TMP/ws2'"
check "nothing in sandbox-ctl's output" \
	bash -c "! grep -qaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$TMP/out1' '$TMP/err1' '$TMP/out2' '$TMP/err2' '$OUT' '$ERR'"
check "no temporary fetch repository is left" bash -c "! ls -d /tmp/sandbox-ctl-checkout.* 2>/dev/null | grep -q ."

echo "--- boot the checked-out app"
on_exit "'$CTL' --connect '$A' stop --app-dir '$APP1' --grace 1"
"$CTL" --timeout 60 --connect "$A" boot --app-dir "$APP1" --wait --deadline 60 >"$OUT" 2>"$ERR"
RC=$?
check "boot --wait exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR" "$TMP/agent.log"
check "status ready" [ "$(json "$OUT" 'd["status"]')" = ready ]
check "/up answers through the forwarder" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
finish
