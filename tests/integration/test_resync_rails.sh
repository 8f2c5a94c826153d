#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Re-sync of a running Rails app (examples/rails-app, SQLite) to a new commit (docs/checkout.md,
# "What a re-sync keeps"): checked out from the git test server over the channel into the real
# daemon, booted, then re-synced while it runs. The throwaway SQLite database lives in the
# workspace, so it outlives the swapped tree; a commit that leaves the schema, the migrations,
# the seeds, database.yml and Gemfile.lock alone lets the boot skip `bin/rails db:prepare`,
# saying so (what the app wrote is still there, and the manifest reuses its API key); a commit
# that adds a migration runs db:prepare again, which makes the new table.
. "$(dirname "$0")/lib.sh"
need_root
CTL=$BUILD/sandbox-ctl
command -v lighttpd >/dev/null || skip "lighttpd is not installed (packaging/install-deps.sh)"
command -v rails >/dev/null 2>&1 || skip "Rails is not installed (apt-get install ruby-rails)"
command -v sqlite3 >/dev/null 2>&1 || skip "sqlite3 is not installed"
GIT_APP=$ROOT/examples/rails-app
. "$(dirname "$0")/lib_git_channel.sh"
. "$(dirname "$0")/lib_resync.sh"
DB=$TMP/ws/db/development.sqlite3
phase() { json "$STATE" "[s for s in d['steps'] if s['name']=='$1'][0]$2"; }
token() { "$CTL" --connect "$A" runtime --app-dir "$APP" 2>/dev/null | json /dev/stdin "d['runtime']['mcp_token']"; }

echo "--- the first checkout and boot prepare the database"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "db:prepare ran" [ "$(phase setup_2 "['status']")" = succeeded ]
check "state.json keeps its inputs" [ "$(phase setup_2 "['inputs']" | wc -c)" -eq 65 ]
check "the database was made" [ -f "$DB" ]
TOKEN1=$(token)
check "the manifest gave a token" [ -n "$TOKEN1" ]
INODE=$(stat -c %i "$DB")
# What the app wrote since: a row of its own (a row, not a table: the schema stays as prepared).
sqlite3 "$DB" "INSERT INTO api_keys (name, token, token_digest, created_at, updated_at)
	VALUES ('planted_by_test', 'x', 'planted', datetime('now'), datetime('now'))"
planted() { sqlite3 "$DB" "SELECT count(*) FROM api_keys WHERE name = 'planted_by_test'"; }

echo "--- a commit that leaves the schema alone"
echo "# a change" >>"$SRC/config/routes.rb"
commit "code only"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
check "the database is the very file, outside the swapped tree" [ "$(stat -c %i "$DB")" = "$INODE" ]
check "the new tree has the change" grep -q "a change" "$APP/config/routes.rb"
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "db:prepare was skipped" [ "$(phase setup_2 "['status']")" = skipped ]
check "state.json says why, naming the migrations" \
	bash -c "grep -q 'inputs are unchanged since it last succeeded (db/schema.rb, db/seeds.rb, db/migrate/' <<<'$(phase setup_2 "['detail']")'"
check "the step's log says so" \
	bash -c "grep -rhA1 -F '\$ bin/rails db:prepare' '$TMP/ws/.sandbox/logs/' | grep -q '(skipped: its inputs are unchanged'"
check "what the app wrote is still there" [ "$(planted)" = 1 ]
check "the manifest reused the same API key" [ "$(token)" = "$TOKEN1" ]
check "/up answers" [ "$(http_status "http://127.0.0.1:$LISTEN_PORT/up")" = 200 ]

echo "--- the schema changed in place (what a rollback or a schema load does)"
sqlite3 "$DB" "CREATE TABLE changed_in_place (x)"
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "db:prepare ran again, though nothing in the tree changed" [ "$(phase setup_2 "['status']")" = succeeded ]

echo "--- a commit that adds a migration"
cat >"$SRC/db/migrate/20250101000000_create_notes.rb" <<'RB'
class CreateNotes < ActiveRecord::Migration[6.1]
  def change
    create_table :notes do |t|
      t.string :body
    end
  end
end
RB
commit "a migration"
checkout
check "checkout exits 0" [ "$RC" -eq 0 ]
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "db:prepare ran again" [ "$(phase setup_2 "['status']")" = succeeded ]
check "the new table exists" [ "$(sqlite3 "$DB" 'SELECT count(*) FROM notes')" = 0 ]
check "what the app wrote is still there" [ "$(planted)" = 1 ]

echo "--- the database removed"
rm -f "$DB"
boot
check "boot --wait exits 0" [ "$RC" -eq 0 ]
check "db:prepare ran again" [ "$(phase setup_2 "['status']")" = succeeded ]
check "the database is back" [ -f "$DB" ]
finish
