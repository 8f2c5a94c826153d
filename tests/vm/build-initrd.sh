#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The test VM's initramfs: busybox-static with every applet linked, tests/vm/init as /init,
# the kernel's modules from build-kernel.sh, the static binaries and the tiny test app, and the
# session test's session_drive.py and tests/claude/model_api.py.
#
#   build-initrd.sh KERNEL_DIR STATIC_DIR OUT [OVERLAY_DIR]
#
# KERNEL_DIR is what build-kernel.sh printed; STATIC_DIR holds sandbox-agent, sandbox-ctl and
# tests/vsock_echo (build-static/stripped). OVERLAY_DIR, when given, is copied over the root
# last (the run's keys). OUT is written as a gzip'd newc cpio.
set -euo pipefail

[ $# -eq 3 ] || [ $# -eq 4 ] || {
	echo "usage: $0 KERNEL_DIR STATIC_DIR OUT [OVERLAY_DIR]" >&2
	exit 2
}
kernel=$1 bins=$2 out=$3 overlay=${4:-}
here=$(cd "$(dirname "$0")" && pwd)
busybox=${BUSYBOX:-/bin/busybox}

file -b "$busybox" | grep -q 'statically linked' ||
	{ echo "build-initrd: $busybox is not static (apt-get install busybox-static)" >&2; exit 1; }

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,root,modules,vmtest}
cp "$busybox" "$root/bin/busybox"
for applet in $("$busybox" --list-full); do
	[ -e "$root/$applet" ] || ln -s /bin/busybox "$root/$applet"
done
install -m 0755 "$here/init" "$root/init"
cp "$kernel"/modules/*.ko "$kernel/modules/order" "$root/modules/"
for b in sandbox-agent sandbox-ctl tests/vsock_echo; do
	install -m 0755 "$bins/$b" "$root/bin/$(basename "$b")"
done
ln -s sandbox-agent "$root/bin/sandbox-app-boot"
cp -a "$here/app" "$root/vmtest/app"
# The session test's controller and the stand-in model API (run in the guest's session root).
install -m 0755 "$here/session_drive.py" "$here/../claude/model_api.py" "$root/vmtest/"
printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' \
	>"$root/etc/passwd"
printf 'root:x:0:\nnogroup:x:65534:\n' >"$root/etc/group"
printf '127.0.0.1 localhost\n::1 localhost\n' >"$root/etc/hosts"
[ -z "$overlay" ] || cp -a "$overlay/." "$root/"
(cd "$root" && find . -print0 | sort -z | cpio --null -o -H newc -R 0:0 --quiet) |
	gzip -1 >"$out.tmp"
mv "$out.tmp" "$out"
