#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Egress enforced by the host, and `sandbox-ctl verify` (docs/isolation.md), on a real Incus:
# a private incusd in network and mount namespaces of its own (tests/incus/daemon.sh), a managed
# bridge `incusbr0` INSIDE that namespace (so the example profile applies whole, its NIC
# included), test hosts on that namespace's loopback (tests/incus/egress.sh): an allowed
# endpoint, an RFC 1918 host, a public host outside the allowlist and 169.254.169.254, each an
# http.server; squid configured by `sandbox-ctl egress` running there too. Two containers of the
# minimal image under the example restricted profile: one confined (`sandbox-ctl --incus C
# egress` applied its network ACL), one open (the same NIC without an ACL).
#   - confined: the allowed endpoint answers through the proxy; the forbidden, public and
#     metadata hosts are refused directly and through the proxy (403 naming the policy, logged
#     in the proxy's access.log on the host); the proxy's other ports and the bridge's address
#     are refused; :8080 answers the controller's address only;
#   - `sandbox-ctl verify` passes on the confined container (recorded in the guest, root-only)
#     and fails on the open one, and says which check failed;
#   - no packet leaves: the namespace has no route out, the machine's interfaces are unchanged.
# Figures: egress attempts tried and refused, the time verify takes.
. "$(dirname "$0")/lib.sh"
. "$ROOT/tests/incus/daemon.sh"
. "$ROOT/tests/incus/image.sh"
. "$ROOT/tests/incus/egress.sh"

[ "$(id -u)" = 0 ] || skip "needs root (incusd, namespaces)"
for tool in unshare nsenter ip ss python3 ruby squid debootstrap dpkg-deb; do
	command -v "$tool" >/dev/null || skip "$tool is missing (packaging/install-deps.sh)"
done
[ -f "$ROOT/mk/static.mk" ] || skip "no \`make static\` in this tree: the image carries the static guest binary"
CTL=$BUILD/sandbox-ctl
[ -x "$CTL" ] || skip "build/sandbox-ctl is missing: run make first"
if ! "$ROOT/tests/incus/install.sh" --check 2>/dev/null; then
	[ "${SANDBOX_INCUS_INSTALL:-1}" = 0 ] && skip "Incus 6.0 is not installed (SANDBOX_INCUS_INSTALL=0)"
	"$ROOT/tests/incus/install.sh" >"$TMP/install.out" 2>&1 || {
		tail -20 "$TMP/install.out"
		skip "cannot install Incus 6.0 from bookworm-backports (see above)"
	}
fi
elapsed() { python3 -c "import sys; print('%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$1" "$(date +%s.%N)"; }
json() { python3 -c "import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))" "$@" 2>/dev/null; }

incus_image_minimal || die "the minimal image (make deb, make image IMAGE_PROFILE=minimal)"
log "image $(basename "$IMAGE")"

# --- the daemon and its network -------------------------------------------------------------------
links_before=$(ip -o link | cut -d: -f2 | sort | paste -sd' ')
on_exit incus_daemon_stop
on_exit egress_stop
INCUS_OWN_SYSFS=1 incus_daemon_start "$TMP/incus" >"$TMP/daemon.out" 2>&1 || {
	cat "$TMP/daemon.out"
	die "incusd started in a network namespace of its own"
}
pass "incusd (pid $INCUS_PID) in a network namespace of its own"
E=$TMP/egress
egress_net_start "$E" >"$TMP/net.out" 2>&1 || {
	cat "$TMP/net.out"
	die "the test network in the daemon's namespace (dummy hosts, incusbr0)"
}
check "the daemon's namespace has no route out (no default route)" \
	test -z "$(innet ip route show default; innet ip -6 route show default)"

inc image import "$IMAGE" --alias sandbox-app-runtime-test >/dev/null 2>&1 || die "incus image import"
inc profile create sandbox-app >/dev/null && inc profile edit sandbox-app <"$ROOT/image-build/incus-profile.yaml" &&
	inc profile create sandbox-app-test >/dev/null &&
	inc profile edit sandbox-app-test <"$ROOT/tests/incus/profile-test.yaml"
check "the example profile applies whole, its NIC on incusbr0" test $? -eq 0

