# SPDX-License-Identifier: Apache-2.0
# What a boot's limits cost (cgroups set, counters read, the disk budget's walk):
# `make bench-limits` (needs root). Speed goals live here, never in tests.
.PHONY: bench bench-limits
bench: bench-limits

bench-limits: $(BUILD)/bench/limits_bench
	$(BUILD)/bench/limits_bench $(BENCH_LIMITS_ARGS)

$(BUILD)/bench/limits_bench: bench/limits_bench.c $(LIBGUEST) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LAYER_INC) $(ALL_LDFLAGS) -o $@ $< $(LIBGUEST) $(LIBCOMMON) \
		$(DEP_LIBS)

# The kernel's part of joining the limits' v1 cgroups, apart from ours: a bare program.
.PHONY: bench-cgroup-join
bench: bench-cgroup-join
bench-cgroup-join: $(BUILD)/bench/cgroup_join_bench
	$(BUILD)/bench/cgroup_join_bench $(BENCH_CGROUP_JOIN_ARGS)
