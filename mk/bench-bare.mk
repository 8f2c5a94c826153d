# SPDX-License-Identifier: Apache-2.0
# The bare bench programs (none of the project's code: the kernel's part of a path, measured
# alone), each built from its one source.
BARE_BENCH := boot_floor_bench cgroup_join_bench
$(BARE_BENCH:%=$(BUILD)/bench/%): $(BUILD)/bench/%: bench/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $<