# --- the policy: sandbox-ctl egress ------------------------------------------------------------------
export XDG_CONFIG_HOME=$TMP/xdg
"$CTL" keygen --out "$XDG_CONFIG_HOME/sandbox-ctl/key" >/dev/null
CT=sar-conf-$$ OPEN=sar-open-$$
INCUS_INSTANCES="$CT $OPEN"
# The packaged unit is masked before the first start (as test_incus does): the seccomp rule
# refusing AF_VSOCK must be in force before the daemon runs.
mask() { ln -s /dev/null "$INCUS_DIR/storage-pools/default/containers/$1/rootfs/etc/systemd/system/sandbox-agent.service"; }
# launch NAME IP [EGRESS_JSON]: a container of the image under the example profile, its address
# set by hand (no DHCP on the test bridge), the policy applied by sandbox-ctl egress before
# its first start when EGRESS_JSON is given, the agent's daemon started with the host's key.
launch() {
	local gw=$EGRESS_BRIDGE_IP
	[ -n "$3" ] || gw=$EGRESS_OPEN_BRIDGE_IP
	inc init -q sandbox-app-runtime-test "$1" --profile default --profile sandbox-app \
		--profile sandbox-app-test >"$TMP/init-$1.out" 2>&1 || return 1
	mask "$1"
	# This machine's kernel has no tc police action (act_police), which the profile's NIC
	# bandwidth limits need: they are dropped here, the rest of the NIC is the profile's.
	inc config device override "$1" eth0 "ipv4.address=$2" >>"$TMP/init-$1.out" 2>&1 &&
		inc config device unset "$1" eth0 limits.ingress &&
		inc config device unset "$1" eth0 limits.egress || return 1
	inc config set "$1" user.sandbox-agent.authorized-keys "$(cat "$XDG_CONFIG_HOME/sandbox-ctl/key.pub")"
	# The ACL goes on the confined container's bridge (--network): this machine's kernel has
	# no bridge-family conntrack or reject, which Incus's NIC-level ACLs need
	# (docs/isolation.md). The open container is on a bridge of its own.
	if [ -n "$3" ]; then
		"$CTL" --incus "$1" -q egress --proxy "$EGRESS_BRIDGE_IP:$EGRESS_PROXY_PORT" \
			--controller "$EGRESS_CONTROLLER_IP" --no-default-allow --allow allowed.sandbox.test:80 \
			--out "$E/proxy" --hosts-file "$E/hosts" --network incusbr0 >"$3" 2>"$3.err" || return 1
	else
		inc config device set "$1" eth0 network=sarbr-open >>"$TMP/init-$1.out" 2>&1 || return 1
	fi
	inc start "$1" >>"$TMP/init-$1.out" 2>&1 || return 1
	# systemd's bus may not be there yet when the first exec comes.
	for _ in $(seq 100); do inc exec "$1" -- test -S /run/systemd/private 2>/dev/null && break; sleep 0.2; done
	inc exec "$1" -- timeout 60 systemctl is-system-running --wait >/dev/null 2>&1
	inc exec "$1" -- sh -c "ip link set eth0 up && ip addr add $2/24 dev eth0 &&
		ip route add default via $gw" >>"$TMP/init-$1.out" 2>&1 || return 1
	inc exec "$1" -- sh -c 'systemctl start sandbox-agent-incus-keys.service &&
		systemctl unmask sandbox-agent.service && systemctl daemon-reload &&
		timeout 15 systemctl start sandbox-agent.service' >>"$TMP/init-$1.out" 2>&1
}
t=$(date +%s.%N)
launch "$CT" 10.213.7.10 "$TMP/egress.json"
rc=$?
check "sandbox-ctl --incus $CT egress applied the ACL, and the container started ($(elapsed "$t") s)" test $rc -eq 0
[ $rc -eq 0 ] || { cat "$TMP/init-$CT.out" "$TMP/egress.json.err" 2>/dev/null | tail -10; die "the confined container"; }
launch "$OPEN" 10.213.8.11 ""
rc=$?
check "the open container (no ACL) started" test $rc -eq 0
[ $rc -eq 0 ] || { tail -10 "$TMP/init-$OPEN.out"; die "the open container"; }
check "the ACL exists with the rules sandbox-ctl wrote" \
	grep -q "destination_port: \"$EGRESS_PROXY_PORT\"" <(inc network acl show "sandbox-egress-$CT")
check "Incus enforces it with nftables in the daemon's namespace" \
	grep -q "aclfwd.incusbr0" <(innet nft list ruleset)
check "the confined container's network carries it, default actions reject" \
	test "$(inc network get incusbr0 security.acls)/$(inc network get incusbr0 security.acls.default.egress.action)" = "sandbox-egress-$CT/reject"
check "the ACL's reject rules leave the proxy's address out" \
	grep -q "10.0.0.0-10.213.7.0,10.213.7.2-10.255.255.255" "$E/proxy/acl.json"
egress_controller_addr
egress_proxy_start "$E/proxy" >"$TMP/proxy.out" 2>&1
check "squid runs with the configuration sandbox-ctl egress wrote" test $? -eq 0
[ -s "$TMP/proxy.out" ] && sed 's/^/    /' "$TMP/proxy.out"

