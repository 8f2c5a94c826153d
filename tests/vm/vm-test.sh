#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The host side of `make test-vm` (which builds the static binaries first): the kernel (cached,
# build-kernel.sh), the initramfs (build-initrd.sh), one VM run (run-vm.sh) with the host end
# of the control port (host_driver.py), then the verdict from the console's markers.
# Prints how long each part took. Exit 0 when every guest test passed, 1 otherwise.
#
#   vm-test.sh [KERNEL_PARAM=VALUE...]     more parameters for the guest's /init (see init)
#
# Environment: VM_TIMEOUT (seconds for the VM run, default 600), VM_KEEP=1 keeps the work
# directory (sockets, driver output) and says where, VM_TESTS (the guest's test list, see init),
# VM_STATIC_DIR (where the static binaries are, build-static/stripped).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

VM_TIMEOUT=${VM_TIMEOUT:-600}
STATIC=${VM_STATIC_DIR:-build-static/stripped}
OUT=build-static/vm
EXPECTED=${VM_TESTS:-version,vsock,serial,raw,boot,ctl_serial,ctl_vsock,session_vsock,init}
VERSION=$(sed -n 's/^VERSION := //p' Makefile)

now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }
die() {
	echo "test-vm: $*" >&2
	exit 1
}

command -v qemu-system-x86_64 >/dev/null ||
	die "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
for b in sandbox-agent sandbox-ctl tests/vsock_echo; do
	[ -x "$STATIC/$b" ] || die "$STATIC/$b is missing: run make test-vm (it builds make static first)"
done
mkdir -p "$OUT"
work=$(mktemp -d /tmp/sandbox-vm.XXXXXX)
qemu_pid=
driver_pid=
cleanup() {
	[ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null && wait "$qemu_pid" 2>/dev/null
	[ -n "$driver_pid" ] && kill "$driver_pid" 2>/dev/null && wait "$driver_pid" 2>/dev/null
	if [ "${VM_KEEP:-0}" = 1 ]; then
		echo "test-vm: kept $work"
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT

t0=$(now)
t=$(now)
kernel=$(tests/vm/build-kernel.sh) || die "could not get the kernel"
echo "test-vm: kernel $(cat "$kernel/package") ($(since "$t"))"

# This run's keys: the host key the guest lists in authorized_keys (also the in-guest
# sandbox-ctl's key, for the vsock loopback scenario) and a stranger's key it does not list.
overlay=$work/overlay
mkdir -p "$overlay/etc/sandbox-agent" "$overlay/root/.config/sandbox-ctl"
for k in host_key stranger_key; do
	"$STATIC/sandbox-ctl" keygen --out "$work/$k" --comment "vmtest-$k" >/dev/null ||
		die "sandbox-ctl keygen failed"
done
install -m 0600 "$work/host_key.pub" "$overlay/etc/sandbox-agent/authorized_keys"
install -m 0600 "$work/host_key" "$overlay/root/.config/sandbox-ctl/key"
install -m 0644 "$work/host_key.pub" "$overlay/root/.config/sandbox-ctl/key.pub"
install -m 0600 "$work/stranger_key" "$overlay/root/stranger_key"
install -m 0644 "$work/stranger_key.pub" "$overlay/root/stranger_key.pub"

t=$(now)
tests/vm/build-initrd.sh "$kernel" "$STATIC" "$OUT/initrd.cpio.gz" "$overlay" ||
	die "could not build the initramfs"
echo "test-vm: initramfs $(stat -c %s "$OUT/initrd.cpio.gz") bytes ($(since "$t"))"

# The session test runs the real Claude Code CLI (cached by install-cli.sh) in the guest, with
# the host's /usr (glibc, python3, git) beside it: both as read-only 9p shares (run-vm.sh).
session=()
case ",$EXPECTED," in
*,session_vsock,*)
	t=$(now)
	cli=$(tests/claude/install-cli.sh 2>"$work/install-cli.log") || {
		cat "$work/install-cli.log" >&2
		die "the Claude Code CLI could not be installed (tests/claude/install-cli.sh)"
	}
	# node_modules (the cache directory above it is root's only: the CLI runs as claude).
	cli_dir=$(cd "$(dirname "$cli")/.." && pwd)
	cli_rel=$(readlink -f "$cli")
	export VM_SHARE_USR=/usr VM_SHARE_CLI=$cli_dir
	session=("vmtest_cli=${cli_rel#"$cli_dir"/}")
	# The CLI (a Bun binary) wants AVX2 (qemu's TCG has it from 7.2 on: the "max" model) and
	# about 300 MiB besides its 240 MB binary in the page cache.
	export VM_CPU=${VM_CPU:-max} VM_MEMORY=${VM_MEMORY:-1024}
	echo "test-vm: the CLI ${cli_rel#"$cli_dir"/} shared from $cli_dir ($(since "$t"))"
	;;
esac

t=$(now)
console=$OUT/console.log
tests/vm/run-vm.sh "$kernel" "$OUT/initrd.cpio.gz" "$work" "$VM_TIMEOUT" \
	"vmtest_version=$VERSION" "vmtest_tests=$EXPECTED" "${session[@]}" "$@" </dev/null \
	>"$console" 2>&1 &
qemu_pid=$!
tests/vm/host_driver.py "$work" "$VM_TIMEOUT" "$STATIC/sandbox-ctl" >"$work/driver.out" 2>&1 &
driver_pid=$!
wait "$qemu_pid"
rc=$?
qemu_pid=
# The driver ends with the guest's BYE, or at end of file once qemu is gone.
wait "$driver_pid"
driver_rc=$?
driver_pid=
echo "test-vm: VM run ($(since "$t"), qemu exit $rc)"

grep -E '^(VMTEST|    )' "$console" | tr -d '\r'
cat "$work/driver.out"

fail=0
[ $rc -eq 124 ] && {
	echo "test-vm: the VM did not finish within $VM_TIMEOUT s"
	fail=1
}
for name in modules $(tr ',' ' ' <<<"$EXPECTED"); do
	grep -q "^VMTEST PASS $name" "$console" || {
		echo "test-vm: guest test '$name' did not pass"
		fail=1
	}
done
grep -q '^VMTEST DONE passed=[0-9]* failed=0' "$console" || fail=1
[ $driver_rc -eq 0 ] || {
	echo "test-vm: the host side failed (host_driver.py exit $driver_rc)"
	fail=1
}
if [ $fail -ne 0 ]; then
	echo "--- console ($console) ---"
	tail -n 80 "$console"
	echo "test-vm: FAIL ($(since "$t0"))"
	exit 1
fi
echo "test-vm: PASS ($(since "$t0") in all)"
