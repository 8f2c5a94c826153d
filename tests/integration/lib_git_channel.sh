# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests of checkouts and publishing over the channel, after lib.sh: the git test
# server with a token-protected copy of tests/data/pyapp (or of the directory GIT_APP), a
# daemon on a unix socket with this test's host key, spec TOKEN REF, and a sampler of every process's argv and environment for
# the token (findings in $TMP/found). Sets: CTL, TOKEN, B64, URLENC, SRV, SRC, COMMIT,
# CLONE_URL, A, OUT, ERR, LISTEN_PORT, json(). AGENT_ARGS (words) go to the daemon too.
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
cp -a "${GIT_APP:-$ROOT/tests/data/pyapp}" "$SRC"
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
	--listen "127.0.0.1:$LISTEN_PORT" --grace 1000 --cache-root "$TMP/cache" -v ${AGENT_ARGS:-} \
	>"$TMP/agent.log" 2>&1 &
on_exit "kill $!"
wait_socket "$TMP/agent.sock" || :
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
