# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# A private Incus daemon for one test: sourced (after tests/integration/lib.sh), never run.
#
#   incus_daemon_start DIR   start incusd with INCUS_DIR=DIR/var in a network and mount
#                            namespace of its own, wait for it, initialise it from
#                            tests/incus/preseed.yaml (no network, one `dir` pool, a default
#                            profile holding only a root disk); INCUS_OWN_SYSFS=1 also gives
#                            its mount namespace a sysfs of its network namespace (for a
#                            managed bridge made in there: tests/incus/egress.sh)
#   incus_daemon_stop        delete every instance and image, `incus admin shutdown`, wait for
#                            the daemon; anything of ours still running then is ended by pid
#   incus_leftovers          prints what is left of the daemon (processes in its namespaces,
#                            mounts below DIR, LXC cgroups of its instances); empty when clean
#   inc ARGS...              the incus client against this daemon
#
# Why the namespaces: the daemon's networking (a bridge, its addresses, dnsmasq, nftables
# rules) must never touch the machine's own network, so incusd runs in a network namespace of
# its own, where only loopback exists; its mounts (storage, shared mounts, device mounts) stay
# in a mount namespace of its own (slave: the machine's mounts reach it, its never leave it),
# which ends with the daemon. Its whole state (INCUS_DIR), the client's configuration
# (INCUS_CONF) and the log live below DIR, so nothing collides with another daemon or test.
# The daemon is `incusd` itself, started here (there may be no systemd to start incus.service).

INCUS_LIBEXEC=/usr/libexec/incus
INCUS_HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INCUS_PID=""
INCUS_NETNS=""
INCUS_MNTNS=""
INCUS_BASE=""
INCUS_PIVOTS=""

inc() { incus "$@"; }

# alive PID: the process exists and is not a zombie waiting for us to reap it.
alive() { [ -r "/proc/$1/stat" ] && [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" != Z ]; }

incus_daemon_start() {
	INCUS_BASE=$1
	export INCUS_DIR=$INCUS_BASE/var INCUS_CONF=$INCUS_BASE/client
	export PATH=$INCUS_LIBEXEC:$PATH
	mkdir -p "$INCUS_DIR" "$INCUS_CONF"
	# LXC parks its monitor in an `lxc.pivot` cgroup of each hierarchy when an instance stops
	# and leaves it there; the ones this daemon makes are removed when it is gone.
	local h
	INCUS_PIVOTS=""
	for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
		[ -d "${h}lxc.pivot" ] || INCUS_PIVOTS="$INCUS_PIVOTS ${h}lxc.pivot"
	done
	chmod 711 "$INCUS_BASE" "$INCUS_DIR"
	# unshare execs sh, which execs incusd: $! is the daemon's pid.
	# shellcheck disable=SC2016 # expanded by the inner shell
	# With INCUS_OWN_SYSFS=1 (a test that gives the daemon a managed network) the daemon's mount
	# namespace gets a sysfs of its own network namespace: the machine's /sys shows the
	# machine's interfaces, and Incus looks for its bridge in /sys/class/net. The cgroup
	# hierarchies are moved over onto the new /sys unchanged.
	mkdir -p "$INCUS_BASE/cgroup-move"
	# shellcheck disable=SC2016 # expanded by the inner shell
	INCUS_OWN_SYSFS=${INCUS_OWN_SYSFS:-0} CGMOVE=$INCUS_BASE/cgroup-move \
		unshare --net --mount --propagation slave /bin/sh -c \
		'ip link set lo up && if [ "$INCUS_OWN_SYSFS" = 1 ]; then
			mount --rbind /sys/fs/cgroup "$CGMOVE" && mount -t sysfs sysfs /sys &&
			mount --move "$CGMOVE" /sys/fs/cgroup || exit 1; fi && exec "$@"' \
		sh "$INCUS_LIBEXEC/incusd" --group incus-admin \
		--logfile="$INCUS_BASE/incusd.log" >"$INCUS_BASE/incusd.out" 2>&1 &
	INCUS_PID=$!
	if ! incus admin waitready --timeout=120; then
		echo "incusd did not get ready; its log:" >&2
		tail -30 "$INCUS_BASE/incusd.log" "$INCUS_BASE/incusd.out" >&2
		return 1
	fi
	INCUS_NETNS=$(readlink "/proc/$INCUS_PID/ns/net")
	INCUS_MNTNS=$(readlink "/proc/$INCUS_PID/ns/mnt")
	if [ "$INCUS_NETNS" = "$(readlink /proc/self/ns/net)" ]; then
		echo "incusd runs in the machine's network namespace: refusing to go on" >&2
		return 1
	fi
	incus admin init --preseed <"$INCUS_HERE/preseed.yaml"
}

# Pids of processes in the daemon's network or mount namespace, or naming its directory.
incus_procs() {
	[ -n "$INCUS_BASE" ] || return 0
	python3 - "$INCUS_NETNS" "$INCUS_MNTNS" "$INCUS_BASE/" "$$" <<'PY'
import os, sys
net, mnt, base, me = sys.argv[1:5]
skip = {me, str(os.getpid())}
for p in os.listdir("/proc"):
    if not p.isdigit() or p in skip:
        continue
    try:
        hit = (net and os.readlink("/proc/%s/ns/net" % p) == net) or \
            (mnt and os.readlink("/proc/%s/ns/mnt" % p) == mnt)
        if not hit:
            with open("/proc/%s/cmdline" % p, "rb") as f:
                hit = base.encode() in f.read()
    except OSError:
        continue
    if hit:
        print(p)
PY
}

incus_leftovers() {
	local p
	for p in $(incus_procs); do
		echo "process $p: $(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null)"
	done
	grep -F " $INCUS_BASE/" /proc/self/mounts | sed 's/^/mount: /'
	for p in ${INCUS_INSTANCES:-}; do
		find /sys/fs/cgroup -maxdepth 3 -type d -name "lxc.*.$p" 2>/dev/null | sed 's/^/cgroup: /'
	done
	for p in $INCUS_PIVOTS; do
		[ -d "$p" ] && [ -n "$(cat "$p/cgroup.procs" 2>/dev/null)" ] && echo "cgroup: $p holds processes"
	done
}

incus_daemon_stop() {
	local c i p
	[ -n "$INCUS_PID" ] || return 0
	if alive "$INCUS_PID"; then
		for c in $(incus list --format csv --columns n 2>/dev/null); do
			incus delete --force "$c" >/dev/null 2>&1
		done
		for c in $(incus image list --format csv --columns f 2>/dev/null); do
			incus image delete "$c" >/dev/null 2>&1
		done
		timeout 90 incus admin shutdown >/dev/null 2>&1
		for ((i = 0; i < 300; i++)); do
			alive "$INCUS_PID" || break
			sleep 0.1
		done
	fi
	# Whatever of ours still runs (the daemon, an LXC monitor, a proxy): ended by pid.
	p=$(incus_procs)
	if [ -n "$p" ]; then
		# shellcheck disable=SC2086 # a list of pids
		kill -TERM $p 2>/dev/null
		sleep 0.5
		p=$(incus_procs)
		# shellcheck disable=SC2086
		[ -z "$p" ] || kill -KILL $p 2>/dev/null
	fi
	wait "$INCUS_PID" 2>/dev/null
	INCUS_PID=""
	for p in $INCUS_PIVOTS; do [ -d "$p" ] && rmdir "$p" 2>/dev/null; done
}
