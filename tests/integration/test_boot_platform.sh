#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# What the later platform expects of the spec shape (docs/platform-contract.md §14), with the
# smallest app (tests/data/pyapp): the root-only path of the spec, --restart only after a
# ready boot and --from only after a failed one (each refused before anything changes),
# state.json in the platform's schema (steps with status, times and durations, failed_step,
# resumable_steps, recorded_steps first), and services started by the image's start-NAME
# scripts or refused with the place they were looked for.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"

json() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2" 2>/dev/null; }
# jtrue FILE EXPR: exit 0 when the python3 expression on the document `d` is true.
jtrue() { /usr/bin/python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null; }
PORT=$(free_port)
W=$TMP/ws
mkdir -p "$W/boot" "$TMP/services"
chmod 0755 "$W"
chmod 0700 "$W/boot"
cp -a "$ROOT/tests/data/pyapp" "$W/app"
chown -R sandbox: "$W/app"
SPEC=$W/boot/spec.json
on_exit "'$BOOT' --spec '$SPEC' --stop --grace 1000"

write_spec() { # write_spec SERVICES_JSON
	cat >"$SPEC" <<JSON
{"version": 1, "app_dir": "$W/app", "manifest_path": "$W/runtime.json", "user": "sandbox",
 "port": 3000, "timeout": 60, "mode": "preview", "kind": "python",
 "toolchain": {"services": $1},
 "recorded_steps": [{"name": "checkout", "status": "succeeded", "duration_ms": 812}],
 "steps": [{"name": "setup", "command": "echo setting up"},
           {"name": "setup_2", "command": "true", "skip": "nothing to migrate"},
           {"name": "setup_3", "command": "test -e $W/go || { echo 'no go file (cause-p41)' >&2; exit 3; }"}],
 "manifest": {"command": "/usr/bin/python3 manifest.py"},
 "start": {"command": "exec /usr/bin/python3 server.py"}}
JSON
	chmod 0600 "$SPEC"
}
boot() { "$BOOT" --spec "$SPEC" --listen "127.0.0.1:$PORT" --services-dir "$TMP/services" --grace 1000 "$@"; }

echo "--- the spec's path: root's alone"
write_spec '[]'
mkdir -p "$TMP/open/boot" && chmod 0777 "$TMP/open" && cp "$SPEC" "$TMP/open/boot/" && chmod 0700 "$TMP/open/boot"
"$BOOT" --spec "$TMP/open/boot/spec.json" --dry-run >/dev/null 2>"$TMP/open.err"
check "a directory above the spec writable by others: refused (exit 2)" [ $? -eq 2 ]
check "and the message names that directory" grep -qF "$TMP/open must be a directory of root's" "$TMP/open.err"
ln -s "$W/boot" "$TMP/linked"
"$BOOT" --spec "$TMP/linked/spec.json" --dry-run >/dev/null 2>"$TMP/link.err"
check "a link above the spec: refused (exit 2)" all_of [ $? -eq 2 ] -- grep -q "a link" "$TMP/link.err"
mkdir -p "$TMP/theirs/boot" && chown sandbox: "$TMP/theirs" && cp "$SPEC" "$TMP/theirs/boot/"
"$BOOT" --spec "$TMP/theirs/boot/spec.json" --dry-run >/dev/null 2>&1
check "a directory of another user above the spec: refused (exit 2)" [ $? -eq 2 ]
"$BOOT" --spec "$SPEC" --dry-run >/dev/null 2>"$TMP/ok.err"
check "below /tmp (sticky) in root's directories: accepted" [ $? -eq 0 ]

echo "--- resume rules"
boot --restart >/dev/null 2>"$TMP/r0.err"
check "--restart before any boot: refused (exit 2)" [ $? -eq 2 ]
check "it says why" grep -q -- "--restart needs a ready boot" "$TMP/r0.err"
boot >/dev/null 2>"$TMP/b1.err"
check "the first boot fails at setup_3 (exit 1)" [ $? -eq 1 ]
check "state.json: version 1, status failed, failed_step setup_3" \
	[ "$(json "$W/boot/state.json" 'str(d["version"]) + " " + d["status"] + " " + d["failed_step"]')" = "1 failed setup_3" ]
