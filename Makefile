# SPDX-License-Identifier: Apache-2.0
#
# make            dynamic developer build against the system libraries (build/)
# make static     fully static guest and host binaries with musl (build-static/), see mk/static.mk
# make test       everything: format and layer checks, unit tests (also under sanitizers),
#                 fuzz corpus replay, integration
# make check      unit tests, fuzz corpus replay and the layer checks only (fast)
# make fuzz       libFuzzer binaries with clang (build-fuzz/); make fuzz-run FUZZ_SECONDS=60
# make test-incus the minimal image in a real Incus daemon (root; see tests/incus/README.md)
# make format / format-check

VERSION := 0.1.0
CC ?= gcc
PKG_CONFIG ?= pkg-config
PKGS := yaml-0.1 json-c libcurl libgit2 libsodium zlib

BUILD ?= build
SAN ?=

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter -Wformat=2 -Wno-format-nonliteral -Wno-format-truncation
HARDEN := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
BASE_CFLAGS := -std=gnu11 -O2 -g $(WARN) $(HARDEN) -D_GNU_SOURCE -DSA_VERSION=\"$(VERSION)\" \
	-MMD -MP
ifneq ($(SAN),)
BASE_CFLAGS += -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all -O1
SAN_LDFLAGS := -fsanitize=address,undefined
endif
DEP_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS))
DEP_LIBS := $(shell $(PKG_CONFIG) --libs $(PKGS))
# sandbox-ctl links every library but libcurl, which host/forge_curl.c opens when a forge
# request needs it (most commands never do, and would pay for loading it at every start).
CTL_LIBS := $(shell $(PKG_CONFIG) --libs $(filter-out libcurl,$(PKGS))) -ldl
# Debian's libcrypto (RS256 for `sandbox-ctl github-token`): sandbox-ctl only, never the agent.
HOST_PKGS := libcrypto
HOST_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(HOST_PKGS))
HOST_LIBS := $(shell $(PKG_CONFIG) --libs $(HOST_PKGS))
ALL_CFLAGS := $(BASE_CFLAGS) $(DEP_CFLAGS) $(CFLAGS)
ALL_LDFLAGS := -pie -Wl,-z,relro,-z,now $(SAN_LDFLAGS) $(LDFLAGS)

include mk/layers.mk

