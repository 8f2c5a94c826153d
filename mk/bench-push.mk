# SPDX-License-Identifier: Apache-2.0
# sandbox-ctl push against a raw copy of the same tree over a unix socket, in one run
# (bench/push_bench.sh; needs root): `make bench-push [BENCH_PUSH_BUILD=build-static]`. Part of
# `make bench` when run as root. Speed goals live here, never in tests.
.PHONY: bench bench-push
bench: bench-push

bench-push: $(BUILD)/bench/push_raw $(BUILD)/bench/handshake_bench $(BUILD)/sandbox-agent \
	$(BUILD)/sandbox-ctl
	BUILD=$(or $(BENCH_PUSH_BUILD),$(BUILD)) RAW=$(BUILD)/bench/push_raw \
		HSB=$(BUILD)/bench/handshake_bench bench/push_bench.sh || [ $$? -eq 77 ]

$(BUILD)/bench/push_raw: bench/push_raw.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LDFLAGS) -o $@ $<