check "state.json: mode and kind from the spec, kept false" \
	[ "$(json "$W/boot/state.json" 'd["mode"] + " " + d["kind"] + " " + str(d["kept"])')" = "preview python False" ]
check "state.json: times in ISO 8601, UTC, milliseconds" \
	jtrue "$W/boot/state.json" '__import__("re").fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", d["started_at"]) and d["finished_at"] >= d["started_at"]'
check "state.json: the spec's recorded_steps first, as written" \
	[ "$(json "$W/boot/state.json" 'd["steps"][0]')" = "{'name': 'checkout', 'status': 'succeeded', 'duration_ms': 812}" ]
check "state.json: one entry per phase, with their status" \
	[ "$(json "$W/boot/state.json" '" ".join(s["name"] + ":" + s["status"] for s in d["steps"][1:])')" = \
		"preflight:succeeded toolchain:succeeded setup:succeeded setup_2:skipped setup_3:failed manifest:pending start:pending" ]
check "state.json: the failed phase has its cause, its log and a duration" \
	jtrue "$W/boot/state.json" '[s for s in d["steps"] if s["name"] == "setup_3"][0]["detail"].startswith("`test -e") and d["steps"][5]["log"].endswith("setup_3.log") and d["steps"][5]["duration_ms"] >= 0'
check "state.json: resumable_steps up to the failed one" \
	[ "$(json "$W/boot/state.json" '",".join(d["resumable_steps"])')" = setup,setup_2,setup_3 ]
boot --restart >/dev/null 2>"$TMP/r1.err"
check "--restart after a failed boot: refused (exit 2)" [ $? -eq 2 ]
check "and state.json still shows the failed boot" [ "$(json "$W/boot/state.json" 'd["status"]')" = failed ]
touch "$W/go"
out=$(boot --from setup_3 2>"$TMP/f1.err")
check "--from setup_3 after the failure: ready" all_of [ $? -eq 0 ] -- [ "$out" = '{"status":"ready"}' ]
check "state.json: running phases all succeeded, resumed_from setup_3" \
	[ "$(json "$W/boot/state.json" 'd["status"] + " " + d["resumed_from"] + " " + str(all(s["status"] in ("succeeded", "skipped") for s in d["steps"][1:]))')" = "ready setup_3 True" ]
check "state.json: server_pid and forwarder_pid" \
	jtrue "$W/boot/state.json" 'd["server_pid"] > 1 and d["forwarder_pid"] > 1'
boot --from setup >/dev/null 2>"$TMP/f2.err"
check "--from after a ready boot: refused (exit 2)" [ $? -eq 2 ]
check "and the app still answers" [ "$(http_status "http://127.0.0.1:$PORT/up")" = 200 ]
boot --restart >/dev/null 2>"$TMP/r2.err"
check "--restart after the ready boot: exit 0" [ $? -eq 0 ]
check "state.json: restarted" [ "$(json "$W/boot/state.json" 'str(d["restarted"])')" = True ]
"$BOOT" --spec "$SPEC" --stop --grace 1000

echo "--- services"
cat >"$TMP/services/start-probe" <<EOF2
#!/bin/sh
echo started >"$TMP/probe.started"
EOF2
chmod 0755 "$TMP/services/start-probe"
write_spec '["probe"]'
boot >/dev/null 2>&1
check "the image's start-probe script ran for the service probe" grep -qx started "$TMP/probe.started"
"$BOOT" --spec "$SPEC" --stop --grace 1000
write_spec '["no-such-service"]'
boot >/dev/null 2>"$TMP/svc.err"
check "a service the image does not have fails the boot" [ $? -ne 0 ]
check "naming where it was looked for" grep -qF "no $TMP/services/start-no-such-service" "$TMP/svc.err"
check "state.json: the toolchain phase failed" \
	[ "$(json "$W/boot/state.json" '[s["status"] for s in d["steps"] if s["name"] == "toolchain"][0]')" = failed ]
chmod 0777 "$TMP/services/start-probe"
write_spec '["probe"]'
rm -f "$TMP/probe.started"
boot >/dev/null 2>&1
check "a start script others may write is not run" [ ! -e "$TMP/probe.started" ]
finish
