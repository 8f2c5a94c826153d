#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make test-vm` as one integration test: the static agent booted in a qemu guest under
# software emulation (tests/vm/README.md). Skipped only when qemu is missing. The first run on
# a machine also builds the static dependency set and downloads the kernel package.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1

command -v qemu-system-x86_64 >/dev/null ||
	skip "qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
log=$TMP/make-test-vm.log
if make --no-print-directory test-vm >"$log" 2>&1; then
	grep -E '^(test-vm:|VMTEST|    |serial_host)' "$log"
	exit 0
fi
tail -n 120 "$log"
die "make test-vm"
