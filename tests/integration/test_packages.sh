#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The Debian packages and `make install` (packaging/README.md, "Packages"):
#  1. `make deb` (the static guest binary where `make static` exists, else the documented
#     developer override GUEST_BIN=build/sandbox-agent), lintian without errors, the packages'
#     fields and contents;
#  2. `make install DESTDIR=... PREFIX=/usr/local` and `make uninstall`;
#  3. `dpkg -i` of both packages into a Debian 12 minbase root without systemd running, as an
#     image build does: the three commands run from their installed places, the unit is enabled
#     and passes `systemd-analyze verify`, sysusers.d made the sandbox and claude users, a
#     changed conffile survives a reinstall, tmpfiles.d makes the cache root and the homes and
#     leaves a given cache root alone;
#  4. that root booted with systemd-nspawn (systemd as PID 1, private network): the enabled unit
#     started at boot; `systemctl restart`, an upgrade through dpkg (postinst restarts the unit)
#     and `systemctl stop` leave an app started by the agent running; the same restart with
#     KillMode=control-group kills it (so the check can fail); RuntimeDirectory= and
#     StateDirectory= are root 0700; purge removes what it should, the guest key included.
#     `sandbox-agent serve` does not exist yet: a drop-in replaces only ExecStart with a
#     stand-in that starts an "app" as the engine does (own session, detached; kept when it is
#     already running) and sends READY=1 from the main process; every other setting of the
#     unit is the packaged one.
# The root is `debootstrap --variant=minbase bookworm` plus systemd and the packages' Depends,
# from Debian's archive on the first run (~40 s), then cached as a tarball under
# ${SANDBOX_CACHE:-~/.cache/sandbox-app-runtime}/debootstrap/, keyed by suite, package list
# and mirror.
source "$(dirname "$0")/lib.sh"

need_root
for tool in dpkg-deb dpkg-gencontrol lintian debootstrap systemd-nspawn nsenter; do
	command -v "$tool" >/dev/null ||
		skip "$tool is missing (packaging/install-deps.sh installs lintian, debootstrap, systemd-container)"
done

SUITE=bookworm
VERSION=$(sed -n 's/^VERSION := //p' "$ROOT/Makefile")
ARCH=$(dpkg --print-architecture)
GUEST_DEB=$ROOT/build/deb/sandbox-agent_${VERSION}_$ARCH.deb
HOST_DEB=$ROOT/build/deb/sandbox-ctl_${VERSION}_$ARCH.deb
CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/debootstrap
PATH_IN=/usr/sbin:/usr/bin:/sbin:/bin

# What the tree's own build answers: every installed copy must answer the same. (While the boot
# command line is a stub in this tree, that is all the link can be asked.)
make -C "$ROOT" -s all >/dev/null || {
	fail "make"
	finish
}
expect_boot="$("$BUILD/sandbox-app-boot" --version 2>&1) $?"
if [ "$expect_boot" != "sandbox-app-boot $VERSION 0" ]; then
	log "the tree's sandbox-app-boot --version answers '$expect_boot', not the version:"
	log "the installed copies are checked against that answer"
fi

# --- 1. make deb, lintian, fields and contents -----------------------------------------------
static=0
if [ -f "$ROOT/mk/static.mk" ]; then
	static=1
	log "make deb (static guest binary)"
	make -C "$ROOT" -s deb >"$TMP/deb.log" 2>&1
else
	log "make deb GUEST_BIN=build/sandbox-agent: this tree has no \`make static\` yet, so the"
	log "guest package carries the dynamic build (the developer override)"
	make -C "$ROOT" -s deb GUEST_BIN=build/sandbox-agent >"$TMP/deb.log" 2>&1
fi
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$GUEST_DEB" ] || [ ! -f "$HOST_DEB" ]; then
	tail -30 "$TMP/deb.log"
	fail "make deb (exit $rc)"
	finish
fi
pass "make deb built $(basename "$GUEST_DEB") and $(basename "$HOST_DEB")"

if lintian --fail-on error --display-info "$GUEST_DEB" "$HOST_DEB" >"$TMP/lintian.log" 2>&1; then
	pass "lintian: no errors ($(grep -c '^[WI]:' "$TMP/lintian.log") warnings and notes)"
