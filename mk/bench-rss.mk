# SPDX-License-Identifier: Apache-2.0
# The idle daemon's resident memory, idle and with 1 and 4 idle connections, for the build/
# binary and, when it is built, build-static/'s: `make bench-rss` (needs root). Memory goals live
# here, never in tests.
.PHONY: bench bench-rss
bench: bench-rss

bench-rss: $(BUILD)/bench/daemon_rss_bench all
	$(BUILD)/bench/daemon_rss_bench --agent $(BUILD)/sandbox-agent
	@if [ -x build-static/sandbox-agent ]; then \
		$(BUILD)/bench/daemon_rss_bench --agent build-static/sandbox-agent; \
	else echo "bench-rss: no build-static/sandbox-agent (make static) to measure"; fi

$(BUILD)/bench/daemon_rss_bench: bench/daemon_rss_bench.c $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LAYER_INC) $(ALL_LDFLAGS) -o $@ $< $(LIBCOMMON) $(DEP_LIBS)
