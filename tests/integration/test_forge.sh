#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The forge's REST API (docs/forge.md) against tests/forge/github_api.py, a stand-in that
# follows GitHub's documented requests and answers and reads the real git server's
# repositories (tests/git-server/) to check what GitHub checks: that the head branch was
# pushed, and that it has commits the base lacks.
#
# publish --pull-request: the app is checked out over the channel, changed as the sandbox
# user, and published; the branch is on the git server and the pull request is open (201: its
# number and html_url in the answer; title, body, base, draft and the headers as GitHub
# documents them in the request). Publishing the same branch again updates it and is refused
# with the open pull request's address (422 "already exists"); a base that holds the head
# already: "no commits between" (422); the spec's repository unknown: 404; the token revoked:
# 401; a token without pull_requests:write: 403; each with a teaching message, exit 2, the
# branch pushed anyway and the error in the document. The GitHub Enterprise shape (api_url
# .../api/v3) works the same.
#
# github-token: the app's JWT (RS256) verified by the stand-in with the app's public key
# (openssl), its iat, exp and iss; the token asked for one repository and read permission by
# default; the printed spec checks the app out for real; a read-only token gets 403 on a pull
# request, one asked with write opens it; a key of no app: 401; a key file others can read is
# refused before anything is sent, and never echoed; an answer over 1 MiB and one later than
# --timeout end the call with a clear error.
#
# Throughout, every process's argv and environment is sampled for the token; afterwards the
# stand-in's request log, sandbox-ctl's output and the repositories' git config are searched.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"
command -v openssl >/dev/null || skip "openssl is not installed (packaging/install-deps.sh)"
"$CTL" publish --help 2>&1 | grep -q -- --pull-request || skip "sandbox-ctl publish has no --pull-request"
. "$(dirname "$0")/lib_git_channel.sh"

# --- the stand-in: its state directory holds the tokens it knows (never argv)
FORGE=$TMP/forge
mkdir -m 700 "$FORGE"
(umask 077 && printf '{"%s": {"contents": "write", "pull_requests": "write"}}' "$TOKEN" >"$FORGE/tokens.json" &&
	printf '%s\n' "$TOKEN" >"$FORGE/issue-token")
# forge_start DIR [ARGS...]: the stand-in with its state in DIR; prints its base URL.
forge_start() {
	local dir=$1
	shift
	rm -f "$dir/port"
	/usr/bin/python3 "$ROOT/tests/forge/github_api.py" --state "$dir" --repos "$SRV/repos" "$@" \
		>>"$dir/stand-in.log" 2>&1 &
	echo $! >"$dir/pid"
	for _ in $(seq 100); do [ -s "$dir/port" ] && break; sleep 0.05; done
	[ -s "$dir/port" ] || return 1
	echo "http://127.0.0.1:$(cat "$dir/port")"
}
# The GitHub App: its key (only the stand-in has the public half), and a key of no app.
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/app.pem" 2>/dev/null &&
	openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$TMP/wrong.pem" 2>/dev/null &&
	chmod 600 "$TMP/app.pem" "$TMP/wrong.pem" &&
	openssl pkey -in "$TMP/app.pem" -pubout -out "$TMP/app.pub" || die "openssl cannot make the app's keys"
APP_ARGS=(--app-id 12345 --public-key "$TMP/app.pub" --installation 678)
API=$(forge_start "$FORGE" "${APP_ARGS[@]}") || die "the GitHub API stand-in did not start: $(cat "$FORGE/stand-in.log")"
on_exit "kill $(cat "$FORGE/pid")"

# pspec TOKEN REF [REPOSITORY [API]]: the checkout spec with the forge's fields.
pspec() {
	printf '{"repository": "%s", "ref": "%s", "clone_url": "%s", "username": "%s", "token": "%s", "api_url": "%s"}' \
		"${3:-t/app}" "$2" "$CLONE_URL" "$USER_NAME" "$1" "${4:-$API}"
}
SRVGIT() { git --git-dir="$SRV/repos/app.git" "$@"; }
has_branch() { SRVGIT rev-parse -q --verify "refs/heads/$1" >/dev/null; }
last_request() { tail -n1 "$FORGE/requests.jsonl"; }
req() { /usr/bin/python3 -c 'import json,sys; d=json.loads(sys.stdin.readline()); print(eval(sys.argv[1]))' "$1"; }
as_user() { runuser -u sandbox -- sh -c "cd '$APP' && $1"; }
ALL_OUT=$TMP/all-output
: >"$ALL_OUT"
publish() { # publish SPEC ARGS...: sandbox-ctl publish, output in $OUT and $ERR (kept)
	local spec=$1
	shift
	printf '%s' "$spec" | "$CTL" --timeout 60 --connect "$A" publish --spec - --app-dir "$APP" \
		--author "Pub Lisher <pub@example.com>" "$@" >"$OUT" 2>"$ERR"
	RC=$?
	cat "$OUT" "$ERR" >>"$ALL_OUT"
}