else
	sed 's/^/    /' "$TMP/lintian.log"
	fail "lintian reports errors"
fi
grep '^[WI]:' "$TMP/lintian.log" | sed 's/^/    /'

field() { dpkg-deb -f "$1" "$2"; }
check "both packages have version $VERSION" \
	test "$(field "$GUEST_DEB" Version) $(field "$HOST_DEB" Version)" = "$VERSION $VERSION"
check "sandbox-ctl's description says what it does today (no \"only the version query\")" \
	bash -c "! dpkg-deb -f '$HOST_DEB' Description | grep -q 'version query' &&
		dpkg-deb -f '$HOST_DEB' Description | grep -q 'boots the app'"
mkdir -p "$TMP/x"
dpkg-deb -x "$GUEST_DEB" "$TMP/x"
dpkg-deb -e "$GUEST_DEB" "$TMP/x/DEBIAN"
check "sandbox-app-boot is a relative link to sandbox-agent" \
	test "$(readlink "$TMP/x/usr/bin/sandbox-app-boot")" = ../sbin/sandbox-agent
check "sandbox-claude is a relative link to sandbox-agent" \
	test "$(readlink "$TMP/x/usr/bin/sandbox-claude")" = ../sbin/sandbox-agent
check "the udev rule: the agent's virtio-serial port wants the unit" \
	grep -q 'SUBSYSTEM=="virtio-ports", ATTR{name}=="org.sandbox-app-runtime.agent", TAG+="systemd", ENV{SYSTEMD_WANTS}+="sandbox-agent.service"' \
	"$TMP/x/usr/lib/udev/rules.d/60-sandbox-agent.rules"
check "authorized_keys is a conffile" grep -qx /etc/sandbox-agent/authorized_keys "$TMP/x/DEBIAN/conffiles"
check "the authorized_keys.d directory is shipped" test -d "$TMP/x/etc/sandbox-agent/authorized_keys.d"
check "postinst, prerm and postrm are shipped" \
	test -x "$TMP/x/DEBIAN/postinst" -a -x "$TMP/x/DEBIAN/prerm" -a -x "$TMP/x/DEBIAN/postrm"
check "sandbox-ctl depends on libcurl4, which it opens at run time" \
	bash -c "dpkg-deb -f '$HOST_DEB' Depends | grep -q 'libcurl4 (>= 7.85.0)'"
if [ $static -eq 1 ]; then
	check "the guest binary is statically linked" \
		bash -c "file -b '$TMP/x/usr/sbin/sandbox-agent' | grep -q 'statically linked'"
	check "the guest package depends on no shared library" test -z "$(field "$GUEST_DEB" Depends)"
	check "Built-Using names the libraries' source packages" \
		bash -c "dpkg-deb -f '$GUEST_DEB' Built-Using | grep -q 'libyaml (= '"
fi

# --- 2. make install / uninstall ---------------------------------------------------------------
inst=$TMP/inst
if make -C "$ROOT" -s install DESTDIR="$inst" PREFIX=/usr/local >"$TMP/install.log" 2>&1; then
	pass "make install DESTDIR=... PREFIX=/usr/local"
	check "make install: sandbox-app-boot -> ../sbin/sandbox-agent" \
		test "$(readlink "$inst/usr/local/bin/sandbox-app-boot")" = ../sbin/sandbox-agent
	check "make install: /usr/local/bin/sandbox-claude -> ../sbin/sandbox-agent" \
		test "$(readlink "$inst/usr/local/bin/sandbox-claude")" = ../sbin/sandbox-agent
	out=$("$inst/usr/local/bin/sandbox-app-boot" --version 2>&1)
	rc=$?
	check "make install: sandbox-app-boot --version answers as the tree's build does" \
		test "$out $rc" = "$expect_boot"
	check "make install: sandbox-ctl --version" \
		test "$("$inst/usr/local/bin/sandbox-ctl" --version)" = "sandbox-ctl $VERSION"
	check "make install: the unit runs /usr/local/sbin/sandbox-agent" \
		grep -qx 'ExecStart=/usr/local/sbin/sandbox-agent serve' \
		"$inst/usr/local/lib/systemd/system/sandbox-agent.service"
	for f in share/man/man1/sandbox-app-boot.1 share/man/man1/sandbox-ctl.1 \
		share/man/man5/sandbox.yml.5 share/man/man8/sandbox-agent.8 \
		share/man/man8/sandbox-claude.8 lib/tmpfiles.d/sandbox-agent.conf lib/sysusers.d/sandbox-agent.conf \
		lib/udev/rules.d/60-sandbox-agent.rules; do
		check "make install: $f" test -s "$inst/usr/local/$f"
	done
	echo "sandbox-ed25519 local-key" >>"$inst/etc/sandbox-agent/authorized_keys"
	make -C "$ROOT" -s install DESTDIR="$inst" PREFIX=/usr/local >/dev/null 2>&1
	check "make install keeps an existing authorized_keys" \
		grep -q local-key "$inst/etc/sandbox-agent/authorized_keys"
	make -C "$ROOT" -s uninstall DESTDIR="$inst" PREFIX=/usr/local >/dev/null 2>&1
	left=$(find "$inst/usr" -type f -o -type l)
	check "make uninstall removes every file below PREFIX" test -z "$left"
