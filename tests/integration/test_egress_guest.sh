#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Egress rules in the guest (docs/design.md, "Egress in the guest"), inside a network namespace
# this test creates and removes: nothing here touches the machine's own nftables ruleset. The
# namespace's loopback holds three test hosts: the proxy 10.200.0.1:3128, a forbidden host
# 10.200.0.2:80 and a loopback service 127.0.0.1:5599 (tests/data/limits/listen.py). A boot with
# `egress: {required: true}` with the daemon's proxy (SANDBOX_AGENT_EGRESS_PROXY=http://10.200.0.1:3128) loads the table with the real nft;
# a setup step as the app's user, and a process of the agent's user (one made for the test,
# named by SANDBOX_CLAUDE_USER), then reach the proxy and loopback only, root reaches
# everything, the app gets HTTPS_PROXY & co., --status reports the rules and --discard removes
# them. Without nft a required confinement fails the boot and an optional one is skipped with
# a warning.
. "$(dirname "$0")/lib.sh"
need_root
ensure_sandbox_user || skip "cannot create the sandbox user"
command -v nft >/dev/null || die "nft is missing (packaging/install-deps.sh installs nftables)"
command -v ip >/dev/null || die "ip is missing (iproute2)"

NS=sar-egress-$$
ip netns add "$NS" || skip "cannot create a network namespace"
on_exit "ip netns del $NS"
# nsenter, not `ip netns exec`, which mounts a sysfs of its own (and so hides the cgroups).
in_ns() { nsenter --net="/run/netns/$NS" "$@"; }
in_ns ip link set lo up
in_ns ip addr add 10.200.0.1/32 dev lo
in_ns ip addr add 10.200.0.2/32 dev lo
LISTEN_PORT=18080
DATA=$ROOT/tests/data/limits

# nsenter itself, not the in_ns function: a function sent to the background runs in a subshell
# of its own, so $! would be that shell's, and killing it left the python listener running.
nsenter --net="/run/netns/$NS" python3 "$DATA/listen.py" 10.200.0.1:3128 10.200.0.2:80 10.200.0.1:80 \
	127.0.0.1:5599 "[::1]:5599" >"$TMP/listen.out" 2>&1 &
LISTENER=$!
on_exit "kill $LISTENER"
for _ in $(seq 1 50); do grep -q listening "$TMP/listen.out" && break; sleep 0.1; done
grep -q listening "$TMP/listen.out" || die "the test hosts did not start: $(cat "$TMP/listen.out")"

boot_ns() { # boot_ns APP [args]: sandbox-app-boot in the namespace; sets RC, OUT, ERR
	local app=$1
	shift
	OUT=$TMP/out ERR=$TMP/err
	in_ns $(platform_env) SANDBOX_CLAUDE_USER="$CL_USER" \
		SANDBOX_AGENT_EGRESS_PROXY="${PROXY-http://10.200.0.1:3128}" ${EXTRA_ENV:-} "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" --grace 1000 \
		--cache-root "$TMP/cache" "$@" "$app" >"$OUT" 2>"$ERR"
	RC=$?
}
TARGETS="10.200.0.2:80 10.200.0.1:3128 10.200.0.1:80 127.0.0.1:5599 [::1]:5599"
yml() { # yml EGRESS: a sandbox.yml whose setup tries the targets as the app's user
	printf 'egress: %s\nsetup: ["python3 connects.py %s >connects.out"]\nmanifest: /usr/bin/python3 manifest.py\nstart: exec /usr/bin/python3 server.py\n' \
		"$1" "$TARGETS"
}
has_table() { in_ns nft list table inet sandbox_app_runtime >/dev/null 2>&1; }
egress_of() { # egress_of APP KEY: state.json's egress.KEY
	python3 -c 'import json,sys; e=json.load(open(sys.argv[1])).get("egress") or {}; print(e.get(sys.argv[2]))' \
		"${1%/app}/.sandbox/state.json" "$2"
}

