# SPDX-License-Identifier: Apache-2.0
#
# make static: sandbox-agent (+ the sandbox-app-boot link) and sandbox-ctl linked fully static
# with musl into build-static/, against the dependency set that packaging/static/build-deps.sh
# builds from Debian's source packages and caches (see packaging/static/README.md).
#
#   build-static/sandbox-agent, sandbox-ctl     linked, with symbols
#   build-static/sandbox-agent.map, ...ctl.map  their link maps (make static-size reads them)
#   build-static/stripped/...                   stripped copies: what ships; sizes are checked
#   build-static/tests/libcheck                 tests/static/libcheck.c, linked the same way
#
# Included by the top Makefile; COMMON_SRC, GUEST_SRC, HOST_SRC are its globs, so every .c file
# in common/*/ guest/*/ host/ is compiled here too, with the same per-layer include paths.

MUSL_CC ?= musl-gcc
SBUILD := build-static
STATIC_DEPS := packaging/static/build-deps.sh
# The issue's limit for the stripped guest binary: 2.0 MB.
STATIC_AGENT_MAX := 2000000

# SA_CA_BUNDLE: the static set's libgit2 has no default CA location (build-deps.sh, CA_BUNDLE);
# git_fetch_global_init() loads this one where a fetch or a push may follow. SA_CURL_LINKED:
# libcurl is linked in, host/forge_curl.c calls it directly (a static binary has no dlopen).
# Code generation, given to the compiler and again to the link (-flto generates the code there).
STATIC_CODEGEN := -Oz -fno-pie -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables \
	-fstack-protector-strong
STATIC_CFLAGS := $(filter-out -O2 -fPIE,$(BASE_CFLAGS)) $(STATIC_CODEGEN) -flto \
	-DSA_CA_BUNDLE='"/etc/ssl/certs/ca-certificates.crt"' -DSA_CURL_LINKED \
	-isystem $(STATIC_PREFIX)/include -isystem $(STATIC_PREFIX)/kernel-include
# -flto: our objects (not the dependencies') are optimized together at the link, which inlines
# and drops across files: 5.5 KB less code in sandbox-agent (packaging/static/README.md).
# The code, the read-only data and the headers keep their own segments (-z separate-code, the
# default): the read-only data is not mapped executable, which is worth its padding (up to 8 KB).
STATIC_LDFLAGS := $(STATIC_CODEGEN) -flto=auto -Werror=lto-type-mismatch -Werror=odr -static -no-pie -Wl,--gc-sections -Wl,-z,relro,-z,now \
	-Wl,-z,noexecstack
# -L .../lib/musl: the set's libc.a (musl built -Os, see build-deps.sh) is found before the one
# musl-gcc's specs name; a set without it links the system's.
STATIC_LIBS := -L$(STATIC_PREFIX)/lib/musl -L$(STATIC_PREFIX)/lib -Wl,--start-group -lgit2 \
	-lcurl -lmbedtls -lmbedx509 -lmbedcrypto -lhttp_parser -lyaml -ljson-c -lsodium -lz \
	-Wl,--end-group -lpthread

S_COMMON_OBJ := $(COMMON_SRC:%.c=$(SBUILD)/%.o)
S_GUEST_OBJ := $(GUEST_SRC:%.c=$(SBUILD)/%.o)
S_HOST_OBJ := $(HOST_SRC:%.c=$(SBUILD)/%.o)
S_LIBCOMMON := $(SBUILD)/libsandbox-common.a
S_LIBGUEST := $(SBUILD)/libsandbox-guest.a
S_LIBHOST := $(SBUILD)/libsandbox-host.a
S_BINS := sandbox-agent sandbox-ctl tests/libcheck
S_STRIPPED := $(S_BINS:%=$(SBUILD)/stripped/%)

.PHONY: static static-bins static-deps static-size FORCE

# The dependency script prints the prefix of the cached set (building it on the first run);
# the binaries are made by a second make that knows it.
static:
	@prefix=$$($(STATIC_DEPS)) && \
		$(MAKE) --no-print-directory static-bins STATIC_PREFIX="$$prefix"

static-deps:
	@$(STATIC_DEPS)

# Bytes per library in the static agent and sandbox-ctl, from their link maps.
static-size: static
	@for b in sandbox-agent sandbox-ctl; do \
		echo "$(SBUILD)/$$b (from $(SBUILD)/$$b.map):"; \
		packaging/static/size-report.py $(SBUILD)/$$b.map; \
	done

