#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A PostgreSQL-backed Rails app (examples/rails-pg-app) with Debian's server: the engine starts
# the local cluster when it is stopped, gives the run user a role that may create databases,
# points DATABASE_URL at a throwaway database named after the session, the app's own db:prepare
# creates it, and --discard drops it.
. "$(dirname "$0")/lib.sh"
need_root
command -v rails >/dev/null 2>&1 || skip "Rails is not installed"
command -v pg_ctlcluster >/dev/null 2>&1 || skip "PostgreSQL is not installed (apt-get install postgresql)"
ruby -e 'require "pg"' 2>/dev/null || skip "ruby-pg is not installed"
cluster=$(ls -d /etc/postgresql/*/* 2>/dev/null | head -1)
[ -n "$cluster" ] || skip "no PostgreSQL cluster configured"
ver=$(basename "$(dirname "$cluster")") name=$(basename "$cluster")
ensure_sandbox_user || skip "cannot create the sandbox user"

was_running=0
pg_ctlcluster "$ver" "$name" status >/dev/null 2>&1 && was_running=1
[ $was_running -eq 1 ] || on_exit "pg_ctlcluster $ver $name stop"

SESSION_ID=pgtest42deadbeef
db=rails_pg_app_development_sandbox_pgtest42
LISTEN_PORT=$(free_port)
app=$(make_workspace pg rails-pg-app)
ws=$TMP/pg
on_exit "su postgres -c \"psql -X -q -c 'DROP DATABASE IF EXISTS $db'\""
on_exit "stop_boot $app"

$(platform_env) "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --cache-root "$TMP/cache" "$app" \
	>"$TMP/out" 2>"$TMP/err"
rc=$?
check "exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || tail -30 "$TMP/err"
check "the cluster runs" bash -c "pg_ctlcluster $ver $name status >/dev/null"
check "the throwaway database exists, owned by sandbox" \
	[ "$(su postgres -c "psql -X -tAc \"SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname='$db'\"")" = sandbox ]
check "the app's migrations ran there" \
	[ "$(su postgres -c "psql -X -tA -d $db -c 'SELECT count(*) FROM schema_migrations'")" -ge 1 ]
check "/up 200" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]
token=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["mcp_token"])' "$ws/runtime.json")
check "MCP 405 with the token (the key lives in PostgreSQL)" \
	[ "$(http_status "http://127.0.0.1:$LISTEN_PORT/action_agent/mcp" -H "Authorization: Bearer $token")" = 405 ]

"$BOOT" --discard "$app"
check "--discard exits 0" [ $? -eq 0 ]
check "--discard dropped the database" \
	[ -z "$(su postgres -c "psql -X -tAc \"SELECT 1 FROM pg_database WHERE datname='$db'\"")" ]
check "--discard removed the workspace" [ ! -e "$ws" ]
finish
