# SPDX-License-Identifier: Apache-2.0
# The boot engine's overhead, detection delay and supervisor memory: `make bench-boot`.
.PHONY: bench bench-boot
bench: bench-boot

bench-boot: all
	bench/boot_bench.sh

# Re-sync to a new ref against a fresh boot, over the channel: `make bench-resync`.
.PHONY: bench-resync
bench: bench-resync
bench-resync: all
	bench/resync_bench.sh