ifneq ($(filter static-bins,$(MAKECMDGOALS)),)
ifeq ($(STATIC_PREFIX),)
$(error static-bins needs STATIC_PREFIX; run `make static`)
endif
endif

# Objects depend on the prefix they were compiled against: a new dependency set rebuilds them.
$(SBUILD)/.prefix: FORCE
	@mkdir -p $(@D)
	@echo '$(STATIC_PREFIX)' | cmp -s - $@ || echo '$(STATIC_PREFIX)' >$@

$(SBUILD)/%.o: %.c $(SBUILD)/.prefix
	@mkdir -p $(@D)
	@echo "  MUSL-CC $<"
	@$(MUSL_CC) $(STATIC_CFLAGS) $(call layer_inc,$<) -c $< -o $@

# The static set has no libcrypto (the guest must not carry it): the static sandbox-ctl is built
# without `github-token`, which then says so (host/github_app.c; the Debian package's has it).
$(S_HOST_OBJ): STATIC_CFLAGS += -DSA_NO_LIBCRYPTO

$(S_LIBCOMMON): $(S_COMMON_OBJ)
$(S_LIBGUEST): $(S_GUEST_OBJ)
$(S_LIBHOST): $(S_HOST_OBJ)
# gcc-ar: the archive's index must see the symbols in the objects' LTO code.
$(S_LIBCOMMON) $(S_LIBGUEST) $(S_LIBHOST): AR := gcc-ar
$(S_LIBCOMMON) $(S_LIBGUEST) $(S_LIBHOST):
	$(archive_recipe)

$(SBUILD)/sandbox-agent: $(SBUILD)/guest/cli/main.o $(S_LIBGUEST) $(S_LIBCOMMON)
	@echo "  MUSL-LD $@"
	@$(MUSL_CC) $(STATIC_LDFLAGS) -Wl,-Map=$@.map -o $@ $^ $(STATIC_LIBS)
$(SBUILD)/sandbox-ctl: $(SBUILD)/host/main.o $(S_LIBHOST) $(S_LIBCOMMON)
	@echo "  MUSL-LD $@"
	@$(MUSL_CC) $(STATIC_LDFLAGS) -Wl,-Map=$@.map -o $@ $^ $(STATIC_LIBS)
$(SBUILD)/tests/libcheck: $(SBUILD)/tests/static/libcheck.o
	@echo "  MUSL-LD $@"
	@$(MUSL_CC) $(STATIC_LDFLAGS) -o $@ $^ $(STATIC_LIBS)
$(SBUILD)/sandbox-app-boot $(SBUILD)/stripped/sandbox-app-boot:
	@mkdir -p $(@D)
	@ln -sfn sandbox-agent $@

$(SBUILD)/stripped/%: $(SBUILD)/%
	@mkdir -p $(@D)
	@strip -o $@ $<

# Sizes (stripped) in bytes and MB (10^6), `file` on each, and the checks: static, and the
# agent within STATIC_AGENT_MAX.
static-bins: $(S_BINS:%=$(SBUILD)/%) $(SBUILD)/sandbox-app-boot $(S_STRIPPED) \
		$(SBUILD)/stripped/sandbox-app-boot
	@echo "static build against $(STATIC_PREFIX)"
	@for b in $(S_STRIPPED); do \
		n=$$(stat -c %s $$b); \
		mb=$$(awk -v n=$$n 'BEGIN { printf "%.2f", n / 1000000 }'); \
		printf '  %-36s %9d bytes  %s MB stripped\n' $$b $$n $$mb; \
	done
	@fail=0; for b in $(S_STRIPPED); do \
		info=$$(file -b $$b); echo "  file $$b: $$info"; \
		case $$info in *"statically linked"*) ;; \
		*) echo "static: $$b is not statically linked" >&2; fail=1 ;; esac; \
	done; exit $$fail
	@if [ -f $(STATIC_PREFIX)/lib/musl/libc.a ] && \
		! grep -qF '$(STATIC_PREFIX)/lib/musl/libc.a(' $(SBUILD)/sandbox-agent.map; then \
		echo "static: sandbox-agent was not linked with $(STATIC_PREFIX)/lib/musl/libc.a" >&2; \
		exit 1; \
	fi
	@n=$$(stat -c %s $(SBUILD)/stripped/sandbox-agent); \
	if [ $$n -gt $(STATIC_AGENT_MAX) ]; then \
		echo "static: sandbox-agent is $$n bytes stripped, above $(STATIC_AGENT_MAX)" >&2; \
		exit 1; \
	fi

-include $(shell find $(SBUILD) -name '*.d' 2>/dev/null)
