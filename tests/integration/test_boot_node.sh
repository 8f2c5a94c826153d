#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A real Node 20 + express 4 app (examples/node-app) with its own sandbox.yml: npm ci through
# the shared cache, the file's env delivered, the MCP endpoint behind the forwarder, and a
# second boot reusing the download cache.
. "$(dirname "$0")/lib.sh"
need_root
command -v node >/dev/null 2>&1 || skip "node is not installed"
command -v npm >/dev/null 2>&1 || skip "npm is not installed"
timeout 20 npm ping >/dev/null 2>&1 || skip "the npm registry is not reachable"
ensure_sandbox_user || skip "cannot create the sandbox user"

LISTEN_PORT=$(free_port)
app=$(make_workspace node node-app)
ws=$TMP/node
on_exit "stop_boot $app"

boot() {
	$(platform_env) OPENAI_API_KEY=sk-openai-should-not-pass-1234 "$BOOT" \
		--listen "127.0.0.1:$LISTEN_PORT" --cache-root "$TMP/cache" "$@" "$app" \
		>"$TMP/out" 2>"$TMP/err"
}

boot
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || tail -30 "$TMP/err"
check "/up 200" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
curl -s --noproxy '*' "http://127.0.0.1:$LISTEN_PORT/env-check?present=OPENAI_API_KEY,ANTHROPIC_API_KEY,RAILS_ENV,npm_config_cache" >"$TMP/env.json"
check "the file's env reached the server" \
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["env"]; assert e["APP_GREETING"]=="hello" and e["NODE_ENV"]=="development", e' "$TMP/env.json"
check "model credentials did not" \
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["present"]; assert not p["OPENAI_API_KEY"] and not p["ANTHROPIC_API_KEY"] and not p["RAILS_ENV"], p' "$TMP/env.json"
check "npm's download cache is the shared one" \
	python3 -c 'import json,sys; p=json.load(open(sys.argv[1]))["present"]; assert p["npm_config_cache"], p' "$TMP/env.json"
check "the shared cache was filled" [ -n "$(find "$TMP/cache" -type f 2>/dev/null | head -1)" ]
check "node_modules stayed in the checkout" [ -d "$app/node_modules/express" ]
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$ws/runtime.json")
check "MCP 401 without the token" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/action_agent/mcp")" = 401 ]
check "MCP 405 with it" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/action_agent/mcp" -H "Authorization: Bearer $token")" = 405 ]

"$BOOT" --discard "$app"
check "--discard exits 0" [ $? -eq 0 ]
check "--discard removed the workspace" [ ! -e "$ws" ]
check "--discard left no process" [ -z "$(procs_in "$app")" ]
check "the shared cache survives --discard" [ -n "$(find "$TMP/cache" -type f 2>/dev/null | head -1)" ]

app=$(make_workspace node node-app)
boot
check "a fresh workspace boots again from the warm cache" [ $? -eq 0 ]
finish
