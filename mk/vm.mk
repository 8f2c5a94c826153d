# SPDX-License-Identifier: Apache-2.0
#
# make test-vm: boots the static guest binary in a small qemu guest under software emulation
# and drives it from the host across the VM boundary (virtio-serial) and over AF_VSOCK loopback
# inside the guest. See tests/vm/README.md (parts, timings, the kernel cache).
#
#   build-static/tests/vsock_echo    tests/vm/vsock_echo.c, linked static like the agent
#   build-static/vm/                 the initramfs and the last run's console log
#
# Included by the top Makefile after mk/static.mk's rules are known; the static binaries are
# made by the same second make that `make static` runs (it needs the dependency prefix).

VM_SBUILD := build-static

.PHONY: test-vm vm-bins

test-vm:
	@prefix=$$(packaging/static/build-deps.sh) && \
		$(MAKE) --no-print-directory static-bins vm-bins STATIC_PREFIX="$$prefix"
	tests/vm/vm-test.sh

vm-bins: $(VM_SBUILD)/stripped/tests/vsock_echo

$(VM_SBUILD)/tests/vsock_echo: $(VM_SBUILD)/tests/vm/vsock_echo.o
	@echo "  MUSL-LD $@"
	@$(MUSL_CC) $(STATIC_LDFLAGS) -o $@ $^

# bench/vm_bench.sh: push against a raw copy over virtio-serial, handshake latency.
.PHONY: bench bench-vm
bench: bench-vm

bench-vm:
	@prefix=$$(packaging/static/build-deps.sh) && \
		$(MAKE) --no-print-directory static-bins vm-bins STATIC_PREFIX="$$prefix"
	bench/vm_bench.sh
