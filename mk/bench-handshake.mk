# SPDX-License-Identifier: Apache-2.0
# The channel's benchmark: handshake latency over a socketpair and encrypted throughput against
# a raw copy over a unix socket. `make bench` (with the other bench pieces) or
# `make bench-handshake [BENCH_HANDSHAKE_ARGS="-n 500 -m 512"]`. Speed goals live here, never
# in tests.
.PHONY: bench bench-handshake
bench: bench-handshake

bench-handshake: $(BUILD)/bench/handshake_bench
	$(BUILD)/bench/handshake_bench $(BENCH_HANDSHAKE_ARGS)

$(BUILD)/bench/handshake_bench: bench/handshake_bench.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LAYER_INC) $(ALL_LDFLAGS) -o $@ $< $(LIBCOMMON) $(DEP_LIBS)
