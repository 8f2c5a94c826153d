# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The egress test's network, all inside the private incusd's network namespace
# (tests/incus/daemon.sh): sourced after it, never run. Nothing here has a route out of that
# namespace, so no packet can leave it.
#
#   egress_net_start DIR   in the daemon's namespace: its loopback holding the test hosts
#                          (no dummy module needed) (EGRESS_ALLOWED_IP 198.51.100.10 a public-looking allowed
#                          endpoint, EGRESS_FORBIDDEN_IP 192.168.213.10 an RFC 1918 host,
#                          EGRESS_PUBLIC_IP 203.0.113.10 a public host outside the allowlist,
#                          169.254.169.254 the metadata address), each served on :80 by
#                          python3 http.server; the managed bridge `incusbr0` (10.213.7.1/24, no
#                          DHCP, no DNS, no NAT: no dnsmasq) the example profile's NIC names, with
#                          (egress_controller_addr adds EGRESS_CONTROLLER_IP 10.213.7.3); a second
#                          bridge `sarbr-open` (10.213.8.1/24) for an instance without the ACL;
#                          DIR/hosts for the proxy's names
#   egress_proxy_start DIR run squid with DIR/squid.conf (from `sandbox-ctl egress --out DIR`)
#                          in the namespace, as the proxy user; wait until it listens
#   innet CMD...           CMD in the daemon's network namespace

EGRESS_BRIDGE_IP=10.213.7.1
EGRESS_OPEN_BRIDGE_IP=10.213.8.1
EGRESS_CONTROLLER_IP=10.213.7.3
EGRESS_ALLOWED_IP=198.51.100.10
EGRESS_FORBIDDEN_IP=192.168.213.10
EGRESS_PUBLIC_IP=203.0.113.10
EGRESS_METADATA_IP=169.254.169.254
EGRESS_PROXY_PORT=3128
EGRESS_PIDS=""

innet() { nsenter -t "$INCUS_PID" -n "$@"; }

egress_net_start() {
	local dir=$1 ip
	mkdir -p "$dir"
	for ip in $EGRESS_ALLOWED_IP $EGRESS_FORBIDDEN_IP $EGRESS_PUBLIC_IP $EGRESS_METADATA_IP; do
		innet ip addr add "$ip/32" dev lo || return 1
	done
	for ip in $EGRESS_ALLOWED_IP $EGRESS_FORBIDDEN_IP $EGRESS_PUBLIC_IP $EGRESS_METADATA_IP; do
		mkdir -p "$dir/www-$ip"
		echo "test host $ip" >"$dir/www-$ip/index.html"
		innet python3 -m http.server --bind "$ip" --directory "$dir/www-$ip" 80 \
			>"$dir/http-$ip.log" 2>&1 &
		EGRESS_PIDS="$EGRESS_PIDS $!"
	done
	inc network create incusbr0 ipv4.address=$EGRESS_BRIDGE_IP/24 ipv4.nat=false \
		ipv4.dhcp=false ipv6.address=none dns.mode=none >/dev/null || return 1
	inc network create sarbr-open ipv4.address=$EGRESS_OPEN_BRIDGE_IP/24 ipv4.nat=false \
		ipv4.dhcp=false ipv6.address=none dns.mode=none >/dev/null || return 1
	cat >"$dir/hosts" <<HOSTS
$EGRESS_ALLOWED_IP allowed.sandbox.test
$EGRESS_FORBIDDEN_IP forbidden.sandbox.test
$EGRESS_PUBLIC_IP public.sandbox.test
HOSTS
}

# The controller's address on incusbr0: added once the network's configuration is final (Incus
# flushes the bridge's addresses when an ACL is attached to the network).
egress_controller_addr() {
	innet ip addr replace "$EGRESS_CONTROLLER_IP/32" dev incusbr0
}

egress_proxy_start() {
	local dir=$1 i
	chown -R proxy "$dir"
	innet squid -N -f "$dir/squid.conf" >"$dir/squid.out" 2>&1 &
	EGRESS_PIDS="$EGRESS_PIDS $!"
	for ((i = 0; i < 100; i++)); do
		innet ss -ltn "sport = :$EGRESS_PROXY_PORT" | grep -q LISTEN && return 0
		sleep 0.1
	done
	cat "$dir/squid.out" "$dir/cache.log" 2>/dev/null | tail -20
	return 1
}

egress_stop() {
	local p
	for p in $EGRESS_PIDS; do kill "$p" 2>/dev/null; done
	for p in $EGRESS_PIDS; do wait "$p" 2>/dev/null; done
	EGRESS_PIDS=""
}
