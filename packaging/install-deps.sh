#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
#
# Installs what building and testing sandbox-app-runtime needs on Debian 12, as root.
# Idempotent: packages already present are not downloaded again; `apt-get update` runs only
# when a package is missing. Set SANDBOX_DEPS_MINIMAL=1 to install only the build tools.
set -eu

BUILD_PKGS="build-essential pkg-config git ca-certificates file xz-utils cpio
libyaml-dev libjson-c-dev libcurl4-openssl-dev libgit2-dev libsodium-dev zlib1g-dev check
clang clang-format libclang-rt-14-dev musl-tools cmake curl autoconf automake libtool"
TEST_PKGS="python3 ruby ruby-rails ruby-sqlite3 bundler sqlite3 puma ruby-byebug
ruby-web-console ruby-pg nodejs npm postgresql postgresql-client procps iproute2 util-linux nftables
qemu-system-x86 busybox-static kmod lighttpd valgrind"

pkgs="$BUILD_PKGS"
[ "${SANDBOX_DEPS_MINIMAL:-0}" = 1 ] || pkgs="$pkgs $TEST_PKGS"
# make deb and tests/integration/test_packages.sh (lintian, a debootstrap root booted by nspawn)
[ "${SANDBOX_DEPS_MINIMAL:-0}" = 1 ] || pkgs="$pkgs lintian debootstrap systemd-container"

if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: run as root (apt-get needs it)" >&2
	exit 1
fi

missing=""
for p in $pkgs; do
	# node and npm may come from elsewhere on a developer machine; accept working commands.
	case $p in
	nodejs) command -v node >/dev/null 2>&1 && continue ;;
	npm) command -v npm >/dev/null 2>&1 && continue ;;
	esac
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
	echo "install-deps: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -q
	# shellcheck disable=SC2086
	apt-get install -y -q --no-install-recommends $missing
fi
echo "install-deps: all build and test dependencies present"
