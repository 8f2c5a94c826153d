#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Publishing a branch (docs/protocol.md §7.9): the app is checked out over the channel from the
# git test server, the sandbox user changes, adds and deletes files, and `sandbox-ctl publish`
# has the guest commit the work tree and the host push the commit to a new branch. The
# server's bare repository is then read with git: the branch, its tree and its parent. The
# checkout's .git/config is made hostile first (a different origin URL and an insteadOf
# rewrite of the server's URL): the push still goes to the spec's URL. A wrong token fails
# with exit 1, a clear message, and no branch; a filter driver in the checkout is refused.
# While the pushes run every process's argv and environment is sampled for the token (raw,
# base64 of user:token, URL-encoded); afterwards the workspace, the daemon's state and logs
# and sandbox-ctl's output are searched too. A checkout whose .git/config is a FIFO blocks the
# publishing runner, never the daemon: other commands are answered meanwhile, and the publish
# ends at the daemon's --publish-timeout (3 s here) with the runner killed.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"
"$CTL" --help 2>&1 | grep -q publish || skip "sandbox-ctl has no publish command"
AGENT_ARGS=${AGENT_ARGS---publish-timeout 3000}
. "$(dirname "$0")/lib_git_channel.sh"

echo "--- check the app out over the channel"
APP=$TMP/ws/app
mkdir -p "$TMP/ws"
spec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" checkout --spec - --app-dir "$APP" >"$OUT" 2>"$ERR"
RC=$?
check "checkout exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || { cat "$ERR"; finish; }
G() { git --no-optional-locks -c safe.directory="*" -C "$APP" "$@"; }
SRVGIT() { git --git-dir="$SRV/repos/app.git" "$@"; }

echo "--- work in the sandbox, as the sandbox user"
as_user() { runuser -u sandbox -- sh -c "cd '$APP' && $1"; }
as_user "printf 'changed\n' >>server.py && rm manifest.py && mkdir -p lib && printf 'new\n' >lib/new.txt &&
	printf '*.log\n' >.gitignore && printf 'noise\n' >debug.log" || fail "cannot change the app as sandbox"
# A hostile checkout config: another origin, and the server's URL rewritten to it.
git init -q --bare "$TMP/evil.git"
as_user "git config remote.origin.url 'file://$TMP/evil.git' &&
	git config url.'file://$TMP/evil.git'.insteadOf '$CLONE_URL' &&
	git config url.'file://$TMP/evil.git'.pushInsteadOf '$CLONE_URL'" || fail "cannot write .git/config as sandbox"
HEAD_BEFORE=$(cat "$APP/.git/HEAD")
INDEX_BEFORE=$(stat -c %Y.%s "$APP/.git/index")
find "$APP" -user root | sort >"$TMP/root-before"

echo "--- publish to a new branch"
spec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" publish --spec - --app-dir "$APP" \
	--branch sandbox/work --author "Pub Lisher <pub@example.com>" --message "work from the sandbox" >"$OUT" 2>"$ERR"
RC=$?
check "publish exits 0" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR" "$TMP/agent.log"
cp "$OUT" "$TMP/out1" && cp "$ERR" "$TMP/err1"
NEW=$(json "$OUT" 'd["commit"]')
check "it reports the branch" [ "$(json "$OUT" 'd["branch"]')" = sandbox/work ]
check "it reports pushed" [ "$(json "$OUT" 'd["pushed"]')" = True ]
check "the branch exists on the server at the reported commit" [ "$(SRVGIT rev-parse refs/heads/sandbox/work 2>/dev/null)" = "$NEW" ]
check "its parent is the checked-out commit" [ "$(SRVGIT rev-parse sandbox/work^ 2>/dev/null)" = "$COMMIT" ]
check "main did not move" [ "$(SRVGIT rev-parse main)" = "$COMMIT" ]
check "the modified file is in the tree" [ "$(SRVGIT show sandbox/work:server.py | tail -n1)" = changed ]
check "the deleted file is gone" ! SRVGIT cat-file -e sandbox/work:manifest.py
check "the new file is there" [ "$(SRVGIT show sandbox/work:lib/new.txt)" = new ]
check "the ignored file is not" ! SRVGIT cat-file -e sandbox/work:debug.log
check "the tree is the work tree's" [ "$(SRVGIT ls-tree -r --name-only sandbox/work | tr '\n' ' ')" = ".activeagents/sandbox.yml .gitignore lib/new.txt server.py " ]
check "author and message as asked" [ "$(SRVGIT log -1 --format='%an <%ae>|%s' sandbox/work)" = "Pub Lisher <pub@example.com>|work from the sandbox" ]
check "the server's repository is sound" SRVGIT fsck --strict
check "nothing reached the URL from the checkout's config" [ -z "$(git --git-dir="$TMP/evil.git" for-each-ref)" ]
check "the checkout's HEAD did not move" [ "$(cat "$APP/.git/HEAD")" = "$HEAD_BEFORE" ]
check "the checkout's index was not written" [ "$(stat -c %Y.%s "$APP/.git/index")" = "$INDEX_BEFORE" ]
check "the work tree still shows its changes" [ -n "$(G status --porcelain)" ]
find "$APP" -user root | sort >"$TMP/root-after"
check "publishing made nothing in the checkout root-owned" cmp -s "$TMP/root-before" "$TMP/root-after"