COMMON_SRC := $(sort $(wildcard common/*/*.c))
GUEST_SRC := $(sort $(filter-out guest/cli/main.c,$(wildcard guest/*/*.c)))
HOST_SRC := $(sort $(filter-out host/main.c,$(wildcard host/*.c)))
UNIT_SUPPORT_SRC := $(sort $(wildcard tests/unit/support/*.c))
UNIT_SRC := $(sort $(wildcard tests/unit/test_*.c))
FUZZ_SRC := $(sort $(wildcard tests/fuzz/fuzz_*.c))

COMMON_OBJ := $(COMMON_SRC:%.c=$(BUILD)/%.o)
GUEST_OBJ := $(GUEST_SRC:%.c=$(BUILD)/%.o)
HOST_OBJ := $(HOST_SRC:%.c=$(BUILD)/%.o)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
REPLAY_BIN := $(FUZZ_SRC:tests/fuzz/%.c=$(BUILD)/replay/%)

LIBCOMMON := $(BUILD)/libsandbox-common.a
LIBGUEST := $(BUILD)/libsandbox-guest.a
LIBHOST := $(BUILD)/libsandbox-host.a

.PHONY: all clean test check unit unit-san replay integration format format-check fuzz fuzz-run demo
all: $(BUILD)/sandbox-agent $(BUILD)/sandbox-app-boot $(BUILD)/sandbox-claude $(BUILD)/sandbox-ctl

$(BUILD)/%.o: %.c
	@mkdir -p $(@D)
	@echo "  CC $<"
	@$(CC) $(ALL_CFLAGS) $(call layer_inc,$<) -c $< -o $@

$(HOST_OBJ): ALL_CFLAGS += $(HOST_CFLAGS)

$(LIBCOMMON): $(COMMON_OBJ)
$(LIBGUEST): $(GUEST_OBJ)
$(LIBHOST): $(HOST_OBJ)
$(LIBCOMMON) $(LIBGUEST) $(LIBHOST):
	$(archive_recipe)

$(BUILD)/sandbox-agent: $(BUILD)/guest/cli/main.o $(LIBGUEST) $(LIBCOMMON)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(DEP_LIBS)
$(BUILD)/sandbox-app-boot $(BUILD)/sandbox-claude: $(BUILD)/sandbox-agent
	ln -sf sandbox-agent $@
$(BUILD)/sandbox-ctl: $(BUILD)/host/main.o $(LIBHOST) $(LIBCOMMON)
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(CTL_LIBS) $(HOST_LIBS)

# Unit tests: one Check binary per module.
# Their shared helpers (tests/unit/support/) are compiled once into one archive.
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check)
UNIT_INC := $(ALL_LAYER_INC) -Itests/unit/support
LIBTESTSUPPORT := $(BUILD)/libsandbox-testsupport.a
$(BUILD)/tests/support/%.o: tests/unit/support/%.c
	@mkdir -p $(@D)
	@echo "  CC $<"
	@$(CC) $(ALL_CFLAGS) $(UNIT_INC) -c $< -o $@
$(LIBTESTSUPPORT): $(UNIT_SUPPORT_SRC:tests/unit/support/%.c=$(BUILD)/tests/support/%.o)
	$(archive_recipe)
$(BUILD)/tests/%: tests/unit/%.c $(LIBTESTSUPPORT) $(LIBGUEST) $(LIBHOST) $(LIBCOMMON)
	@mkdir -p $(@D)
	@echo "  CCLD $@"
	@$(CC) $(ALL_CFLAGS) $(UNIT_INC) $(ALL_LDFLAGS) -o $@ $< $(LIBTESTSUPPORT) $(LIBGUEST) \
		$(LIBHOST) $(LIBCOMMON) $(DEP_LIBS) $(HOST_LIBS) $(CHECK_LIBS)

# Fuzz targets replayed over their committed corpus with a plain main() (tests/fuzz/replay.c).
$(BUILD)/replay/%: tests/fuzz/%.c tests/fuzz/replay.c $(LIBGUEST) $(LIBHOST) $(LIBCOMMON)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(ALL_LAYER_INC) $(ALL_LDFLAGS) -o $@ $< tests/fuzz/replay.c $(LIBGUEST) $(LIBHOST) \
		$(LIBCOMMON) $(DEP_LIBS) $(HOST_LIBS)

unit: $(UNIT_BIN) all
replay: $(REPLAY_BIN)

# The README's test command. Prints "N passed, N failed, N skipped" last.
# Builds run on every core; the tests themselves run one after another.
NPROC := $(shell nproc 2>/dev/null || echo 2)
test: format-check
	$(MAKE) -j$(NPROC) all $(UNIT_BIN) $(REPLAY_BIN)
	scripts/check-layers.py --objects $(BUILD)
	$(MAKE) -j$(NPROC) BUILD=build-san SAN=1 unit replay
	tests/run.sh --all

check: all $(UNIT_BIN) $(REPLAY_BIN)
	scripts/check-layers.py --objects $(BUILD)
	tests/run.sh --unit

unit-san:
	$(MAKE) -j$(NPROC) BUILD=build-san SAN=1 unit replay
	tests/run.sh --unit --build build-san

demo: all
	scripts/demo.sh

integration: all
	tests/run.sh --integration

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]')
format:
	clang-format -i $(FORMAT_FILES)
format-check:
	@clang-format --dry-run --Werror $(FORMAT_FILES) && echo "format-check: $(words $(FORMAT_FILES)) files formatted"

clean:
	rm -rf build build-san build-fuzz build-static

-include $(filter-out mk/layers.mk,$(wildcard mk/*.mk))
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