else
	cat "$TMP/install.log"
	fail "make install DESTDIR=... PREFIX=/usr/local"
fi
check "make install refuses a relative PREFIX" \
	bash -c "! make -C '$ROOT' -s install DESTDIR='$TMP/rel' PREFIX=usr >/dev/null 2>&1"

# --- 3. dpkg -i into a Debian minbase root, no systemd running ----------------------------------
# Packages the root needs besides minbase: systemd (booted in part 4) and the packages' Depends.
deps() { field "$1" Depends | tr ',' '\n' | sed -E 's/^ *//; s/[ (|].*$//' | grep -v '^$'; }
include=$( (echo systemd; deps "$GUEST_DEB"; deps "$HOST_DEB") | sort -u | paste -sd, -)
# shellcheck disable=SC2016 # $(...) is apt's own field syntax here
mirror=${SANDBOX_DEBIAN_MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' \
	2>/dev/null | awk -v s="$SUITE" '$2 == s { print $1; exit }')}
mirror=${mirror:-http://deb.debian.org/debian/}
key=$(printf '%s\n' "$SUITE" minbase "$include" "$mirror" | sha256sum | cut -c1-12)
tarball=$CACHE/$SUITE-minbase-$key.tar.gz
if [ ! -f "$tarball" ]; then
	log "debootstrap --variant=minbase --include=$include $SUITE from $mirror (cached after)"
	mkdir -p "$CACHE"
	start=$(date +%s)
	if ! debootstrap --variant=minbase --include="$include" "$SUITE" "$TMP/boot" "$mirror" \
		>"$TMP/debootstrap.log" 2>&1; then
		tail -20 "$TMP/debootstrap.log"
		fail "debootstrap $SUITE"
		finish
	fi
	tar -C "$TMP/boot" --numeric-owner -czf "$tarball.tmp.$$" . && mv "$tarball.tmp.$$" "$tarball"
	rm -rf "${TMP:?}/boot"
	log "debootstrap took $(($(date +%s) - start)) s; cached as $tarball"
fi
R=$TMP/root
mkdir -p "$R"
tar -C "$R" --numeric-owner -xzf "$tarball"
# Not in /tmp: a booted container mounts a tmpfs there.
cp "$GUEST_DEB" "$HOST_DEB" "$R/root/"
in_root() { chroot "$R" env -i PATH=$PATH_IN LANG=C.UTF-8 "$@"; }

if in_root dpkg -i "/root/$(basename "$GUEST_DEB")" "/root/$(basename "$HOST_DEB")" \
	>"$TMP/dpkg.log" 2>&1; then
	pass "dpkg -i of both packages into a clean $SUITE root"
else
	cat "$TMP/dpkg.log"
	fail "dpkg -i of both packages into a clean $SUITE root"
	finish
fi
check "sandbox-agent --version from /usr/sbin" \
	test "$(in_root sandbox-agent --version)" = "sandbox-agent $VERSION"
check "sandbox-ctl --version from /usr/bin" \
	test "$(in_root sandbox-ctl --version)" = "sandbox-ctl $VERSION"
# The API URL is parsed by libcurl, which sandbox-ctl opens only then: the package's Depends
# brought it into the root.
in_root sandbox-ctl github-token --app-id 1 --installation 1 --repository a/b \
	--api-url http://github.example --private-key /none >"$TMP/root-curl.log" 2>&1
check "sandbox-ctl opens libcurl in the installed root (github-token's API URL check)" \
	grep -q 'must start with https://' "$TMP/root-curl.log"
check "sandbox-app-boot resolves to /usr/sbin/sandbox-agent" \
	test "$(in_root readlink -f /usr/bin/sandbox-app-boot)" = /usr/sbin/sandbox-agent
out=$(in_root sandbox-app-boot --version 2>&1)
rc=$?
check "sandbox-app-boot --version from /usr/bin answers as the tree's build does" \
	test "$out $rc" = "$expect_boot"

wants=$R/etc/systemd/system/multi-user.target.wants/sandbox-agent.service
check "the unit is enabled (multi-user.target.wants link)" test -L "$wants"
check "the link points at the packaged unit" \
	test "$(basename "$(readlink "$wants")")" = sandbox-agent.service -a -f "$R/usr/lib/systemd/system/sandbox-agent.service"
if command -v systemd-analyze >/dev/null; then
	if systemd-analyze verify --root="$R" --man=no sandbox-agent.service >"$TMP/verify.log" 2>&1; then
		pass "systemd-analyze verify sandbox-agent.service"
	else
		cat "$TMP/verify.log"
		fail "systemd-analyze verify sandbox-agent.service"
	fi
else
	log "systemd-analyze is not installed here: verify not run"
fi
check "postinst made the sandbox user (sysusers.d), uid 1000" test "$(in_root id -u sandbox)" = 1000
check "postinst made the claude user, in the sandbox group" \
	bash -c "chroot '$R' id -nG claude | tr ' ' '\n' | grep -qx sandbox"
check "postinst made no directory itself (tmpfiles.d and the unit do)" \
	test ! -e "$R/var/cache/sandbox-app-runtime" -a ! -e "$R/run/sandbox-agent" -a ! -e "$R/var/lib/sandbox-agent"

echo "sandbox-ed25519 image-key baked-in" >>"$R/etc/sandbox-agent/authorized_keys"
in_root dpkg -i "/root/$(basename "$GUEST_DEB")" >"$TMP/dpkg2.log" 2>&1 || cat "$TMP/dpkg2.log"
check "a reinstall keeps a changed authorized_keys" grep -q image-key "$R/etc/sandbox-agent/authorized_keys"

if command -v systemd-tmpfiles >/dev/null; then
	systemd-tmpfiles --root="$R" --create sandbox-agent.conf
	check "tmpfiles.d: the cache root, root 0755" \
		test "$(stat -c '%U %a' "$R/var/cache/sandbox-app-runtime" 2>/dev/null)" = "root 755"
	check "tmpfiles.d: /home/sandbox, the sandbox user's, 0755" \
		test "$(stat -c '%u %a' "$R/home/sandbox" 2>/dev/null)" = "1000 755"
	check "tmpfiles.d: /home/claude, the claude user's, 0700" \
		test "$(stat -c '%u %a' "$R/home/claude" 2>/dev/null)" = "$(in_root id -u claude) 700"
	chown 4321:4321 "$R/var/cache/sandbox-app-runtime"
	chmod 0750 "$R/var/cache/sandbox-app-runtime"
	systemd-tmpfiles --root="$R" --create sandbox-agent.conf
	check "tmpfiles.d: the cache root keeps the owner and mode the engine gave it" \
		test "$(stat -c '%u %a' "$R/var/cache/sandbox-app-runtime")" = "4321 750"
	chown 0:0 "$R/var/cache/sandbox-app-runtime"
	chmod 0755 "$R/var/cache/sandbox-app-runtime"
fi

# --- 4. booted with systemd: restart, upgrade and stop leave apps running ------------------------
# The stand-in for `sandbox-agent serve` (see the header): perl is in every Debian root.
mkdir -p "$R/usr/local/sbin" "$R/etc/systemd/system/sandbox-agent.service.d"
cat >"$R/usr/local/sbin/agent-standin" <<'EOF'
#!/bin/sh
pidfile=/run/sandbox-agent/app.pid
if ! { [ -s $pidfile ] && kill -0 "$(cat $pidfile)" 2>/dev/null; }; then
	setsid -f sh -c "echo \$\$ >$pidfile.new && mv $pidfile.new $pidfile && exec sleep 100000" \
		</dev/null >/dev/null 2>&1
fi
exec perl -MSocket -e '
	my $p = $ENV{NOTIFY_SOCKET} or die "no NOTIFY_SOCKET\n";
	$p =~ s/^@/\0/;
	socket(my $s, PF_UNIX, SOCK_DGRAM, 0) or die "socket: $!\n";
	send($s, "READY=1", 0, pack_sockaddr_un($p)) or die "notify: $!\n";
	sleep;'
EOF
chmod 0755 "$R/usr/local/sbin/agent-standin"
printf '[Service]\nExecStart=\nExecStart=/usr/local/sbin/agent-standin\n' \
	>"$R/etc/systemd/system/sandbox-agent.service.d/standin.conf"

systemd-nspawn -q --register=no --keep-unit --private-network -D "$R" -b --console=pipe \
	</dev/null >"$TMP/nspawn.log" 2>&1 &
NSPAWN=$!
INIT=
stop_container() {
	local i
	[ -n "$INIT" ] && kill -RTMIN+3 "$INIT" 2>/dev/null
	for ((i = 0; i < 300; i++)); do
		kill -0 "$NSPAWN" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$NSPAWN" 2>/dev/null
	[ -n "$INIT" ] && kill -KILL "$INIT" 2>/dev/null
	wait "$NSPAWN" 2>/dev/null
}
on_exit stop_container
for ((i = 0; i < 300; i++)); do
	INIT=$(ps -o pid=,comm= --ppid "$NSPAWN" 2>/dev/null | awk '$2 == "systemd" { print $1 }')
	[ -n "$INIT" ] && break
	kill -0 "$NSPAWN" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$INIT" ]; then
	cat "$TMP/nspawn.log"
	fail "systemd-nspawn did not boot the root"
	finish
fi
inside() { timeout 120 nsenter -t "$INIT" -m -u -i -n -p -r -w env -i PATH=$PATH_IN LANG=C.UTF-8 "$@"; }
# Until systemd listens on its private socket, systemctl cannot connect: ask again.
state=
for ((i = 0; i < 300; i++)); do
	state=$(inside systemctl is-system-running --wait 2>/dev/null)
	case $state in running | degraded | maintenance | stopping | offline) break ;; esac
	sleep 0.1
done
log "systemd in the container: ${state:-no answer}"
if [ "$state" != running ]; then
	inside systemctl --failed --no-pager 2>&1 | sed 's/^/    /'
	check "systemd booted the container" test "$state" = running
fi

unit_prop() { inside systemctl show -p "$1" --value sandbox-agent.service; }
# "PID STARTTIME" of the app, or nothing: a pid is the same process only with the same start time.
app_id() {
	# shellcheck disable=SC2016 # expanded by the shell inside the container
	inside sh -c 'p=$(cat /run/sandbox-agent/app.pid 2>/dev/null) && [ -n "$p" ] &&
		s=$(cut -d" " -f22 /proc/$p/stat 2>/dev/null) && ! grep -q "^State:.*Z" /proc/$p/status &&
		echo "$p $s"'
}
alive() { [ -n "$1" ] && [ "$(inside sh -c "cut -d' ' -f22 /proc/${1% *}/stat 2>/dev/null")" = "${1#* }" ]; }

check "the enabled unit was started at boot" test "$(unit_prop ActiveState)" = active
# In a container the daemon serves its unix socket alone: vsock there is the machine's own.
# Every socket it holds must be one the kernel lists as unix, netlink, TCP or UDP (a vsock one
# is in none of those tables).
# shellcheck disable=SC2016 # expanded inside the container
check "in the container the daemon holds no socket but unix, netlink, TCP or UDP (no vsock)" \
	inside sh -c 'pid=$(systemctl show -p MainPID --value sandbox-agent.service); [ "$pid" -gt 1 ] || exit 1
		known=$(cat /proc/net/unix /proc/net/netlink /proc/net/tcp /proc/net/tcp6 /proc/net/udp /proc/net/udp6 2>/dev/null)
		for fd in /proc/$pid/fd/*; do
			l=$(readlink "$fd") || continue
			case $l in socket:*) i=${l#socket:[}; i=${i%]}
				echo "$known" | grep -qw "$i" || { echo "unknown socket $i"; exit 1; } ;;
			esac
		done'
check "/run/sandbox-agent (RuntimeDirectory=) is root 0700 after boot" \
	test "$(inside stat -c '%U %a' /run/sandbox-agent)" = "root 700"
check "/var/lib/sandbox-agent (StateDirectory=) is root 0700 after boot" \
	test "$(inside stat -c '%U %a' /var/lib/sandbox-agent)" = "root 700"
app=
for ((i = 0; i < 100; i++)); do
	app=$(app_id)
	[ -n "$app" ] && break
	sleep 0.1
done
check "the agent started an app" test -n "$app"
check "the app does not inherit NoNewPrivileges (setuid programs work for apps)" \
	test "$(inside sh -c "sed -n 's/^NoNewPrivs:[[:space:]]*//p' /proc/${app% *}/status")" = 0

main1=$(unit_prop MainPID)
inside systemctl restart sandbox-agent.service
main2=$(unit_prop MainPID)
check "systemctl restart: a new main process" test "$main2" != "$main1" -a "$(unit_prop ActiveState)" = active
check "systemctl restart: the app keeps running" alive "$app"

inside dpkg -i "/root/$(basename "$GUEST_DEB")" >"$TMP/dpkg3.log" 2>&1 || cat "$TMP/dpkg3.log"
main3=$(unit_prop MainPID)
check "upgrade through dpkg: postinst restarted the unit" \
	test "$main3" != "$main2" -a "$(unit_prop ActiveState)" = active
check "upgrade through dpkg: the app keeps running" alive "$app"

inside systemctl stop sandbox-agent.service
check "systemctl stop: the unit stopped" test "$(unit_prop ActiveState)" = inactive
check "systemctl stop: the app keeps running" alive "$app"
inside systemctl start sandbox-agent.service
check "systemctl start: the agent finds the running app again" test "$(app_id)" = "$app"

# Negative control: with systemd's default KillMode the same restart kills the app.
printf '[Service]\nKillMode=control-group\n' \
	>"$R/etc/systemd/system/sandbox-agent.service.d/zz-killmode.conf"
inside systemctl daemon-reload
inside systemctl restart sandbox-agent.service
# systemd may still be collecting the old cgroup under load: give it a few seconds.
for ((i = 0; i < 100; i++)); do
	alive "$app" || break
	sleep 0.1
done
if alive "$app"; then
	fail "control: the app survived a restart with KillMode=control-group"
else
	pass "control: KillMode=control-group kills the app on restart"
fi
rm -f "$R/etc/systemd/system/sandbox-agent.service.d/zz-killmode.conf"
inside systemctl daemon-reload

rm -rf "$R/etc/systemd/system/sandbox-agent.service.d" "$R/usr/local/sbin/agent-standin"
# A guest key, as the real daemon makes at its first start.
inside sh -c 'echo key >/var/lib/sandbox-agent/guest_key && echo pub >/var/lib/sandbox-agent/guest_key.pub'
inside dpkg --purge sandbox-agent sandbox-ctl >"$TMP/purge.log" 2>&1 || cat "$TMP/purge.log"
check "purge: the daemon was stopped" test "$(unit_prop ActiveState)" != active
check "purge: the enable link is gone" test ! -e "$wants" -a ! -L "$wants"
check "purge: /etc/sandbox-agent is gone" test ! -e "$R/etc/sandbox-agent"
check "purge: the cache root is gone" test ! -e "$R/var/cache/sandbox-app-runtime"
check "purge: the guest key is gone" test ! -e "$R/var/lib/sandbox-agent"
check "purge: the binaries are gone" \
	test ! -e "$R/usr/sbin/sandbox-agent" -a ! -L "$R/usr/bin/sandbox-app-boot" -a ! -e "$R/usr/bin/sandbox-ctl"

finish
