#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A real Rails 6.1 app (examples/rails-app) booted the two ways the platform calls us:
#   1. directory shape, with the platform's environment and no sandbox.yml (the defaults);
#   2. spec shape, with named steps, if_task, a failure and `--from STEP` resuming it.
. "$(dirname "$0")/lib.sh"
need_root
command -v rails >/dev/null 2>&1 || skip "Rails is not installed (apt-get install ruby-rails)"
ensure_sandbox_user || skip "cannot create the sandbox user"

MODEL_KEY=sk-ant-api03-modelcredential-4242424242
SESSION_ID=railstest0001abcd
LISTEN_PORT=8080
port_is_free 8080 || LISTEN_PORT=$(free_port)

json_get() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

echo "--- directory shape, as the platform runs it"
app=$(make_workspace dir rails-app)
ws=$TMP/dir
on_exit "stop_boot $app"
$(platform_env) "$BOOT" --listen "0.0.0.0:$LISTEN_PORT" --cache-root "$TMP/cache" "$app" \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || tail -40 "$TMP/err"
check "GET :$LISTEN_PORT/up answers 200 on the first try" \
	[ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
check "runtime.json parses with the contract's keys" \
	python3 -c 'import json,sys,re; d=json.load(open(sys.argv[1])); assert set(d)=={"mcp_path","mcp_token"}; assert re.fullmatch(r"aa_[1-9A-HJ-NP-Za-km-z]{32}", d["mcp_token"]); assert d["mcp_path"].startswith("/")' \
	"$ws/runtime.json"
token=$(json_get "$ws/runtime.json" mcp_token)
mcp=$(json_get "$ws/runtime.json" mcp_path)
check "MCP without the token: 401" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT$mcp")" = 401 ]
check "MCP GET with the token: 405" \
	[ "$(http_status "http://127.0.0.1:$LISTEN_PORT$mcp" -H "Authorization: Bearer $token")" = 405 ]
check "the credential is in no log" ! grep -rqF "$MODEL_KEY" "$ws/.sandbox"
check "the credential is not in runtime.json" ! grep -qF "$MODEL_KEY" "$ws/runtime.json"
check "the credential is in no process's environment or argv" [ -z "$(procs_holding "$MODEL_KEY")" ]
server=$(procs_in "$app" | head -1)
check "the server runs" [ -n "$server" ]
if [ -n "$server" ]; then
	tr '\0' '\n' <"/proc/$server/environ" >"$TMP/server.env"
	check "the server runs as sandbox" [ "$(stat -c %U "/proc/$server")" = sandbox ]
	check "RAILS_ENV=sandbox was dropped (development)" ! grep -q '^RAILS_ENV=' "$TMP/server.env"
	check "DATABASE_URL points at the workspace's sqlite file" \
		grep -qx "DATABASE_URL=sqlite3:$ws/db/development.sqlite3" "$TMP/server.env"
	check "the session id is passed on" grep -qx "ACTION_AGENT_SANDBOX_SESSION_ID=$SESSION_ID" "$TMP/server.env"
	check "PORT is set for the server" grep -q '^PORT=[0-9]' "$TMP/server.env"
fi
check "the sqlite database exists" [ -s "$ws/db/development.sqlite3" ]
check "logs: setup, manifest, server" all_of [ -s "$ws/.sandbox/logs/setup.log" ] -- \
	[ -s "$ws/.sandbox/logs/manifest.log" ] -- [ -s "$ws/.sandbox/logs/server.log" ]
check "setup.log has each command under its \$ line" \
	bash -c "grep -qx '\$ bundle install' '$ws/.sandbox/logs/setup.log' && grep -qx '\$ bin/rails db:prepare' '$ws/.sandbox/logs/setup.log'"
check "the MCP token is masked in the server log" ! grep -qF "$token" "$ws/.sandbox/logs/server.log"

$(platform_env) "$BOOT" --restart --listen "0.0.0.0:$LISTEN_PORT" --cache-root "$TMP/cache" "$app" \
	>"$TMP/out" 2>"$TMP/err"
check "--restart exits 0" [ $? -eq 0 ]
check "--restart reused the API key" [ "$(json_get "$ws/runtime.json" mcp_token)" = "$token" ]
check "/up after --restart" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]