# --- by hand: what the confined container can reach ---------------------------------------------------
# probe C via URL: "ok CODE" when an HTTP answer came back, "refused ..." otherwise
# (via: direct, or proxy). Every attempt is capped at 3 s.
TRIED=0 REFUSED=0
probe() {
	inc exec "$1" -- python3 - "$2" "$3" "http://$EGRESS_BRIDGE_IP:$EGRESS_PROXY_PORT" <<'PY'
import sys, urllib.request, urllib.error
via, url, proxy = sys.argv[1:4]
h = urllib.request.ProxyHandler({"http": proxy, "https": proxy} if via == "proxy" else {})
try:
    r = urllib.request.build_opener(h).open(url, timeout=3)
    print("ok", r.status)
except urllib.error.HTTPError as e:
    print("refused-by-proxy" if e.headers.get("X-Squid-Error") else "ok", e.code)
except Exception as e:
    print("refused", type(e).__name__)
PY
}
# refused C VIA URL WHAT: a check that the attempt was refused, counted.
refused() {
	local got
	got=$(probe "$1" "$2" "$3")
	TRIED=$((TRIED + 1))
	case $got in refused*) REFUSED=$((REFUSED + 1)) ;; esac
	check "$4: refused ($got)" test "${got#refused}" != "$got"
}
got=$(probe "$CT" proxy http://allowed.sandbox.test/)
check "the allowed endpoint answers through the proxy ($got)" test "$got" = "ok 200"
refused "$CT" proxy http://forbidden.sandbox.test/ "an RFC 1918 host by name through the proxy"
refused "$CT" proxy "http://$EGRESS_FORBIDDEN_IP/" "an RFC 1918 host by address through the proxy"
refused "$CT" proxy http://public.sandbox.test/ "a public host outside the allowlist through the proxy"
refused "$CT" proxy "http://$EGRESS_METADATA_IP/latest/meta-data/" "the metadata address through the proxy"
refused "$CT" proxy https://allowed.sandbox.test:8443/ "an allowed name on another port (CONNECT)"
refused "$CT" direct "http://$EGRESS_ALLOWED_IP/" "the allowed endpoint directly, past the proxy"
refused "$CT" direct "http://$EGRESS_FORBIDDEN_IP/" "an RFC 1918 host directly"
refused "$CT" direct "http://$EGRESS_PUBLIC_IP/" "a public host directly"
refused "$CT" direct "http://$EGRESS_METADATA_IP/latest/meta-data/" "the metadata address directly"
refused "$CT" direct "http://$EGRESS_BRIDGE_IP:8081/" "the host's bridge address on another port"
refused "$CT" direct "http://10.213.8.11:8080/" "the other container"
check "the proxy's refusals are logged on the host (TCP_DENIED/403)" \
	test "$(grep -c 'TCP_DENIED/403' "$E/proxy/access.log" 2>/dev/null)" -ge 5
# The page the guest got with its 403, fetched again from the host side of the bridge.
innet curl -sS -m 3 -x "http://$EGRESS_BRIDGE_IP:$EGRESS_PROXY_PORT" http://public.sandbox.test/ >"$TMP/page.html" 2>"$TMP/page.err"
check "the refusal's page names the policy" grep -q "refused by the sandbox egress policy" "$TMP/page.html"
check "and the refused URL" grep -q "http://public.sandbox.test/" "$TMP/page.html"
grep -q "sandbox egress policy" "$TMP/page.html" || log "the page: $(head -c 400 "$TMP/page.html") $(cat "$TMP/page.err")"
# The open container reaches what the confined one may not: the test hosts do answer.
got=$(probe "$OPEN" direct "http://$EGRESS_METADATA_IP/")
check "without the ACL the metadata host answers directly ($got): the refusals above are the ACL's" test "$got" = "ok 200"

# :8080 from the controller's address only.
for c in "$CT" "$OPEN"; do
	inc exec "$c" -- systemd-run -q --unit sar-web -p WorkingDirectory=/tmp python3 -m http.server 8080
done
for _ in $(seq 30); do inc exec "$CT" -- ss -ltn 'sport = :8080' | grep -q LISTEN && break; sleep 0.2; done
check "a server listens on :8080 in the confined container" \
	grep -q LISTEN <(inc exec "$CT" -- ss -ltn 'sport = :8080')
code=$(innet curl -sS -o /dev/null -m 3 -w '%{http_code}' --interface "$EGRESS_CONTROLLER_IP" http://10.213.7.10:8080/ 2>"$TMP/8080.err")
check ":8080 answers the controller's address ($code)" test "$code" = 200
[ "$code" = 200 ] || { log "curl: $(cat "$TMP/8080.err"); route: $(innet ip route get 10.213.7.10 from "$EGRESS_CONTROLLER_IP" 2>&1)"; log "in $CT: $(inc exec "$CT" -- ip -o addr 2>&1 | tr '\n' ' ')"; log "$(inc exec "$CT" -- ip route 2>&1 | tr '\n' ' ')"; }
code=$(innet curl -s -o /dev/null -m 3 -w '%{http_code}' --interface "$EGRESS_BRIDGE_IP" http://10.213.7.10:8080/)
TRIED=$((TRIED + 1))
[ "$code" = 000 ] && REFUSED=$((REFUSED + 1))
check ":8080 is refused from another address ($code)" test "$code" = 000

# --- sandbox-ctl verify ------------------------------------------------------------------------------
VERIFY=(verify --proxy "http://$EGRESS_BRIDGE_IP:$EGRESS_PROXY_PORT" --allowed http://allowed.sandbox.test/
	--forbidden http://forbidden.sandbox.test/ --forbidden "http://$EGRESS_FORBIDDEN_IP/"
	--forbidden "http://$EGRESS_PUBLIC_IP/")
# run_verify C OUT: pin C's key, then sandbox-ctl verify into OUT (OUT.err); sets rc and secs.
run_verify() {
	local t
	"$CTL" --incus "$1" -q --accept-new-guest-key hello >/dev/null 2>>"$TMP/ctl.err"
	t=$(date +%s.%N)
	"$CTL" --incus "$1" -q "${VERIFY[@]}" >"$2" 2>"$2.err"
	rc=$?
	secs=$(elapsed "$t")
}
run_verify "$CT" "$TMP/verify.json"
vt=$secs
check "verify passes on the confined container (exit $rc, $vt s)" test $rc -eq 0
[ $rc -eq 0 ] || { cat "$TMP/verify.json.err"; python3 -m json.tool "$TMP/verify.json" | head -60; }
check "its four checks passed" \
	test "$(json "$TMP/verify.json" '" ".join("%s=%s" % (c["name"], c["passed"]) for c in d["checks"])')" = \
	"kernel_or_namespaces=True host_file_unreachable=True allowed_endpoint_answers=True others_refused=True"
check "the metadata addresses were tried directly and through the proxy" \
	test "$(json "$TMP/verify.json" 'sum(1 for a in d["checks"][3]["attempts"] if "169.254.169.254" in a["url"])')" = 2
vtried=$(json "$TMP/verify.json" 'd["checks"][3]["tried"]')
vrefused=$(json "$TMP/verify.json" 'd["checks"][3]["refused"]')
check "the guest recorded it, root-only (0600)" \
	test "$(inc exec "$CT" -- stat -c '%U %a' /run/sandbox-agent/confinement.json)" = "root 600"
check "the record says confined" \
	inc exec "$CT" -- grep -q '"confined":true' /run/sandbox-agent/confinement.json
token_file=$(json "$TMP/verify.json" 'd["checks"][1]["detail"].split()[0]')
check "the host's token file ($token_file) is gone" test -n "$token_file" -a ! -e "$token_file"

run_verify "$OPEN" "$TMP/verify-open.json"
ot=$secs
check "verify fails on the open container (exit $rc, $ot s)" test $rc -eq 1
check "and names the failed check: others_refused" \
	test "$(json "$TMP/verify-open.json" '[c["name"] for c in d["checks"] if not c["passed"]]')" = "['others_refused']"
check "the open container's record says not confined" \
	inc exec "$OPEN" -- grep -q '"confined":false' /run/sandbox-agent/confinement.json
check "verify's error says what failed" grep -q "not confined" "$TMP/verify-open.json.err"

# --- nothing left the namespaces -----------------------------------------------------------------------
check "the machine's own interfaces are unchanged" \
	test "$(ip -o link | cut -d: -f2 | sort | paste -sd' ')" = "$links_before"
check "the daemon's namespace still has no route out" \
	test -z "$(innet ip route show default; innet ip -6 route show default)"

log "figures: by hand $REFUSED of $TRIED egress attempts refused; verify $vrefused of $vtried refused"
python3 -c "import json, sys
for a in json.load(open(sys.argv[1]))['checks'][3]['attempts']: print('    %-6s %-34s %s' % (a['via'], a['url'], a['detail']))" "$TMP/verify.json"
log "figures: verify took $vt s (confined) and $ot s (open); guest side $(json "$TMP/verify.json" 'd["guest_ms"]') ms"

egress_stop
for c in "$CT" "$OPEN"; do inc delete --force "$c" >/dev/null 2>&1; done
inc network acl delete "sandbox-egress-$CT" >/dev/null 2>&1
inc network delete incusbr0 >/dev/null 2>&1
inc network delete sarbr-open >/dev/null 2>&1
incus_daemon_stop
left=$(incus_leftovers)
check "nothing of the daemon is left" test -z "$left"
[ -z "$left" ] || echo "$left" | sed 's/^/    /'
finish
