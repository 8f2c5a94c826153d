#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make test-vm` as one integration test: the static agent booted in a qemu guest under
# software emulation (tests/vm/README.md). Skipped only when qemu is missing. The first run on
# a machine also builds the static dependency set and downloads the kernel package.
set -u
cd "$(dirname "$0")/../.." || exit 1

if ! command -v qemu-system-x86_64 >/dev/null; then
	echo "SKIP: qemu-system-x86_64 is missing (apt-get install qemu-system-x86)"
	exit 77
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if make --no-print-directory test-vm >"$log" 2>&1; then
	grep -E '^(test-vm:|VMTEST|    |serial_host)' "$log"
	exit 0
fi
tail -n 120 "$log"
echo "FAIL: make test-vm"
exit 1
