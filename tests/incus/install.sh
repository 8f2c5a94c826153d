#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs Incus 6.0 (incus-base: the daemon, its client, LXC) from Debian's
# bookworm-backports, with dnsmasq-base (incus-base 6.0.4-2+deb13u7~bpo12+1 asks dnsmasq for its
# version when it makes a managed bridge, even one without DHCP and DNS, and fails without it),
# for the tests that drive a real daemon (tests/incus/README.md).
#   tests/incus/install.sh           install when missing; prints the installed version
#   tests/incus/install.sh --check   exit 0 when a 6.0 daemon is installed, 1 otherwise
#
# /etc/apt is never read for sources nor written: apt runs on a private state (its own deb822
# sources file, lists and archive cache) below
#   ${SANDBOX_CACHE:-~/.cache/sandbox-app-runtime}/incus-6.0/
# (keyed by the Incus series), so the lists and the downloaded .debs are reused by the next
# run and a fresh machine downloads them once. The mirror is the one the machine's apt uses
# for bookworm (apt-get indextargets), else deb.debian.org; SANDBOX_DEBIAN_MIRROR overrides.
# Other apt runs may hold dpkg's lock: we wait for it up to 15 minutes. Run as root.
set -eu

SERIES=6.0
CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/incus-$SERIES
REFRESH_DAYS=${SANDBOX_INCUS_REFRESH_DAYS:-7}

say() { echo "incus-install: $*" >&2; }

installed_version() {
	# shellcheck disable=SC2016 # dpkg-query's own field syntax
	dpkg-query -W -f '${Version} ${Status}\n' incus-base 2>/dev/null |
		awk '$NF == "installed" { print $1 }'
}

have_series() {
	local v
	v=$(installed_version)
	case $v in
	"$SERIES".*) [ -x /usr/libexec/incus/incusd ] && command -v incus >/dev/null &&
		command -v dnsmasq >/dev/null ;;
	*) return 1 ;;
	esac
}

if [ "${1:-}" = --check ]; then
	have_series
	exit
fi
if have_series; then
	installed_version
	exit 0
fi
[ "$(id -u)" -eq 0 ] || {
	say "run as root (apt-get and dpkg need it)"
	exit 1
}

mirror_for() { # mirror_for SUITE DEFAULT: the URI the machine's apt uses for SUITE
	local uri
	# shellcheck disable=SC2016 # $(...) is apt's own field syntax here
	uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
		awk -v s="$1" '$2 == s { print $1; exit }')
	echo "${uri:-$2}"
}
MIRROR=${SANDBOX_DEBIAN_MIRROR:-$(mirror_for bookworm http://deb.debian.org/debian/)}
SECURITY=$(mirror_for bookworm-security http://deb.debian.org/debian-security/)

mkdir -p "$CACHE/sources" "$CACHE/lists/partial" "$CACHE/cache/archives/partial"
cat >"$CACHE/sources/incus.sources.new" <<SOURCES
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
if ! cmp -s "$CACHE/sources/incus.sources.new" "$CACHE/sources/incus.sources"; then
	mv "$CACHE/sources/incus.sources.new" "$CACHE/sources/incus.sources"
	rm -f "$CACHE/lists/updated"
else
	rm -f "$CACHE/sources/incus.sources.new"
fi

APT=(apt-get -q -o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$CACHE/sources"
	-o "Dir::State::Lists=$CACHE/lists" -o "Dir::Cache=$CACHE/cache"
	-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$CACHE/sources"
	-o APT::Sandbox::User=root -o Acquire::Languages=none -o DPkg::Lock::Timeout=900
	-o APT::Keep-Downloaded-Packages=true)

update() {
	say "reading the package lists of bookworm, -updates, -backports and -security"
	"${APT[@]}" update >"$CACHE/update.log" 2>&1 || {
		cat "$CACHE/update.log" >&2
		return 1
	}
	touch "$CACHE/lists/updated"
}
fresh() { [ -e "$CACHE/lists/updated" ] && [ -z "$(find "$CACHE/lists/updated" -mtime "+$((REFRESH_DAYS - 1))")" ]; }

install() {
	DEBIAN_FRONTEND=noninteractive "${APT[@]}" install -y -t bookworm-backports \
		--no-install-recommends incus-base dnsmasq-base >"$CACHE/install.log" 2>&1
}

start=$(date +%s)
fresh || update
if ! install; then
	# The archive keeps only the current version of each package: lists from an earlier run
	# may name files that are gone. Read them again once.
	say "install with the cached lists failed; reading the lists again"
	update
	install || {
		tail -30 "$CACHE/install.log" >&2
		exit 1
	}
fi
have_series || {
	say "incus-base $(installed_version) is installed, not $SERIES.x, or dnsmasq is missing"
	exit 1
}
say "installed incus-base $(installed_version) in $(($(date +%s) - start)) s"
installed_version