# The coding agent's user, made for this test (sandbox-claude's SANDBOX_CLAUDE_USER names it).
CL_USER=sar-cl-$$
useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin "$CL_USER" ||
	die "cannot create the user $CL_USER"
on_exit "userdel $CL_USER"

echo "--- a boot with required egress confinement"
app=$(pyapp_make egress raw="$(yml '{required: true}')")
cp "$DATA/connects.py" "$app/"
chown -R sandbox: "$app"
on_exit "in_ns $BOOT --stop --grace 1000 $app"
boot_ns "$app" --timeout 60
check "the boot is ready" [ "$RC" -eq 0 ]
[ "$RC" -eq 0 ] || cat "$ERR"
log "the app's user: $(tr '\n' ';' <"$app/connects.out" | cut -c1-300)"
check "the app's user cannot reach a host that is not the proxy" grep -q '^10.200.0.2:80 refused' "$app/connects.out"
check "nor the proxy's host on another port" grep -q '^10.200.0.1:80 refused' "$app/connects.out"
check "the app's user reaches the proxy" grep -q '^10.200.0.1:3128 ok' "$app/connects.out"
check "the app's user reaches loopback" grep -q '^127.0.0.1:5599 ok' "$app/connects.out"
check "and IPv6 loopback" grep -q '^\[::1\]:5599 ok' "$app/connects.out"
check "the app gets HTTPS_PROXY" grep -qx 'HTTPS_PROXY=http://10.200.0.1:3128' "$app/connects.out"
check "and http_proxy" grep -qx 'http_proxy=http://10.200.0.1:3128' "$app/connects.out"
check "and NO_PROXY for loopback" grep -qx 'NO_PROXY=localhost,127.0.0.1,::1' "$app/connects.out"
in_ns setpriv --reuid "$CL_USER" --regid "$CL_USER" --clear-groups \
	/usr/bin/python3 "$DATA/connects.py" 10.200.0.2:80 10.200.0.1:3128 127.0.0.1:5599 >"$TMP/agent.out" 2>&1
log "the agent's user: $(head -3 "$TMP/agent.out" | tr '\n' ';')"
check "the agent's user cannot reach a host that is not the proxy" grep -q '^10.200.0.2:80 refused' "$TMP/agent.out"
check "the agent's user reaches the proxy" grep -q '^10.200.0.1:3128 ok' "$TMP/agent.out"
check "and loopback" grep -q '^127.0.0.1:5599 ok' "$TMP/agent.out"
in_ns python3 "$DATA/connects.py" 10.200.0.2:80 10.200.0.1:80 >"$TMP/root.out"
check "root's connects are unaffected" [ "$(grep -c ' ok$' "$TMP/root.out")" -eq 2 ]
check "the table is loaded in the namespace" has_table
in_ns nft list table inet sandbox_app_runtime >"$TMP/table.txt"
jump=$(grep 'meta skuid' "$TMP/table.txt" | tr -s ' \t' ' ')
log "the rule:$jump"
check "its rules match the app's and the agent's users by uid" \
	grep -qE "skuid \{ ($(id -u sandbox), $(id -u "$CL_USER")|$(id -u "$CL_USER"), $(id -u sandbox)) \} jump confined" <<<"$jump"
check "state.json says applied" [ "$(egress_of "$app" status)" = applied ]
"$BOOT" --status "$app" >"$TMP/status.json" 2>/dev/null
check "--status reports the rules" python3 -c '
import json, sys
e = json.load(open(sys.argv[1]))["egress"]
sys.exit(0 if e["status"] == "applied" and e["proxy"] == "http://10.200.0.1:3128" else 1)' "$TMP/status.json"
check "the server's environment has the proxy" grep -q HTTPS_PROXY <<<"$(in_ns curl -s --noproxy '*' --max-time 5 "http://127.0.0.1:$LISTEN_PORT/env")"

