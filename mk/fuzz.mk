# SPDX-License-Identifier: Apache-2.0
#
# libFuzzer builds with clang (tests/fuzz/README.md).
#   make fuzz                          every tests/fuzz/fuzz_*.c -> build-fuzz/fuzz_*
#   make fuzz-run [FUZZ_SECONDS=60] [FUZZ_TARGETS="fuzz_scrub ..."]
# fuzz-run copies each target's committed corpus (tests/fuzz/corpus/<name>/, never written)
# into build-fuzz/corpus/<name>/, fuzzes that copy for FUZZ_SECONDS, writes crash inputs to
# build-fuzz/artifacts/<name>/, prints executions, coverage and findings per target, and fails
# when any target found something.
#
# The project's sources are compiled again with clang and coverage instrumentation into
# build-fuzz/ (same source lists and dependency flags as the gcc build), so the fuzzer sees
# the branches inside the library, not only in the harness.

FUZZ_BUILD := build-fuzz
FUZZ_CC ?= $(firstword $(shell command -v clang-14 clang 2>/dev/null))
FUZZ_SECONDS ?= 60
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -O1 -g $(filter-out -Werror -Wno-format-truncation,$(WARN)) \
	-D_GNU_SOURCE -DSA_VERSION=\"$(VERSION)\" -MMD -MP \
	$(DEP_CFLAGS) $(FUZZ_SAN)
FUZZ_SRC_ALL := $(sort $(wildcard tests/fuzz/fuzz_*.c))
FUZZ_BIN := $(FUZZ_SRC_ALL:tests/fuzz/%.c=$(FUZZ_BUILD)/%)
FUZZ_TARGETS ?= $(notdir $(FUZZ_BIN))
FUZZ_LIBCOMMON := $(FUZZ_BUILD)/libsandbox-common.a
FUZZ_LIBGUEST := $(FUZZ_BUILD)/libsandbox-guest.a
FUZZ_LIBHOST := $(FUZZ_BUILD)/libsandbox-host.a

.PHONY: fuzz fuzz-run fuzz-check-cc

fuzz-check-cc:
	@test -n "$(FUZZ_CC)" || { echo "make fuzz: clang not found (apt-get install clang-14 libclang-rt-14-dev)" >&2; exit 1; }
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' | \
		$(FUZZ_CC) -x c -fsanitize=fuzzer -o /dev/null - 2>/dev/null || \
		{ echo "make fuzz: $(FUZZ_CC) cannot link libFuzzer (apt-get install libclang-rt-14-dev)" >&2; exit 1; }

fuzz: fuzz-check-cc $(FUZZ_BIN)

$(FUZZ_BUILD)/obj/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(call layer_inc,$<) -fsanitize=fuzzer-no-link -c $< -o $@

$(FUZZ_LIBCOMMON): $(COMMON_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBGUEST): $(GUEST_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBHOST): $(HOST_SRC:%.c=$(FUZZ_BUILD)/obj/%.o)
$(FUZZ_LIBCOMMON) $(FUZZ_LIBGUEST) $(FUZZ_LIBHOST):
	$(archive_recipe)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_LIBGUEST) $(FUZZ_LIBHOST) $(FUZZ_LIBCOMMON) | fuzz-check-cc
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(ALL_LAYER_INC) -fsanitize=fuzzer -o $@ $< $(FUZZ_LIBGUEST) $(FUZZ_LIBHOST) \
		$(FUZZ_LIBCOMMON) $(DEP_LIBS) $(HOST_LIBS)

# One target at a time (2 cores: one for the fuzzer, one for the rest of the machine).
fuzz-run: fuzz
	@found=0; \
	for name in $(FUZZ_TARGETS); do \
		short=$${name#fuzz_}; bin=$(FUZZ_BUILD)/$$name; \
		corpus=$(FUZZ_BUILD)/corpus/$$short; art=$(FUZZ_BUILD)/artifacts/$$short; \
		log=$(FUZZ_BUILD)/logs/$$short.log; \
		[ -x "$$bin" ] || { echo "fuzz-run: no target $$bin" >&2; found=1; continue; }; \
		mkdir -p "$$corpus" "$$art" $(FUZZ_BUILD)/logs; \
		if [ -d tests/fuzz/corpus/$$short ]; then cp -n tests/fuzz/corpus/$$short/* "$$corpus"/ 2>/dev/null; fi; \
		before=$$(ls "$$art" | wc -l); \
		echo "=== $$name: $(FUZZ_SECONDS) s over $$corpus ($$(ls "$$corpus" | wc -l) inputs)"; \
		LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0 \
		"$$bin" -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
			-print_final_stats=1 -artifact_prefix="$$art/" "$$corpus" >"$$log" 2>&1; \
		rc=$$?; \
		execs=$$(sed -n 's/^stat::number_of_executed_units: *//p' "$$log" | tail -1); \
		cov=$$(grep -o 'cov: [0-9]*' "$$log" | tail -1 | cut -d' ' -f2); \
		ft=$$(grep -o 'ft: [0-9]*' "$$log" | tail -1 | cut -d' ' -f2); \
		after=$$(ls "$$art" | wc -l); \
		echo "$$name: executions $${execs:-?}, coverage $${cov:-?} edges ($${ft:-?} features), corpus $$(ls "$$corpus" | wc -l) inputs"; \
		if [ $$rc -ne 0 ] || [ $$after -gt $$before ]; then \
			found=1; echo "$$name: FINDING (exit $$rc), see $$log and $$art/:"; \
			ls -t "$$art" | head -5 | sed 's/^/  /'; grep -m1 -A15 '^==[0-9]*==ERROR\|runtime error' "$$log"; \
		else \
			echo "$$name: no crash found"; \
		fi; \
	done; \
	exit $$found

-include $(shell find $(FUZZ_BUILD) -name '*.d' 2>/dev/null)
