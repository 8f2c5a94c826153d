#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Re-sync of a running app to a new commit (docs/checkout.md, "What a re-sync keeps"): the real
# Node example (examples/node-app, npm ci) committed to the git test server, checked out over
# the channel into the real daemon and booted, then re-synced while it runs. A commit that
# leaves the lockfiles alone carries node_modules over (the very directory: a file planted in
# it survives) and the boot skips npm ci, saying so in state.json and the step's log; a commit
# that changes them gets a fresh node_modules from npm ci; a commit that plants its own
# node_modules as a symbolic link keeps it, and nothing moves through it.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v git >/dev/null || skip "git is not installed"
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"
timeout 20 npm ping >/dev/null 2>&1 || skip "the npm registry is not reachable"
GIT_APP=$ROOT/examples/node-app
. "$(dirname "$0")/lib_git_channel.sh"
. "$(dirname "$0")/lib_resync.sh"
setup_phase() { json "$STATE" "[s for s in d['steps'] if s['name']=='setup'][0]$1"; }
carry() { json "$OUT" "[e for e in d['agent']['carry_over'] if e['path']=='node_modules'][0]$1"; }

echo "--- the first checkout and boot install"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
check "a first checkout carries nothing" [ "$(json "$OUT" 'len(d["agent"]["carry_over"])')" = 0 ]
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "npm ci ran" [ "$(setup_phase "['status']")" = succeeded ]
check "state.json keeps the step's inputs" [ "$(setup_phase "['inputs']" | wc -c)" -eq 65 ]
check "node_modules was installed" [ -d "$APP/node_modules/express" ]
touch "$APP/node_modules/.planted-by-test"

echo "--- a commit that leaves the lockfiles alone"
echo "// a change" >>"$SRC/server.js"
commit "code only"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
check "it reports node_modules carried over" [ "$(carry "['carried']")" = True ]
check "it says why" bash -c "grep -q 'package-lock.json' <<<'$(carry "['why']")'"
check "the daemon's log says so" grep -q 'node_modules carried over' "$TMP/agent.log"
check "the new tree has the change" grep -q "a change" "$APP/server.js"
check "it is the very node_modules (a file planted in it is there)" [ -e "$APP/node_modules/.planted-by-test" ]
check "node_modules belongs to the run user" [ "$(stat -c %U "$APP/node_modules")" = sandbox ]
check "no stage or old tree is left" bash -c "! ls -d '$TMP'/ws/.app.checkout-* 2>/dev/null | grep -q ."
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "npm ci was skipped" [ "$(setup_phase "['status']")" = skipped ]
check "state.json says why" bash -c "grep -q 'inputs are unchanged' <<<'$(setup_phase "['detail']")'"
check "the step's log says so" grep -q '(skipped: its inputs are unchanged' "$TMP/ws/.sandbox/logs/setup.log"
check "/up answers" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
check "the server runs the new commit" bash -c "tr '\0' ' ' </proc/$(json "$STATE" "d['server_pid']")/cmdline | grep -q node"

echo "--- a commit that changes the lockfiles"
sed -i 's/"version": "1.0.0"/"version": "1.0.1"/' "$SRC/package.json"
python3 - "$SRC/package-lock.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["version"] = d["packages"][""]["version"] = "1.0.1"
open(sys.argv[1], "w").write(json.dumps(d, indent=2) + "\n")
PY
commit "lockfile"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
check "node_modules is not carried" [ "$(carry "['carried']")" = False ]
check "it says the lockfile changed" bash -c "grep -q 'changed' <<<'$(carry "['why']")'"
check "the new tree has no node_modules before the boot" [ ! -e "$APP/node_modules" ]
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "npm ci ran again" [ "$(setup_phase "['status']")" = succeeded ]
check "a fresh node_modules (the planted file is gone)" \
	bash -c "[ -d '$APP/node_modules/express' ] && [ ! -e '$APP/node_modules/.planted-by-test' ]"

echo "--- a commit that plants node_modules as a link"
mkdir -p "$TMP/victim"
echo keep >"$TMP/victim/file"
ln -s "$TMP/victim" "$SRC/node_modules"
sed -i 's/^node_modules.*$//' "$SRC/.gitignore"
commit "hostile link"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
check "node_modules is not carried" [ "$(carry "['carried']")" = False ]
check "it says the new tree has its own" bash -c "grep -q 'has its own node_modules' <<<'$(carry "['why']")'"
check "the tree's link is as committed" [ "$(readlink "$APP/node_modules")" = "$TMP/victim" ]
check "nothing moved through it" bash -c "[ \"\$(ls -A '$TMP/victim')\" = file ]"
finish
