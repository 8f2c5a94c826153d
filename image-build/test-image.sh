#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# make test-image: the built image's root filesystem booted with systemd as PID 1 in qemu
# (software emulation, never KVM; Debian's kernel from tests/vm/build-kernel.sh). The minimal
# profile (cached) with this run's host key in /etc/sandbox-agent/authorized_keys is packed
# whole into an uncompressed initramfs (no disk, no block or filesystem modules: the kernel
# unpacks it into its rootfs); a small /vm-init loads the virtio modules with a static busybox
# and execs systemd. Passes when systemd reports the packaged unit started and the host's
# sandbox-ctl gets the agent's hello over the virtio-serial port
# org.sandbox-app-runtime.agent, which the unit's `sandbox-agent serve` serves by default.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1

TIMEOUT=${VM_TIMEOUT:-400}
VERSION=$(sed -n 's/^VERSION := //p' Makefile)
now() { date +%s; }
die() {
	echo "test-image: $*" >&2
	exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (image-build/build.sh)"
command -v qemu-system-x86_64 >/dev/null || die "qemu-system-x86_64 is missing"
busybox=${BUSYBOX:-/bin/busybox}
file -b "$busybox" | grep -q 'statically linked' || die "$busybox is not static (busybox-static)"

work=$(mktemp -d /var/tmp/sandbox-test-image.XXXXXX)
qemu_pid=
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT

t0=$(now)
image-build/build.sh --profile minimal --out "$work/out" >/dev/null || die "build.sh failed"
echo "test-image: minimal image built ($(($(now) - t0)) s)"
kernel=$(tests/vm/build-kernel.sh) || die "could not get the kernel"
R=$work/out/rootfs

build/sandbox-ctl keygen --out "$work/host_key" --comment test-image >/dev/null || die "keygen"
install -m 0600 "$work/host_key.pub" "$R/etc/sandbox-agent/authorized_keys"
mkdir -p "$R/lib/vm-modules"
cp "$kernel"/modules/*.ko "$kernel/modules/order" "$R/lib/vm-modules/"
mkdir -p "$R/usr/lib/vm-init" && cp "$busybox" "$R/usr/lib/vm-init/busybox"
cat >"$R/vm-init" <<'INIT'
#!/usr/lib/vm-init/busybox sh
for m in $(/usr/lib/vm-init/busybox cat /lib/vm-modules/order); do
	/usr/lib/vm-init/busybox insmod "/lib/vm-modules/$m.ko" || echo "vm-init: insmod $m failed"
done
exec /lib/systemd/systemd
INIT
chmod 755 "$R/vm-init"
rm -rf "$R"/usr/share/doc "$R"/usr/share/man "$R"/usr/share/locale "$R"/var/cache/apt/archives/*.deb
(cd "$R" && find . -xdev | cpio -o -H newc --quiet) >"$work/initrd.cpio" || die "cpio"
echo "test-image: initramfs $(($(stat -c %s "$work/initrd.cpio") >> 20)) MiB"

t=$(now)
console=$work/console.log
timeout -k 5 "$TIMEOUT" qemu-system-x86_64 \
	-accel tcg -m "${VM_MEMORY:-1024}" -smp 1 ${VM_CPU:+-cpu "$VM_CPU"} \
	-nodefaults -no-user-config -display none -no-reboot -serial "file:$console" -monitor none \
	-kernel "$kernel/vmlinux" -initrd "$work/initrd.cpio" \
	-append "console=ttyS0 rdinit=/vm-init panic=-1 systemd.show_status=1 loglevel=3 systemd.journald.forward_to_console=1" \
	-device virtio-rng-pci -device virtio-serial-pci,id=vser0 \
	-chardev "socket,id=agent,path=$work/agent.sock,server=on,wait=off" \
	-device virtserialport,bus=vser0.0,chardev=agent,name=org.sandbox-app-runtime.agent \
	</dev/null >"$work/qemu.log" 2>&1 &
qemu_pid=$!

ok=0
while [ $(($(now) - t)) -lt "$TIMEOUT" ] && kill -0 "$qemu_pid" 2>/dev/null; do
	if grep -q 'Started.*sandbox-app-runtime guest agent' "$console" 2>/dev/null &&
		HOME=$work build/sandbox-ctl --connect "serial:$work/agent.sock" --key "$work/host_key" \
			--known-guests "$work/known_guests" --instance test-image --accept-new-guest-key \
			--timeout 20 hello >"$work/hello.out" 2>"$work/hello.err"; then
		ok=1
		break
	fi
	sleep 2
done
booted=$(($(now) - t))
fail=0
if [ "$ok" = 1 ] && grep -q "\"$VERSION\"" "$work/hello.out"; then
	echo "test-image: systemd started sandbox-agent.service; sandbox-ctl hello over virtio-serial answered ($booted s after qemu started):"
	sed 's/^/    /' "$work/hello.out"
else
	echo "test-image: FAIL: no hello from the agent within $TIMEOUT s"
	tr -d '\r' <"$console" | tail -40
	cat "$work/hello.err" "$work/qemu.log" 2>/dev/null
	fail=1
fi
grep -q 'Failed to start' "$console" && {
	echo "test-image: units that failed:"
	tr -d '\r' <"$console" | grep 'Failed to start' | sed 's/^/    /'
}
echo "test-image: $([ $fail = 0 ] && echo PASS || echo FAIL) ($(($(now) - t0)) s in all)"
exit $fail