echo "--- check the app out"
APP=$TMP/ws/app
mkdir -p "$TMP/ws"
pspec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" checkout --spec - --app-dir "$APP" >"$OUT" 2>"$ERR"
RC=$?
check "checkout exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || { cat "$ERR"; finish; }
as_user "printf 'changed\n' >>server.py" || fail "cannot change the app as sandbox"

echo "--- publish --pull-request"
printf 'What the agent did.\n\n- one change\n' >"$TMP/body.md"
publish "$(pspec "$TOKEN" main)" --branch sandbox/pr --message "Change the server" \
	--pull-request --body-file "$TMP/body.md"
check "publish --pull-request exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
NEW=$(json "$OUT" 'd["commit"]')
check "the branch is on the git server at the reported commit" [ "$(SRVGIT rev-parse refs/heads/sandbox/pr 2>/dev/null)" = "$NEW" ]
check "the answer has the pull request's number" [ "$(json "$OUT" 'd["pull_request"]["number"]')" = 1 ]
check "and its html_url" [ "$(json "$OUT" 'd["pull_request"]["html_url"]')" = "$API/t/app/pull/1" ]
check "its base is the spec's branch" [ "$(json "$OUT" 'd["pull_request"]["base"]')" = main ]
L=$(last_request)
check "the request: POST /repos/t/app/pulls" [ "$(req 'd["method"]+" "+d["path"]' <<<"$L")" = "POST /repos/t/app/pulls" ]
check "it was answered 201" [ "$(req 'd["status"]' <<<"$L")" = 201 ]
check "Accept: application/vnd.github+json" [ "$(req 'd["accept"]' <<<"$L")" = application/vnd.github+json ]
check "X-GitHub-Api-Version: 2022-11-28" [ "$(req 'd["api_version"]' <<<"$L")" = 2022-11-28 ]
check "a User-Agent naming sandbox-ctl" bash -c "[[ '$(req 'd["user_agent"]' <<<"$L")' == sandbox-ctl/* ]]"
check "the token as a Bearer credential" [ "$(req 'd["auth_scheme"]' <<<"$L")" = Bearer ]
check "the title is the message's first line" [ "$(req 'd["request"]["title"]' <<<"$L")" = "Change the server" ]
check "head and base" [ "$(req 'd["request"]["head"]+" "+d["request"]["base"]' <<<"$L")" = "sandbox/pr main" ]
check "the body is the file's" [ "$(req 'd["request"]["body"]' <<<"$L")" = "$(cat "$TMP/body.md")" ]
check "not a draft" [ "$(req 'd["request"]["draft"]' <<<"$L")" = False ]

echo "--- the same branch again: the push updates the open pull request"
# A later session checks the branch out, works on, and publishes to it: a fast-forward.
APP_FIRST=$APP
APP=$TMP/ws2/app
mkdir -p "$TMP/ws2"
pspec "$TOKEN" sandbox/pr | "$CTL" --timeout 60 --connect "$A" checkout --spec - --app-dir "$APP" >"$OUT" 2>"$ERR" ||
	{ cat "$ERR"; die "cannot check the branch out"; }
as_user "printf 'more\n' >>server.py"
publish "$(pspec "$TOKEN" sandbox/pr)" --branch sandbox/pr --pull-request --title "Again" --base main
check "it is refused (exit 2)" [ "$RC" -eq 2 ]
[ "$RC" -eq 2 ] || cat "$ERR"
check "the message says one is open and gives its address" grep -q "a pull request from sandbox/pr is open already: $API/t/app/pull/1" "$ERR"
check "the answer carries the open one's address" [ "$(json "$OUT" 'd["pull_request"]["html_url"]')" = "$API/t/app/pull/1" ]
check "and the reason exists" [ "$(json "$OUT" 'd["error"]["reason"]')" = exists ]
check "the branch moved on anyway" [ "$(SRVGIT rev-parse sandbox/pr)" = "$(json "$OUT" 'd["commit"]')" ]
check "the stand-in was asked for the open pull requests from t:sandbox/pr" \
	grep -q '"head": \["t:sandbox/pr"\]' "$FORGE/requests.jsonl"

APP=$APP_FIRST # checked out at main, which the specs below name

