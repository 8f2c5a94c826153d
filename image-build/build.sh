#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# image-build/build.sh: the `sandbox-app-runtime` Incus image from Debian 12 (bookworm).
#
#   image-build/build.sh [--profile minimal|full] [--variant gpu] [--with-chromium]
#                        [--deb FILE] [--mirror URL] [--no-cache] --out DIR
#
# Output: DIR/sandbox-app-runtime[-gpu]-<profile>-<version>-amd64.tar.gz, a unified Incus image
# (metadata.yaml, rootfs/, templates/) for `incus image import FILE --alias sandbox-app-runtime`,
# and DIR/rootfs/, the same root filesystem unpacked (for tests; --no-rootfs-dir drops it).
# Run as root. The host's /etc/apt is only read (for its mirror); packages are installed by
# debootstrap and by the new root's own apt inside a chroot. The root with the profile's
# packages is cached as a zstd tarball under ${SANDBOX_CACHE:-~/.cache/sandbox-app-runtime}/image/,
# keyed by a hash of the suite, mirror, profile and package list; what comes after (our .deb,
# the user, the layout) is redone on every build. See image-build/README.md.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
SUITE=bookworm
PROFILE=full
VARIANT=default
CHROMIUM=0
DEB=
OUT=
MIRROR=${SANDBOX_DEBIAN_MIRROR:-}
USE_CACHE=1
ROOTFS_DIR=1

die() {
	echo "image-build: $*" >&2
	exit 1
}
say() { echo "image-build: $*" >&2; }
usage() {
	sed -n '4,8p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--profile) PROFILE=${2:?}; shift 2 ;;
	--variant) VARIANT=${2:?}; shift 2 ;;
	--with-chromium) CHROMIUM=1; shift ;;
	--deb) DEB=${2:?}; shift 2 ;;
	--mirror) MIRROR=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--no-cache) USE_CACHE=0; shift ;;
	--no-rootfs-dir) ROOTFS_DIR=0; shift ;;
	-h | --help) usage ;;
	*) echo "image-build: unknown argument '$1'" >&2; usage ;;
	esac
done
case $PROFILE in minimal | full) ;; *) die "--profile must be minimal or full" ;; esac
case $VARIANT in default | gpu) ;; *) die "--variant must be gpu (or default)" ;; esac
[ -n "$OUT" ] || die "--out DIR is required"
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
for tool in debootstrap chroot tar sha256sum dpkg-deb zstd; do
	command -v "$tool" >/dev/null || die "$tool is missing"
done
[ "$(dpkg --print-architecture)" = amd64 ] || die "only amd64 (x86_64) images are built"

VERSION=$(sed -n 's/^VERSION *:\{0,1\}= *//p' "$ROOT/Makefile")
[ -n "$VERSION" ] || die "no VERSION in $ROOT/Makefile"
if [ -z "$DEB" ]; then
	DEB=$ROOT/build/deb/sandbox-agent_${VERSION}_amd64.deb
	[ -f "$DEB" ] || { say "make deb"; make -C "$ROOT" -s deb >&2; }
fi
[ -f "$DEB" ] || die "no guest package $DEB"
case $(dpkg-deb -f "$DEB" Package) in sandbox-agent) ;; *) die "$DEB is not the sandbox-agent package" ;; esac

# shellcheck disable=SC2016 # $(...) is apt's own field syntax here
MIRROR=${MIRROR:-$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
	awk -v s="$SUITE" '$2 == s { print $1; exit }')}
MIRROR=${MIRROR:-http://deb.debian.org/debian/}

# --- the package list ---------------------------------------------------------------------------
# debootstrap installs BASE (nothing here starts a service); the rest goes through the root's
# apt with a policy-rc.d that keeps services from starting.
BASE=(systemd systemd-sysv udev dbus ca-certificates iproute2 procps)
case $PROFILE in
minimal) PKGS=(python3) ;;
full)
	PKGS=(git ruby ruby-dev bundler rbenv nodejs npm sqlite3 libsqlite3-dev postgresql libpq-dev
		libvips42 build-essential pkg-config libyaml-dev zlib1g-dev libffi-dev curl python3
		tzdata locales)
	;;
