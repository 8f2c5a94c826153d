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
# and the app directory untouched. Then the running app is re-synced to a new commit by one
# `sandbox-ctl boot --checkout` (one connection for both); with a wrong token that boots
# nothing and leaves the running app alone.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"
"$CTL" --help 2>&1 | grep -q checkout || skip "sandbox-ctl has no checkout command"
. "$(dirname "$0")/lib_git_channel.sh"

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

echo "--- boot --checkout: a re-sync in one call"
echo "# re-synced" >>"$SRC/server.py"
(cd "$SRC" && git -c user.name=t -c user.email=t@example.com commit -qam resync &&
	git push -q "$SRV/repos/app.git" main)
COMMIT2=$(git -C "$SRC" rev-parse HEAD)
sessions() { grep -c ') accepted, session' "$TMP/agent.log"; }
STATE1=$TMP/ws1/.sandbox/state.json
server0=$(json "$STATE1" 'd["server_pid"]')
before=$(sessions)
spec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" boot --checkout - --app-dir "$APP1" --wait \
	--deadline 60 >"$OUT" 2>"$ERR"
RC=$?
check "boot --checkout --wait exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR" "$TMP/agent.log"
check "status ready" [ "$(json "$OUT" 'd["status"]')" = ready ]
check "the result carries the checkout's commit" [ "$(json "$OUT" 'd["checkout"]["commit"]')" = "$COMMIT2" ]
check "the app directory is at the new commit" [ "$(git -c safe.directory="*" -C "$APP1" rev-parse HEAD)" = "$COMMIT2" ]
check "the server was started again" [ "$(json "$STATE1" 'd["server_pid"]')" != "$server0" ]
check "/up answers" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
check "one session for the checkout and the boot" [ "$(($(sessions) - before))" -eq 1 ]
check "nothing of the token in its output" bash -c "! grep -qaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$OUT' '$ERR'"
server=$(json "$STATE1" 'd["server_pid"]')
find "$APP1" -printf '%p %s %T@\n' | sort >"$TMP/before"
spec "wrong-token-0123456789" main | "$CTL" --connect "$A" boot --checkout - --app-dir "$APP1" --wait >"$OUT" 2>"$ERR"
RC=$?
check "boot --checkout with a wrong token exits 1" [ "$RC" -eq 1 ]
check "it says the checkout failed and nothing was booted" grep -q "the checkout failed, nothing was booted: .*authentication failed" "$ERR"
[ "$RC" -eq 1 ] || cat "$ERR"
find "$APP1" -printf '%p %s %T@\n' | sort >"$TMP/after"
check "the app directory is unchanged" cmp -s "$TMP/before" "$TMP/after"
check "the running server was left alone" [ "$(json "$STATE1" 'd["server_pid"]')" = "$server" ]
check "and still answers" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
"$CTL" --connect "$A" boot --checkout - --spec "$TMP/nospec.json" </dev/null >"$OUT" 2>"$ERR"
check "--checkout with --spec is a usage error (exit 2)" [ $? -eq 2 ]
finish
