# SPDX-License-Identifier: Apache-2.0
#
# make deb: the two Debian packages, built with dpkg-deb (no debhelper), into build/deb/:
#   sandbox-agent_$(VERSION)_<arch>.deb   the STATIC guest binary (`make static`), the
#                                         sandbox-app-boot link, unit, tmpfiles, keys, man pages
#   sandbox-ctl_$(VERSION)_<arch>.deb     the host binary ($(BUILD)/sandbox-ctl, linked against
#                                         Debian's libraries; Depends from dpkg-shlibdeps)
# The staged trees come from `make install-guest|install-host` (mk/install.mk) with Debian's
# paths; packaging/debian/mkdeb.sh adds what policy asks and runs dpkg-deb.
#   make deb-lint    make deb, then lintian on both; fails on any error lintian reports
#
# Developer override: GUEST_BIN=build/sandbox-agent packages the dynamic build instead (its
# Depends then come from dpkg-shlibdeps). Such a package is for testing the packaging only:
# images need the static binary. Without the override the guest binary must be static.
# The package version is the changelog's (packaging/debian/changelog); it must equal
# $(VERSION), so a new version needs a changelog entry first.

DEB_OUT := build/deb
DEB_ARCH := $(shell dpkg --print-architecture 2>/dev/null)
DEB_GUEST := $(DEB_OUT)/sandbox-agent_$(VERSION)_$(DEB_ARCH).deb
DEB_HOST := $(DEB_OUT)/sandbox-ctl_$(VERSION)_$(DEB_ARCH).deb
# Debian's paths (bookworm: units in /usr/lib/systemd/system, where lintian wants them).
DEB_DIRS := PREFIX=/usr SYSCONFDIR=/etc SYSTEMDUNITDIR=/usr/lib/systemd/system \
	TMPFILESDIR=/usr/lib/tmpfiles.d SYSUSERSDIR=/usr/lib/sysusers.d \
	UDEVRULESDIR=/usr/lib/udev/rules.d
DEB_STATIC_BIN := build-static/stripped/sandbox-agent

ifneq ($(filter command line environment,$(origin GUEST_BIN)),)
DEB_GUEST_BIN := $(GUEST_BIN)
DEB_GUEST_STATIC := 0
else
DEB_GUEST_BIN := $(DEB_STATIC_BIN)
DEB_GUEST_STATIC := 1
endif
DEB_HOST_BIN := $(if $(filter command line environment,$(origin HOST_BIN)),$(HOST_BIN),$(BUILD)/sandbox-ctl)

.PHONY: deb deb-lint deb-check-version deb-guest-bin

deb-check-version:
	@v=$$(dpkg-parsechangelog -l packaging/debian/changelog -S Version) && \
	if [ "$$v" != '$(VERSION)' ]; then \
		echo "make deb: packaging/debian/changelog is at $$v, the Makefile at $(VERSION):" \
			"add a changelog entry for $(VERSION) (dch -c packaging/debian/changelog" \
			"-v $(VERSION))" >&2; \
		exit 1; \
	fi

# The guest binary: `make static` (which must exist in this tree) unless overridden.
ifeq ($(DEB_GUEST_STATIC),1)
deb-guest-bin:
	@test -f mk/static.mk || { echo "make deb: the guest package carries the static binary," \
		"but this tree has no \`make static\` (mk/static.mk). For a developer build of the" \
		"packages use: make deb GUEST_BIN=$(BUILD)/sandbox-agent" >&2; exit 1; }
	$(MAKE) --no-print-directory static
	@case "$$(file -b $(DEB_STATIC_BIN))" in *"statically linked"*) ;; \
		*) echo "make deb: $(DEB_STATIC_BIN) is not statically linked" >&2; exit 1 ;; esac
else
deb-guest-bin: $(filter $(BUILD)/sandbox-agent,$(DEB_GUEST_BIN))
	@echo "make deb: packaging the guest binary $(DEB_GUEST_BIN) (developer override," \
		"not for images)"
endif

# Built-Using for the static binary: the source packages its libraries were built from, as
# recorded by packaging/static/build-deps.sh in <prefix>/KEY-INFO, plus musl.
DEB_BUILT_USING = $(shell p=$$(cat build-static/.prefix 2>/dev/null) && \
	[ -f "$$p/KEY-INFO" ] && awk '/^# source packages/ { s = 1; next } /^#/ { s = 0 } \
	s && NF == 2 { printf "%s%s (= %s)", n++ ? ", " : "", $$1, $$2 } \
	$$1 == "musl-dev" { m = $$2 } END { if (m) printf "%smusl (= %s)", n ? ", " : "", m }' \
	"$$p/KEY-INFO")

# The staged trees live outside build/: the top Makefile includes every *.d below $(BUILD),
# and /etc/sandbox-agent/authorized_keys.d is a directory of that name.
deb: deb-check-version deb-guest-bin $(filter $(BUILD)/sandbox-ctl,$(DEB_HOST_BIN))
	@test -n '$(DEB_ARCH)' || { echo "make deb: dpkg --print-architecture failed" >&2; exit 1; }
	@rm -f $(DEB_GUEST) $(DEB_HOST)
	@stage=$$(mktemp -d /tmp/sandbox-deb.XXXXXX) && trap 'rm -rf "$$stage"' EXIT && \
	$(MAKE) --no-print-directory -s install-guest $(DEB_DIRS) \
		DESTDIR="$$stage/sandbox-agent" GUEST_BIN=$(DEB_GUEST_BIN) && \
	$(MAKE) --no-print-directory -s install-host $(DEB_DIRS) \
		DESTDIR="$$stage/sandbox-ctl" HOST_BIN=$(DEB_HOST_BIN) && \
	packaging/debian/mkdeb.sh sandbox-agent "$$stage/sandbox-agent" $(DEB_OUT) \
		'$(if $(filter 1,$(DEB_GUEST_STATIC)),$(DEB_BUILT_USING))' && \
	packaging/debian/mkdeb.sh sandbox-ctl "$$stage/sandbox-ctl" $(DEB_OUT)
	@for d in $(DEB_GUEST) $(DEB_HOST); do \
		printf '  %-44s %8d bytes\n' $$d $$(stat -c %s $$d); done

# Errors fail; warnings and info are printed. Overrides live in packaging/debian/*.lintian-overrides.
deb-lint: deb
	lintian --fail-on error --display-info $(DEB_GUEST) $(DEB_HOST)