echo "--- a base that holds the head already: no commits between"
publish "$(pspec "$TOKEN" main)" --branch sandbox/same --pull-request --base sandbox/same --draft
check "no commits between: exit 2" [ "$RC" -eq 2 ]
check "it says there is nothing to review" grep -q "no commits between sandbox/same and sandbox/same: nothing to review" "$ERR"
check "the draft flag was sent" [ "$(req 'd["request"]["draft"]' <<<"$(last_request)")" = True ]

echo "--- the spec's repository is unknown to the forge: 404"
publish "$(pspec "$TOKEN" main t/nothing-here)" --branch sandbox/x404 --pull-request --base main
check "exit 2" [ "$RC" -eq 2 ]
check "it says the repository is not one the token can see" grep -q "the API answered 404 (Not Found): no repository t/nothing-here that this token can see" "$ERR"
check "the branch was pushed all the same" has_branch sandbox/x404
check "the reason is not_found" [ "$(json "$OUT" 'd["error"]["reason"]')" = not_found ]

echo "--- a revoked token: 401"
touch "$FORGE/revoked"
publish "$(pspec "$TOKEN" main)" --branch sandbox/x401 --pull-request
rm -f "$FORGE/revoked"
check "exit 2" [ "$RC" -eq 2 ]
check "it says the token was refused and what to do" grep -q "the API answered 401 (Bad credentials): the token in the spec was refused" "$ERR"

echo "--- GitHub Enterprise's shape: api_url .../api/v3"
GHE=$TMP/ghe
mkdir -m 700 "$GHE"
cp -p "$FORGE/tokens.json" "$FORGE/issue-token" "$GHE/"
GHE_API=$(forge_start "$GHE" --prefix /api/v3) || die "the /api/v3 stand-in did not start"
on_exit "kill $(cat "$GHE/pid")"
LONG=$(/usr/bin/python3 -c 'print("é" * 200)') # 400 bytes: the title is cut to 256, on a whole character
publish "$(pspec "$TOKEN" main t/app "$GHE_API/api/v3/")" --branch sandbox/ghe --pull-request --message "$LONG"
check "publish --pull-request exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the request went to /api/v3/repos/t/app/pulls" grep -q '"path": "/api/v3/repos/t/app/pulls"' "$GHE/requests.jsonl"
check "a long first line makes a title of 256 bytes of whole characters" \
	[ "$(tail -n1 "$GHE/requests.jsonl" | req 'd["request"]["title"] == "é" * 128')" = True ]

echo "--- refused before anything is pushed"
publish "$(pspec "$TOKEN" main 'not a repo')" --branch sandbox/early --pull-request
check "a repository that is not OWNER/NAME: exit 2" [ "$RC" -eq 2 ]
check "nothing was pushed" ! has_branch sandbox/early
publish "$(pspec "$TOKEN" main t/app 'http://192.0.2.1/api')" --branch sandbox/early --pull-request
check "an http:// API URL to another host: exit 2" [ "$RC" -eq 2 ]
check "it says https is needed" grep -q "must start with https://" "$ERR"
publish "$(pspec "$TOKEN" main)" --branch sandbox/early --title T
check "--title without --pull-request: exit 2" [ "$RC" -eq 2 ]
check "nothing was pushed" ! has_branch sandbox/early

