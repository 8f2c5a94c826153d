# SPDX-License-Identifier: Apache-2.0
# The boot engine's overhead, detection delay and supervisor memory: `make bench-boot`.
.PHONY: bench bench-boot
bench: bench-boot

bench-boot: all
	bench/boot_bench.sh