"$BOOT" --stop "$app"
check "--stop exits 0" [ $? -eq 0 ]
check "--stop leaves no process" [ -z "$(procs_in "$app")" ]
check "--stop frees the port" port_is_free "$LISTEN_PORT"

echo "--- spec shape, with a failure resumed by --from"
app=$(make_workspace spec rails-app)
ws=$TMP/spec
mkdir -p "$ws/boot" "$ws/run"
on_exit "stop_boot --spec $ws/boot/spec.json"
cat >"$ws/boot/spec.json" <<EOF
{"version": 1, "app_dir": "$app", "manifest_path": "$ws/run/runtime.json",
 "port": $(free_port), "listen_port": $(free_port), "timeout": 300, "user": "sandbox",
 "directories": ["$ws/data"],
 "env": {"APP_MARKER": "from-spec"},
 "secret_names": ["MY_SERVICE_TOKEN"],
 "steps": [
   {"name": "bundle", "command": "bundle install", "timeout": 120},
   {"name": "assets", "command": "bin/rails assets:precompile", "if_task": "assets:precompile"},
   {"name": "notes", "command": "echo never", "skip": "not needed here"},
   {"name": "db_prepare", "command": "test -f $ws/data/go && bin/rails db:prepare"}
 ],
 "manifest": {"command": "bin/rails action_agent:sandbox:manifest", "timeout": 120},
 "start": {"command": "exec bin/rails server -b 127.0.0.1 -p \$PORT"},
 "start_url": "/up",
 "mode": "agent", "kind": "rails", "facts": {"anything": [1, 2]}}
EOF
chmod 600 "$ws/boot/spec.json"
spec_boot() {
	$(platform_env) MY_SERVICE_TOKEN=svc-token-abcdef123456 "$BOOT" --spec "$ws/boot/spec.json" \
		--cache-root "$TMP/cache" "$@" >"$TMP/out" 2>"$TMP/err"
}
spec_boot
check "a failing step: exit 1" [ $? -eq 1 ]
check "the cause names db_prepare" bash -c "tail -1 '$TMP/err' | grep -q '^Sandbox db_prepare failed: '"
check "state.json is in the spec's directory and says failed" \
	bash -c "python3 -c 'import json; d=json.load(open(\"$ws/boot/state.json\")); assert d[\"status\"]==\"failed\" and d[\"step\"]==\"db_prepare\"'"
check "state.json is 0600" [ "$(stat -c %a "$ws/boot/state.json")" = 600 ]
check "the step has its own log" [ -s "$ws/boot/logs/db_prepare.log" ]
check "the if_task step was skipped (no such task), and says so" \
	grep -q '(skipped: the app has no assets:precompile task)' "$ws/boot/logs/assets.log"
check "a skipped step's reason is in its log" grep -q '(skipped: not needed here)' "$ws/boot/logs/notes.log"
check "state.json lists the skipped steps" \
	python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["skipped"]==["assets","notes"]' "$ws/boot/state.json"
check "a directory from the spec exists, owned by sandbox, 0700" [ "$(stat -c '%U %a' "$ws/data")" = "sandbox 700" ]
touch "$ws/data/go"
spec_boot --from db_prepare
rc=$?
check "--from db_prepare: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || tail -30 "$TMP/err"
check "prints {\"status\":\"ready\"}" [ "$(cat "$TMP/out")" = '{"status":"ready"}' ]
check "runtime.json at manifest_path, 0600" [ "$(stat -c '%U %a' "$ws/run/runtime.json")" = "root 600" ]
check "bundle ran once (not again on --from)" [ "$(grep -c '^\$ bundle install' "$ws/boot/logs/bundle.log")" = 1 ]
check "the spec's secret is in no log" ! grep -rqF svc-token-abcdef123456 "$ws/boot"
server=$(procs_in "$app" | head -1)
if [ -n "$server" ]; then
	check "the spec's env reaches the server" bash -c "tr '\0' '\n' </proc/$server/environ | grep -qx APP_MARKER=from-spec"
	check "a secret_names secret reaches the server" bash -c "tr '\0' '\n' </proc/$server/environ | grep -qx MY_SERVICE_TOKEN=svc-token-abcdef123456"
else
	fail "the server runs after --from"
fi
"$BOOT" --stop --spec "$ws/boot/spec.json"
check "--stop (spec) leaves no process" [ -z "$(procs_in "$app")" ]

finish