echo "--- github-token: an installation token for one repository, read only"
# gh_token [ARGS...]: sandbox-ctl github-token against the stand-in; spec in $TMP/gh.spec
gh_token() {
	"$CTL" --timeout 30 github-token --app-id 12345 --installation 678 --repository t/app \
		--api-url "$API" --clone-url "$CLONE_URL" "$@" >"$TMP/gh.spec" 2>"$TMP/gh.err"
	RC=$?
	cat "$TMP/gh.err" >>"$ALL_OUT"
}
gh_token --private-key "$TMP/app.pem" --ref main
check "github-token exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$TMP/gh.err"
L=$(last_request)
check "POST /app/installations/678/access_tokens" [ "$(req 'd["method"]+" "+d["path"]' <<<"$L")" = "POST /app/installations/678/access_tokens" ]
check "the JWT's RS256 signature verifies with the app's public key" [ "$(req 'd["jwt_verified"]' <<<"$L")" = True ]
check "its header is RS256, JWT" [ "$(req 'd["jwt_header"]["alg"]+" "+d["jwt_header"]["typ"]' <<<"$L")" = "RS256 JWT" ]
check "iss is the app id" [ "$(req 'd["jwt_claims"]["iss"]' <<<"$L")" = 12345 ]
check "exp is 10 minutes after iat" [ "$(req 'd["jwt_claims"]["exp"]-d["jwt_claims"]["iat"]' <<<"$L")" = 600 ]
check "iat is about 60 s in the past" [ "$(req 'int(__import__("time").time())-d["jwt_claims"]["iat"]' <<<"$L")" -ge 59 ]
check "the token is limited to the one repository" [ "$(req 'd["request"]["repositories"]' <<<"$L")" = "['app']" ]
check "read permission only, by default" [ "$(req 'd["request"]["permissions"]' <<<"$L")" = "{'contents': 'read'}" ]
check "the spec carries the issued token" [ "$(json "$TMP/gh.spec" 'd["token"]')" = "$TOKEN" ]
check "its expiry, about an hour ahead" [ "$(json "$TMP/gh.spec" 'int((__import__("datetime").datetime.strptime(d["expires_at"], "%Y-%m-%dT%H:%M:%SZ") - __import__("datetime").datetime.utcnow()).total_seconds() // 60)')" -ge 58 ]
check "the clone URL, user and ref" [ "$(json "$TMP/gh.spec" 'd["clone_url"]+" "+d["username"]+" "+d["ref"]')" = "$CLONE_URL x-access-token main" ]
check "stderr says when it expires" grep -q "a token for t/app, expires at " "$TMP/gh.err"

# The dynamic build opens libcurl when the forge's API is called, never at start (forge_curl.c).
if ldd "$CTL" >/dev/null 2>&1; then
	echo "--- libcurl is loaded for the forge's API, not by every command"
	LD_DEBUG=files "$CTL" --help >/dev/null 2>"$TMP/ld-help.log"
	check "the loader's trace names what it loads (libc)" grep -q "file=libc.so.6" "$TMP/ld-help.log"
	check "sandbox-ctl --help runs without loading libcurl" ! grep -q "file=libcurl" "$TMP/ld-help.log"
	# (sandbox-ctl itself under LD_DEBUG, not the helper, whose cat would trace too)
	LD_DEBUG=files "$CTL" --timeout 30 github-token --app-id 12345 --installation 678 \
		--repository t/app --api-url "$API" --clone-url "$CLONE_URL" \
		--private-key "$TMP/app.pem" --ref main >"$TMP/gh-ld.spec" 2>"$TMP/gh-ld.err"
	check "github-token exits 0 with libcurl opened at run time" [ $? -eq 0 ]
	check "github-token opened libcurl with dlopen" grep -q "file=libcurl.so.4 .*dynamically loaded" "$TMP/gh-ld.err"
	# A libcurl.so.4 without curl's functions, found first: a clear error, nothing sent.
	mkdir -p "$TMP/fakecurl"
	gcc -shared -fPIC -o "$TMP/fakecurl/libcurl.so.4" -x c - <<<'int not_curl;' ||
		die "cannot build a stand-in libcurl.so.4"
	before=$(wc -l <"$FORGE/requests.jsonl")
	LD_LIBRARY_PATH=$TMP/fakecurl "$CTL" --timeout 30 github-token --app-id 12345 \
		--installation 678 --repository t/app --api-url "$API" --clone-url "$CLONE_URL" \
		--private-key "$TMP/app.pem" --ref main >/dev/null 2>"$TMP/gh.err"
	check "a libcurl.so.4 without curl's functions: exit 1 (failed, not refused)" [ $? -eq 1 ]
	check "it names the library, the missing function and the package" \
		grep -q "libcurl.so.4 has no curl_[a-z_]*: libcurl 7.85 or later is needed (Debian's libcurl4)" "$TMP/gh.err"
	check "nothing reached the API" [ "$(wc -l <"$FORGE/requests.jsonl")" -eq "$before" ]
fi

echo "--- the printed spec checks the app out"
APP=$TMP/ws3/app
mkdir -p "$TMP/ws3"
"$CTL" --timeout 60 --connect "$A" checkout --spec - --app-dir "$APP" <"$TMP/gh.spec" >"$OUT" 2>"$ERR"
RC=$?
check "checkout with the spec on stdin exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "at the branch's commit" [ "$(json "$OUT" 'd["commit"]')" = "$COMMIT" ]
as_user "printf 'third\n' >>server.py"
echo "--- a read-only token may not open a pull request: 403"
# (the git server checks the token, not its permissions; the stand-in checks those)
publish "$(cat "$TMP/gh.spec")" --branch sandbox/ro --pull-request
check "exit 2" [ "$RC" -eq 2 ]
check "it says pull_requests:write is needed and how to get it" grep -q "the API answered 403 (Resource not accessible by integration): the token may not open pull requests in t/app: an installation token needs pull_requests:write (sandbox-ctl github-token --permissions contents:write,pull_requests:write)" "$ERR"

