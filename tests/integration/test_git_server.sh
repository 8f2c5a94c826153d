#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The git smart-HTTP test server (tests/git-server/): lighttpd + git http-backend on 127.0.0.1,
# requiring a token through HTTP Basic authentication. git itself is the client here: clones
# and pushes (chunked request bodies) with the token, refusals without it or with a wrong one,
# the credential kept out of the CGI processes' environment, and a clean stop by pid.
# The library's own fetches against this server are in tests/unit/test_git_fetch.c and
# tests/unit/test_checkout_stage.c.
source "$(dirname "$0")/lib.sh"

command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"

GS=$ROOT/tests/git-server
SRV=$TMP/server
mkdir -p "$SRV"
TOKEN="tok+en/$(head -c 9 /dev/urandom | od -An -tx1 | tr -d ' \n')=x"
USER_NAME=x-access-token

url=$("$GS/start.sh" "$SRV" "$USER_NAME" <<<"$TOKEN") || { fail "start.sh failed"; finish; }
on_exit "'$GS/stop.sh' '$SRV'"
pid=$(cat "$SRV/pid")
log "server at $url (pid $pid)"
check "the server listens on loopback" bash -c "[[ '$url' == http://127.0.0.1:*/git ]]"
check "start.sh took the token from stdin, not argv" \
	bash -c "! tr '\0' ' ' </proc/$pid/cmdline | grep -qF -- '$TOKEN'"

"$GS/fixture.sh" "$SRV/repos" app >"$TMP/ids" || { fail "fixture.sh failed"; finish; }
c4=$(sed -n 's/^c4=//p' "$TMP/ids")

# git with the Authorization header from the environment of that one process.
auth_git() { # auth_git TOKEN git-args...
	local tok=$1 b64
	shift
	b64=$(printf '%s:%s' "$USER_NAME" "$tok" | base64 -w0)
	GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=http.extraHeader \
		GIT_CONFIG_VALUE_0="Authorization: Basic $b64" GIT_TERMINAL_PROMPT=0 \
		GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null git "$@"
}

check "no credentials: 401" [ "$(http_status "$url/app.git/info/refs?service=git-upload-pack")" = 401 ]
check "wrong token: 401" [ "$(http_status "$url/app.git/info/refs?service=git-upload-pack" -u "$USER_NAME:wrong-token")" = 401 ]
check "right token: 200" [ "$(http_status "$url/app.git/info/refs?service=git-upload-pack" -u "$USER_NAME:$TOKEN")" = 200 ]

if auth_git "wrong-token-123456" clone -q "$url/app.git" "$TMP/bad" 2>"$TMP/bad.err"; then
	fail "a clone with a wrong token succeeded"
else
	check "a wrong token fails the clone with an authentication error" \
		grep -qiE "authentication|401|could not read Username" "$TMP/bad.err"
fi
check "the failed clone left no checkout" bash -c "[ ! -e '$TMP/bad/.git/objects/pack' ] || [ -z \"\$(ls '$TMP/bad/.git/objects/pack')\" ]"

check "a clone with the token works" auth_git "$TOKEN" clone -q "$url/app.git" "$TMP/good"
check "the clone is at main's commit" [ "$(git -C "$TMP/good" rev-parse HEAD)" = "$c4" ]

# Pushes send chunked request bodies (the reason this is not Python's http.server).
(
	cd "$TMP/good" &&
		head -c 2000000 /dev/urandom >big.bin &&
		git add big.bin &&
		git -c user.name=t -c user.email=t@t commit -qm "big" &&
		auth_git "$TOKEN" -c http.postBuffer=65536 push -q origin HEAD:refs/heads/pushed
) >"$TMP/push.log" 2>&1
check "a push with the token (chunked body) works" \
	[ "$(git --git-dir="$SRV/repos/app.git" rev-parse refs/heads/pushed 2>/dev/null)" = "$(git -C "$TMP/good" rev-parse HEAD)" ]
if (cd "$TMP/good" && GIT_TERMINAL_PROMPT=0 git push -q origin HEAD:refs/heads/anon) >/dev/null 2>&1; then
	fail "a push without the token succeeded"
else
	pass "a push without the token is refused"
fi

# lighttpd would hand the header to the CGI as HTTP_AUTHORIZATION; the config drops it after
# mod_auth has checked it. A CGI that prints its environment shows what git http-backend gets.
cat >"$SRV/repos/env.cgi" <<'EOF'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
env
EOF
chmod 755 "$SRV/repos/env.cgi"
sed -i "s|alias.url = (|alias.url = (\"/git/env\" => \"$SRV/repos/env.cgi\", |" "$SRV/lighttpd.conf"
"$GS/stop.sh" "$SRV"
lighttpd -D -f "$SRV/lighttpd.conf" </dev/null >>"$SRV/error.log" 2>&1 &
echo $! >"$SRV/pid"
port=${url#http://127.0.0.1:}
port=${port%%/*}
for _ in $(seq 1 100); do
	[ "$(http_status "http://127.0.0.1:$port/git/env")" != 000 ] && break
	sleep 0.05
done
curl -s --noproxy '*' -u "$USER_NAME:$TOKEN" "http://127.0.0.1:$port/git/env" >"$TMP/cgi-env"
check "the CGI runs as the authenticated user" grep -qx "REMOTE_USER=$USER_NAME" "$TMP/cgi-env"
check "the CGI environment carries no Authorization header" bash -c "! grep -qi '^HTTP_AUTHORIZATION' '$TMP/cgi-env'"
b64=$(printf '%s:%s' "$USER_NAME" "$TOKEN" | base64 -w0)
check "nor the token in any form" bash -c "! grep -qF -e '$TOKEN' -e '$b64' '$TMP/cgi-env'"

pid=$(cat "$SRV/pid")
"$GS/stop.sh" "$SRV"
check "stop.sh stopped the server" bash -c "! kill -0 $pid 2>/dev/null"
check "stop.sh removed the pid file" [ ! -e "$SRV/pid" ]
finish
