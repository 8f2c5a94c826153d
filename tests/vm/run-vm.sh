#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Boots the test VM under software emulation (never KVM: it hangs on the test machines) and
# returns when the guest powers off or the time is up. The serial console goes to stdout.
#
#   run-vm.sh KERNEL_DIR INITRD SOCKET_DIR [TIMEOUT_SECONDS [KERNEL_PARAMS...]]
#
# Virtio-serial ports, each backed by a qemu chardev socket in SOCKET_DIR:
#   SOCKET_DIR/raw.sock     port "vmtest.raw"     the test's control port (host_driver.py)
#   SOCKET_DIR/agent.sock   port "org.sandbox-app-runtime.agent"   sandbox-agent serve --serial
# qemu waits for a client on raw.sock before it starts the guest (wait=on), so the host is
# connected whenever the guest writes there (a write to a port whose host side is not
# connected is lost; a read returns end of file). agent.sock takes connections whenever they
# come (wait=off), one at a time, as sandbox-ctl makes them.
#
# Read-only virtio-9p shares, each given by an environment variable (unset: no share):
#   VM_SHARE_USR   mount tag "hostusr"   the host's /usr (glibc, python3, git: merged-usr Debian)
#   VM_SHARE_CLI   mount tag "hostcli"   the cached Claude Code CLI (tests/claude/install-cli.sh)
# The guest builds a small root from them for the session test (tests/vm/init, session_vsock).
#
# qemu exits 0 even when a guest test fails; the caller decides from the console's markers.
# The exit status is timeout's: 124 when the guest did not finish in time.
set -euo pipefail

[ $# -ge 3 ] || {
	echo "usage: $0 KERNEL_DIR INITRD SOCKET_DIR [TIMEOUT [PARAMS...]]" >&2
	exit 2
}
kernel=$1 initrd=$2 sockets=$3 limit=${4:-300}
shift $(($# < 4 ? $# : 4))

shares=()
share() { # share TAG DIR
	case $2 in
	*,*) echo "run-vm.sh: qemu cannot share a path with a comma: $2" >&2 && exit 2 ;;
	esac
	shares+=(-fsdev "local,id=$1,path=$2,security_model=none,readonly=on"
		-device "virtio-9p-pci,fsdev=$1,mount_tag=$1")
}
[ -z "${VM_SHARE_USR:-}" ] || share hostusr "$VM_SHARE_USR"
[ -z "${VM_SHARE_CLI:-}" ] || share hostcli "$VM_SHARE_CLI"

exec timeout -k 5 "$limit" qemu-system-x86_64 \
	-accel tcg -m "${VM_MEMORY:-256}" -smp 1 ${VM_CPU:+-cpu "$VM_CPU"} \
	-nodefaults -no-user-config -display none -no-reboot \
	-serial stdio -monitor none \
	-kernel "$kernel/vmlinux" -initrd "$initrd" \
	-append "console=ttyS0 quiet panic=-1 $*" \
	-device virtio-rng-pci \
	-device virtio-serial-pci,id=vser0 \
	-chardev "socket,id=raw,path=$sockets/raw.sock,server=on,wait=on" \
	-device virtserialport,bus=vser0.0,chardev=raw,name=vmtest.raw \
	-chardev "socket,id=agent,path=$sockets/agent.sock,server=on,wait=off" \
	-device virtserialport,bus=vser0.0,chardev=agent,name=org.sandbox-app-runtime.agent \
	"${shares[@]}"