echo "--- write permission when asked: publish --pull-request with it"
gh_token --private-key "$TMP/app.pem" --ref main --permissions contents:write,pull_requests:write
check "github-token --permissions exits 0" [ "$RC" -eq 0 ]
check "it asked for exactly those" [ "$(req 'd["request"]["permissions"]' <<<"$(last_request)")" = "{'contents': 'write', 'pull_requests': 'write'}" ]
check "it warns that write is for publishing" grep -q "write permission asked for" "$TMP/gh.err"
publish "$(cat "$TMP/gh.spec")" --branch sandbox/rw --pull-request
check "publish --pull-request exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
check "the pull request is open" grep -q "/t/app/pull/" <<<"$(json "$OUT" 'd["pull_request"]["html_url"]')"

echo "--- a key that is not the app's: 401"
N=$(wc -l <"$FORGE/requests.jsonl")
gh_token --private-key "$TMP/wrong.pem"
check "exit 2" [ "$RC" -eq 2 ]
check "GitHub's message and what to do" grep -q "the API answered 401 (A JSON web token could not be decoded): GitHub did not accept the app's JWT" "$TMP/gh.err"
check "the signature did not verify" [ "$(req 'd["jwt_verified"]' <<<"$(last_request)")" = False ]
check "no token on stdout" bash -c "! grep -qF '$TOKEN' '$TMP/gh.spec'"
echo "--- a key others can read is refused before anything is sent"
chmod 640 "$TMP/wrong.pem"
N=$(wc -l <"$FORGE/requests.jsonl")
gh_token --private-key "$TMP/wrong.pem"
check "exit 2" [ "$RC" -eq 2 ]
check "it says chmod 600" grep -q "only you can read (chmod 600" "$TMP/gh.err"
check "no request was made" [ "$(wc -l <"$FORGE/requests.jsonl")" = "$N" ]
check "the key is not echoed" bash -c "! grep -qF 'PRIVATE KEY' '$TMP/gh.err' '$TMP/gh.spec'"
check "--permissions that are not NAME:LEVEL: exit 2" bash -c "! '$CTL' github-token --app-id 1 --private-key '$TMP/app.pem' --installation 1 --repository t/app --permissions contents:all >/dev/null 2>&1"

echo "--- the answer's size and time are capped"
chmod 600 "$TMP/wrong.pem"
touch "$FORGE/huge"
gh_token --private-key "$TMP/app.pem"
rm -f "$FORGE/huge"
check "an answer over 1 MiB: exit 1" [ "$RC" -eq 1 ]
check "it says the answer is too big" grep -q "the answer is over 1048576 bytes" "$TMP/gh.err"
touch "$FORGE/slow"
T0=$(date +%s)
"$CTL" --timeout 2 github-token --app-id 12345 --installation 678 --repository t/app \
	--api-url "$API" --clone-url "$CLONE_URL" --private-key "$TMP/app.pem" >"$TMP/gh.spec" 2>"$TMP/gh.err"
RC=$?
T1=$(date +%s)
rm -f "$FORGE/slow"
check "no answer within --timeout 2: exit 1" [ "$RC" -eq 1 ]
check "it says so" grep -q "no complete answer within 2 s (--timeout)" "$TMP/gh.err"
check "it gave up within 5 s" [ $((T1 - T0)) -le 5 ]

touch "$TMP/stop-sampling"
wait "$SAMPLER" 2>/dev/null
echo "--- the token went nowhere"
check "the sampler made full passes" [ "$(wc -l <"$TMP/samples")" -ge 1 ]
check "no process's argv or environment held the token" [ ! -s "$TMP/found" ]
[ -s "$TMP/found" ] && cat "$TMP/found"
check "not in sandbox-ctl's output (stdout and stderr)" bash -c "! grep -qaF -e '$TOKEN' -e '$B64' '$ALL_OUT'"
check "the search finds a planted token" bash -c "echo '$TOKEN' | grep -qaF -e '$TOKEN'"
check "not in the stand-in's request log" bash -c "! grep -qaF -e '$TOKEN' '$FORGE/requests.jsonl' '$GHE/requests.jsonl'"
check "not in the checkouts' git config" bash -c "! grep -rqaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$APP/.git/config' '$APP_FIRST/.git/config' '$TMP/ws2/app/.git/config'"
check "not in the server repository's config" bash -c "! grep -qaF -e '$TOKEN' '$SRV/repos/app.git/config'"
finish
