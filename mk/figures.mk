# SPDX-License-Identifier: Apache-2.0
# `make figures`: the benches of bench/ one after the other (bench/figures.sh), then README.md's
# figures table regenerated from the figure lines they print (scripts/figures.py).
# `make figures FIGURES="boot rss"` runs only the benches whose name holds one of the words.
.PHONY: figures
figures: all $(BUILD)/bench/daemon_rss_bench $(BUILD)/bench/scrub_bench $(BUILD)/bench/push_raw \
	$(BUILD)/bench/handshake_bench $(BUILD)/bench/boot_floor_bench
	@prefix=$$(packaging/static/build-deps.sh) && \
		$(MAKE) --no-print-directory static-bins vm-bins STATIC_PREFIX="$$prefix"
	bench/figures.sh $(FIGURES)
