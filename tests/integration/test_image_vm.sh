#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# `make test-image`: the minimal sandbox-app-runtime image's root filesystem booted with
# systemd in qemu (software emulation, Debian's kernel); the packaged unit starts the agent and
# the host's sandbox-ctl reaches it over virtio-serial (image-build/README.md). About 30 s with
# the image and kernel caches warm.
. "$(dirname "$0")/lib.sh"
need_root
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 is missing (packaging/install-deps.sh)"
command -v debootstrap >/dev/null || skip "debootstrap is missing (packaging/install-deps.sh)"
if timeout 900 make -C "$ROOT" -s test-image >"$TMP/test-image.log" 2>&1; then
	tail -3 "$TMP/test-image.log"
	pass "make test-image"
else
	tail -40 "$TMP/test-image.log"
	fail "make test-image"
fi
finish
