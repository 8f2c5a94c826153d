# SPDX-License-Identifier: Apache-2.0
#
# make install [DESTDIR=/staging] [PREFIX=/usr/local]: installs for distributions other than
# Debian (which uses `make deb`, mk/deb.mk).
#   make install           install-guest + install-host
#   make install-guest     sandbox-agent, the sandbox-app-boot and sandbox-claude links, man pages,
#                          the systemd unit, tmpfiles.d, sysusers.d, the udev rule,
#                          /etc/sandbox-agent/ (an existing authorized_keys is kept)
#   make install-host      sandbox-ctl and its man page
#   make uninstall         removes what install put there, except /etc/sandbox-agent/
#
# The binaries are the dynamic build in $(BUILD)/ unless GUEST_BIN / HOST_BIN name others, for
# example GUEST_BIN=build-static/stripped/sandbox-agent after `make static`. The unit's
# ExecStart names $(SBINDIR)/sandbox-agent, so install with the SBINDIR the system will run.
# The agent reads its keys from /etc/sandbox-agent whatever PREFIX is: SYSCONFDIR is /etc.
# Every directory variable is absolute and may be set on the command line.

PREFIX ?= /usr/local
BINDIR ?= $(PREFIX)/bin
SBINDIR ?= $(PREFIX)/sbin
MANDIR ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
UDEVRULESDIR ?= $(PREFIX)/lib/udev/rules.d
SYSCONFDIR ?= /etc
GUEST_BIN ?= $(BUILD)/sandbox-agent
HOST_BIN ?= $(BUILD)/sandbox-ctl
INSTALL ?= install

INSTALL_DIRS := PREFIX BINDIR SBINDIR MANDIR SYSTEMDUNITDIR TMPFILESDIR SYSUSERSDIR UDEVRULESDIR \
	SYSCONFDIR
AGENT_KEYS_DIR := $(SYSCONFDIR)/sandbox-agent

.PHONY: install install-guest install-host uninstall install-check-dirs

install: install-guest install-host

install-check-dirs:
	@for v in $(foreach v,$(INSTALL_DIRS),'$(v)=$($(v))'); do \
		case $${v#*=} in /*) ;; \
		*) echo "make install: $${v%%=*} must be an absolute path, not '$${v#*=}'" >&2; \
			exit 2 ;; esac; \
	done

# Build the binaries only when they are this tree's default build; others must exist.
install-guest: install-check-dirs $(filter $(BUILD)/sandbox-agent,$(GUEST_BIN))
	@test -x '$(GUEST_BIN)' || { echo "make install: no guest binary at $(GUEST_BIN)" >&2; exit 1; }
	$(INSTALL) -d -m 0755 '$(DESTDIR)$(SBINDIR)' '$(DESTDIR)$(BINDIR)' \
		'$(DESTDIR)$(MANDIR)/man1' '$(DESTDIR)$(MANDIR)/man5' '$(DESTDIR)$(MANDIR)/man8' \
		'$(DESTDIR)$(SYSTEMDUNITDIR)' '$(DESTDIR)$(TMPFILESDIR)' '$(DESTDIR)$(SYSUSERSDIR)' \
		'$(DESTDIR)$(UDEVRULESDIR)' \
		'$(DESTDIR)$(AGENT_KEYS_DIR)/authorized_keys.d'
	$(INSTALL) -m 0755 '$(GUEST_BIN)' '$(DESTDIR)$(SBINDIR)/sandbox-agent'
	ln -sfn "$$(realpath -m --relative-to='$(BINDIR)' '$(SBINDIR)')/sandbox-agent" \
		'$(DESTDIR)$(BINDIR)/sandbox-app-boot'
	ln -sfn "$$(realpath -m --relative-to='$(BINDIR)' '$(SBINDIR)')/sandbox-agent" \
		'$(DESTDIR)$(BINDIR)/sandbox-claude'
	$(INSTALL) -m 0644 packaging/man/sandbox-app-boot.1 '$(DESTDIR)$(MANDIR)/man1/'
	$(INSTALL) -m 0644 packaging/man/sandbox-claude.8 '$(DESTDIR)$(MANDIR)/man8/'
	$(INSTALL) -m 0644 packaging/man/sandbox.yml.5 '$(DESTDIR)$(MANDIR)/man5/'
	$(INSTALL) -m 0644 packaging/man/sandbox-agent.8 '$(DESTDIR)$(MANDIR)/man8/'
	sed 's|@SBINDIR@|$(SBINDIR)|g' packaging/systemd/sandbox-agent.service.in \
		>'$(DESTDIR)$(SYSTEMDUNITDIR)/sandbox-agent.service'
	chmod 0644 '$(DESTDIR)$(SYSTEMDUNITDIR)/sandbox-agent.service'
	$(INSTALL) -m 0644 packaging/systemd/sandbox-agent.tmpfiles \
		'$(DESTDIR)$(TMPFILESDIR)/sandbox-agent.conf'
	$(INSTALL) -m 0644 packaging/systemd/sandbox-agent.sysusers \
		'$(DESTDIR)$(SYSUSERSDIR)/sandbox-agent.conf'
	$(INSTALL) -m 0644 packaging/udev/60-sandbox-agent.rules '$(DESTDIR)$(UDEVRULESDIR)/'
	test -e '$(DESTDIR)$(AGENT_KEYS_DIR)/authorized_keys' || \
		$(INSTALL) -m 0644 packaging/debian/authorized_keys '$(DESTDIR)$(AGENT_KEYS_DIR)/'

install-host: install-check-dirs $(filter $(BUILD)/sandbox-ctl,$(HOST_BIN))
	@test -x '$(HOST_BIN)' || { echo "make install: no host binary at $(HOST_BIN)" >&2; exit 1; }
	$(INSTALL) -d -m 0755 '$(DESTDIR)$(BINDIR)' '$(DESTDIR)$(MANDIR)/man1'
	$(INSTALL) -m 0755 '$(HOST_BIN)' '$(DESTDIR)$(BINDIR)/sandbox-ctl'
	$(INSTALL) -m 0644 packaging/man/sandbox-ctl.1 '$(DESTDIR)$(MANDIR)/man1/'

uninstall: install-check-dirs
	rm -f '$(DESTDIR)$(SBINDIR)/sandbox-agent' '$(DESTDIR)$(BINDIR)/sandbox-app-boot' \
		'$(DESTDIR)$(BINDIR)/sandbox-claude' '$(DESTDIR)$(MANDIR)/man8/sandbox-claude.8' \
		'$(DESTDIR)$(BINDIR)/sandbox-ctl' \
		'$(DESTDIR)$(MANDIR)/man1/sandbox-app-boot.1' '$(DESTDIR)$(MANDIR)/man1/sandbox-ctl.1' \
		'$(DESTDIR)$(MANDIR)/man5/sandbox.yml.5' '$(DESTDIR)$(MANDIR)/man8/sandbox-agent.8' \
		'$(DESTDIR)$(SYSTEMDUNITDIR)/sandbox-agent.service' \
		'$(DESTDIR)$(TMPFILESDIR)/sandbox-agent.conf' \
		'$(DESTDIR)$(SYSUSERSDIR)/sandbox-agent.conf' \
		'$(DESTDIR)$(UDEVRULESDIR)/60-sandbox-agent.rules'