esac
[ "$VARIANT" = gpu ] && PKGS+=(libgl1-mesa-dri mesa-vulkan-drivers libegl1 vainfo pciutils)
[ "$CHROMIUM" = 1 ] && PKGS+=(chromium fonts-liberation)
NAME=sandbox-app-runtime
[ "$VARIANT" = default ] || NAME=$NAME-$VARIANT

CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/image
key=$(printf '%s\n' "$SUITE" "$MIRROR" "$PROFILE" "${BASE[@]}" -- "${PKGS[@]}" | sha256sum | cut -c1-16)
cached=$CACHE/$SUITE-$PROFILE-$key.tar.zst

WORK=$(mktemp -d "${TMPDIR:-/var/tmp}/sandbox-image.XXXXXX")
R=$WORK/rootfs
MOUNTED=()
cleanup() {
	local i
	for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount -l "${MOUNTED[$i]}" 2>/dev/null || true; done
	rm -rf "$WORK"
}
trap cleanup EXIT
mount_proc() {
	mount -t proc proc "$R/proc"
	MOUNTED+=("$R/proc")
}
umount_all() {
	local i
	for ((i = ${#MOUNTED[@]} - 1; i >= 0; i--)); do umount "${MOUNTED[$i]}"; done
	MOUNTED=()
}
in_root() {
	chroot "$R" env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		LANG=C.UTF-8 HOME=/root DEBIAN_FRONTEND=noninteractive "$@"
}
# No service starts inside the chroot (invoke-rc.d asks policy-rc.d; 101 = not allowed).
policy_on() { printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d" && chmod 755 "$R/usr/sbin/policy-rc.d"; }
policy_off() { rm -f "$R/usr/sbin/policy-rc.d"; }

start=$(date +%s)
mkdir -p "$R"
if [ "$USE_CACHE" = 1 ] && [ -f "$cached" ]; then
	say "reusing the cached root $cached"
	tar -C "$R" --numeric-owner --xattrs --xattrs-include='*' -I zstd -xf "$cached"
else
	BASE_LIST=$(IFS=,; echo "${BASE[*]}")
	say "debootstrap --variant=minbase --include=$BASE_LIST $SUITE from $MIRROR"
	debootstrap --variant=minbase --include="$BASE_LIST" "$SUITE" "$R" "$MIRROR" \
		>"$WORK/debootstrap.log" 2>&1 || { tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed"; }
	# The root's own sources: the suite, its updates and security.
	security=http://deb.debian.org/debian-security
	cat >"$R/etc/apt/sources.list" <<-SOURCES
		deb $MIRROR $SUITE main
		deb $MIRROR $SUITE-updates main
		deb $security $SUITE-security main
	SOURCES
	policy_on
	mount_proc
	say "apt-get install ${PKGS[*]} (in the new root)"
	{ in_root apt-get update && in_root apt-get install -y --no-install-recommends "${PKGS[@]}"; } \
		>"$WORK/apt.log" 2>&1 || { tail -30 "$WORK/apt.log" >&2; die "apt-get install in the new root failed"; }
	in_root apt-get clean
	umount_all
	policy_off
	rm -rf "$R"/var/lib/apt/lists/*_Packages "$R"/var/lib/apt/lists/*_Translation-* "$R"/var/cache/apt/*.bin
	if [ "$USE_CACHE" = 1 ]; then
		mkdir -p "$CACHE"
		tar -C "$R" --numeric-owner --xattrs --xattrs-include='*' -I 'zstd -T0 -3' \
			-cf "$cached.tmp.$$" . &&
			mv "$cached.tmp.$$" "$cached"
		say "cached as $cached"
	fi
fi
say "packages ready after $(($(date +%s) - start)) s"

# --- our layer: redone every build ---------------------------------------------------------------
policy_on
mount_proc
cp "$DEB" "$R/root/sandbox-agent.deb"
in_root dpkg -i /root/sandbox-agent.deb >"$WORK/dpkg.log" 2>&1 ||
	{ cat "$WORK/dpkg.log" >&2; die "dpkg -i of $(basename "$DEB") failed"; }
rm -f "$R/root/sandbox-agent.deb"
[ -L "$R/etc/systemd/system/multi-user.target.wants/sandbox-agent.service" ] ||
	die "the package's unit is not enabled in the image"

# The run user the engine defaults to (uid 1000) and the shared download caches it owns.
if ! in_root getent passwd sandbox >/dev/null; then
	in_root useradd --uid 1000 --user-group --create-home --shell /bin/bash sandbox
fi
mkdir -p "$R/var/cache/sandbox-app-runtime"
in_root chown sandbox:sandbox /var/cache/sandbox-app-runtime
chmod 0755 "$R/var/cache/sandbox-app-runtime"
mkdir -p "$R/workspace"

if [ "$PROFILE" = full ]; then
	# Debian's ruby as an rbenv version, so a checkout's .ruby-version naming it selects it
	# (guest/toolchain.c looks in /usr/local/rbenv/versions/<version>).
	rv=$(in_root ruby -e 'print RUBY_VERSION')
	mkdir -p "$R/usr/local/rbenv/versions/$rv/bin"
	for b in ruby gem bundle bundler irb erb rake; do
		[ -e "$R/usr/bin/$b" ] && ln -sf "/usr/bin/$b" "$R/usr/local/rbenv/versions/$rv/bin/$b"
	done
	ln -sfn "$rv" "$R/usr/local/rbenv/versions/system-$rv"
	printf '%s\n' "$rv" >"$R/usr/local/rbenv/version"
	cat >"$R/etc/profile.d/rbenv.sh" <<-'PROFILE'
		export RBENV_ROOT=/usr/local/rbenv
		command -v rbenv >/dev/null && eval "$(rbenv init - sh)"
	PROFILE
	# PostgreSQL is installed stopped and disabled: the engine starts it when the app's
	# database.yml asks for it.
	in_root systemctl disable postgresql.service >/dev/null 2>&1 || true
	in_root systemctl mask postgresql@15-main.service >/dev/null 2>&1 || true
	in_root sh -c 'command -v corepack >/dev/null && corepack enable' >/dev/null 2>&1 || true
fi

# Each instance gets its own machine-id at first boot.
: >"$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id"
umount_all
policy_off

# --- the unified image: metadata.yaml, rootfs/, templates/ ---------------------------------------
created=$(date +%s)
variant_desc=$([ "$VARIANT" = gpu ] && echo "gpu variant" || echo "default variant")
cat >"$WORK/metadata.yaml" <<-META
	architecture: x86_64
	creation_date: $created
	properties:
	  os: debian
	  release: bookworm 12
	  variant: $VARIANT
	  name: $NAME
	  description: "$NAME $VERSION ($variant_desc, $PROFILE profile) on Debian 12 bookworm"
	  sandbox_app_runtime.version: "$VERSION"
	  sandbox_app_runtime.profile: $PROFILE
	templates:
	  /etc/hostname:
	    when:
	      - create
	      - copy
	    template: hostname.tpl
META
mkdir -p "$WORK/templates"
cp "$HERE/templates/hostname.tpl" "$WORK/templates/"
mkdir -p "$OUT"
image=$OUT/$NAME-$PROFILE-$VERSION-amd64.tar.gz
say "writing $image"
tar -C "$WORK" --numeric-owner --xattrs --xattrs-include='*' -czf "$image.tmp" \
	metadata.yaml templates rootfs
mv "$image.tmp" "$image"
if [ "$ROOTFS_DIR" = 1 ]; then
	rm -rf "$OUT/rootfs"
	mv "$R" "$OUT/rootfs"
fi
say "done in $(($(date +%s) - start)) s: $image ($(du -h "$image" | cut -f1))"
echo "$image"