echo "--- a wrong token"
spec "wrong-token-0123456789" main | "$CTL" --timeout 60 --connect "$A" publish --spec - --app-dir "$APP" \
	--branch sandbox/wrong >"$OUT" 2>"$ERR"
RC=$?
check "a wrong token exits 1" [ "$RC" -eq 1 ]
check "it says authentication failed" grep -qi "authentication failed" "$ERR"
check "no branch was made" ! SRVGIT rev-parse -q --verify refs/heads/sandbox/wrong

echo "--- a filter driver in the checkout"
as_user "git config filter.x.clean cat"
spec "$TOKEN" main | "$CTL" --timeout 60 --connect "$A" publish --spec - --app-dir "$APP" \
	--branch sandbox/filtered >"$OUT" 2>"$ERR"
RC=$?
check "it is refused (exit 2)" [ "$RC" -eq 2 ]
check "it names the filter driver" grep -q "filter driver (filter.x.clean)" "$ERR"
check "no branch was made" ! SRVGIT rev-parse -q --verify refs/heads/sandbox/filtered
as_user "git config --unset filter.x.clean"

echo "--- a FIFO for .git/config"
as_user "mv .git/config .git/config.real && mkfifo .git/config" || fail "cannot make the FIFO as sandbox"
# A process of the sandbox user waiting in open() for the FIFO's writer, which never comes.
# A pass reads each wchan with the shell's own read (no process per entry), so it takes
# milliseconds: with a `cat` per process a pass took seconds on a busy machine, longer than the
# 3 s the blocked publish lives.
blocked_on_fifo() {
	local p w
	for p in /proc/[0-9]*; do
		w=
		read -r w 2>/dev/null <"$p/wchan" || :
		[ "$w" = wait_for_partner ] && [ "$(stat -c %U "$p" 2>/dev/null)" = sandbox ] && return 0
	done
	return 1
}
spec "$TOKEN" main | "$CTL" --timeout 30 --connect "$A" publish --spec - --app-dir "$APP" \
	--branch sandbox/fifo >"$TMP/fifo.out" 2>"$TMP/fifo.err" &
PUB=$!
for _ in $(seq 100); do blocked_on_fifo && break; sleep 0.05; done
check "the publishing process is blocked on the FIFO" blocked_on_fifo
"$CTL" --timeout 5 --connect "$A" hello >"$OUT" 2>"$ERR"
RC=$?
check "the daemon answers another connection meanwhile" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
wait "$PUB"
RC=$?
check "the publish fails (exit 1)" [ "$RC" -eq 1 ]
check "it says the publish was stopped at its deadline" grep -q "did not finish within 3 s" "$TMP/fifo.err"
[ "$RC" -eq 1 ] || cat "$TMP/fifo.err"
check "no branch was made" ! SRVGIT rev-parse -q --verify refs/heads/sandbox/fifo
check "no process of the publish is left" [ -z "$(procs_in "$APP")" ]
as_user "rm .git/config && mv .git/config.real .git/config"

touch "$TMP/stop-sampling"
wait "$SAMPLER" 2>/dev/null
echo "--- the token went nowhere"
check "the sampler made full passes while the pushes ran" [ "$(wc -l <"$TMP/samples")" -ge 1 ]
check "no process's argv or environment held the token" [ ! -s "$TMP/found" ]
[ -s "$TMP/found" ] && cat "$TMP/found"
echo "x $B64 y" >"$TMP/control"
check "the search finds a planted token" grep -rqF -e "$TOKEN" -e "$B64" -e "$URLENC" "$TMP/control"
check "nothing in the workspace (the checkout and its .git)" \
	bash -c "! grep -rqaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$TMP/ws'"
check "nothing in the daemon's state or logs" \
	bash -c "! grep -rqaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$TMP/agent.state' '$TMP/agent.log'"
check "nothing in sandbox-ctl's output" \
	bash -c "! grep -qaF -e '$TOKEN' -e '$B64' -e '$URLENC' '$TMP/out1' '$TMP/err1' '$OUT' '$ERR'"
finish