echo "--- --discard removes the rules"
in_ns "$BOOT" --discard --grace 1000 "$app" >/dev/null 2>"$TMP/discard.err"
check "the discard succeeds" [ $? -eq 0 ]
check "the table is gone" ! has_table

echo "--- nft missing"
app=$(pyapp_make nonft raw="$(yml '{required: true}')")
cp "$DATA/connects.py" "$app/"
chown -R sandbox: "$app"
EXTRA_ENV="SANDBOX_AGENT_NFT=/nonexistent/nft" boot_ns "$app" --timeout 60
check "a required confinement fails the boot" [ "$RC" -ne 0 ]
check "and says why" grep -q 'egress confinement was asked for (egress.required) but the rules cannot be applied: /nonexistent/nft is not there' "$ERR"
check "nothing ran" [ ! -e "$app/connects.out" ]
in_ns "$BOOT" --stop --grace 1000 "$app" >/dev/null 2>&1

app=$(pyapp_make optional raw="$(yml '{}')")
cp "$DATA/connects.py" "$app/"
chown -R sandbox: "$app"
EXTRA_ENV="SANDBOX_AGENT_NFT=/nonexistent/nft" boot_ns "$app" --timeout 60
check "an optional confinement lets the boot go on" [ "$RC" -eq 0 ]
check "with a warning" grep -q 'egress rules skipped: /nonexistent/nft is not there' "$ERR"
check "state.json says skipped" [ "$(egress_of "$app" status)" = skipped ]
check "the table was not loaded" ! has_table
in_ns "$BOOT" --discard --grace 1000 "$app" >/dev/null 2>&1

echo "--- the kernel refuses the table (no CAP_NET_ADMIN)"
app=$(pyapp_make nocap raw="$(yml '{required: true}')")
cp "$DATA/connects.py" "$app/"
chown -R sandbox: "$app"
OUT=$TMP/out ERR=$TMP/err
in_ns setpriv --bounding-set -net_admin -- $(platform_env) \
	SANDBOX_AGENT_EGRESS_PROXY=http://10.200.0.1:3128 "$BOOT" --listen "127.0.0.1:$LISTEN_PORT" \
	--grace 1000 --cache-root "$TMP/cache" --timeout 60 "$app" >"$OUT" 2>"$ERR"
RC=$?
check "a required confinement fails the boot" [ "$RC" -ne 0 ]
check "with nft's own words" grep -q 'exited with status 1: .*Operation not permitted' "$ERR"
log "$(grep -m1 'failed' "$ERR" | cut -c1-220)"
check "state.json says failed, with the detail" [ "$(egress_of "$app" status)" = failed ]
check "nothing ran" [ ! -e "$app/connects.out" ]
in_ns "$BOOT" --discard --grace 1000 "$app" >/dev/null 2>&1

echo "--- refusals"
app=$(pyapp_make badproxy raw="$(yml '{proxy: "ftp://10.200.0.1"}')")
boot_ns "$app" --dry-run
check "a proxy that is not http(s) is refused" grep -q 'the scheme must be http or https' "$ERR"
app=$(pyapp_make noproxy raw="$(yml '{required: true}')")
PROXY= boot_ns "$app" --dry-run
check "required without a proxy is refused" grep -q 'egress confinement is required but no proxy is named' "$ERR"
app=$(pyapp_make typo raw="$(yml '{proxi: "http://10.200.0.1:3128"}')")
boot_ns "$app" --dry-run
check "a misspelt key gets a did-you-mean" grep -q 'unknown egress setting `proxi` is ignored; did you mean `proxy`?' "$ERR"
app=$(pyapp_make ownproxy raw="$(yml '{proxy: "http://203.0.113.9:3128"}')")
PROXY= boot_ns "$app" --dry-run
check "a checkout's own egress.proxy is ignored, and says why" \
	grep -q 'warning: `egress.proxy` is ignored: a checkout cannot choose where its own traffic may go' "$ERR"
check "... so no rules use it" ! grep -q '203.0.113.9' "$OUT"
finish
