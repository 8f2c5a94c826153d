# SPDX-License-Identifier: Apache-2.0
# The scrubber's throughput benchmark: `make bench` (with the other bench pieces) or
# `make bench-scrub`. Speed goals live here, never in tests.
.PHONY: bench bench-scrub
bench: bench-scrub

bench-scrub: $(BUILD)/bench/scrub_bench
	$(BUILD)/bench/scrub_bench

$(BUILD)/bench/scrub_bench: bench/scrub_bench.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LAYER_INC) $(ALL_LDFLAGS) -o $@ $< $(LIBCOMMON) $(DEP_LIBS)
