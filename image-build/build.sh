#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# image-build/build.sh: the `sandbox-app-runtime` Incus image from Debian 12 (bookworm).
#
#   image-build/build.sh [--profile minimal|full] [--variant gpu] [--with-chromium]
#                        [--with-claude-code|--without-claude-code]
#                        [--deb FILE] [--mirror URL] [--no-cache] [--authorized-key FILE]...
#                        --out DIR
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
CLAUDE_CODE=
DEB=
OUT=
MIRROR=${SANDBOX_DEBIAN_MIRROR:-}
USE_CACHE=1
ROOTFS_DIR=1
AUTHORIZED_KEYS=()

die() {
	echo "image-build: $*" >&2
	exit 1
}
say() { echo "image-build: $*" >&2; }
usage() {
	sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

while [ $# -gt 0 ]; do
	case $1 in
	--profile) PROFILE=${2:?}; shift 2 ;;
	--variant) VARIANT=${2:?}; shift 2 ;;
	--with-chromium) CHROMIUM=1; shift ;;
	--with-claude-code) CLAUDE_CODE=1; shift ;;
	--without-claude-code) CLAUDE_CODE=0; shift ;;
	--deb) DEB=${2:?}; shift 2 ;;
	--mirror) MIRROR=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--no-cache) USE_CACHE=0; shift ;;
	--no-rootfs-dir) ROOTFS_DIR=0; shift ;;
	--authorized-key) AUTHORIZED_KEYS+=("${2:?}"); shift 2 ;;
	-h | --help) usage ;;
	*) echo "image-build: unknown argument '$1'" >&2; usage ;;
	esac
done
case $PROFILE in minimal | full) ;; *) die "--profile must be minimal or full" ;; esac
# The Claude Code CLI for sandbox-claude: in the full profile unless asked otherwise.
[ -n "$CLAUDE_CODE" ] || { [ "$PROFILE" = full ] && CLAUDE_CODE=1 || CLAUDE_CODE=0; }
case $VARIANT in default | gpu) ;; *) die "--variant must be gpu (or default)" ;; esac
[ -n "$OUT" ] || die "--out DIR is required"
[ "$(id -u)" = 0 ] || die "must run as root (debootstrap, chroot)"
# A host key baked into the image: one public key line (sandbox-ctl keygen's .pub) per file.
for k in "${AUTHORIZED_KEYS[@]}"; do
	[ -f "$k" ] || die "--authorized-key $k: no such file"
	[ "$(grep -cv '^\s*\(#\|$\)' "$k")" = 1 ] || die "--authorized-key $k: not one key line"
	case $(grep -v '^\s*\(#\|$\)' "$k" | cut -d' ' -f1) in
	sandbox-ed25519 | ssh-ed25519) ;;
	*) die "--authorized-key $k: not a public key (sandbox-ctl keygen writes one, KEY.pub)" ;;
	esac
done
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
		redis-server mariadb-server libmariadb-dev libvips42 build-essential pkg-config
		libyaml-dev zlib1g-dev libffi-dev curl python3 tzdata locales)
	;;
esac
# From the npm registry into the package layer: corepack is not in Debian's nodejs.
NPM_PKGS=()
[ "$PROFILE" = full ] && NPM_PKGS=(corepack@0.36.0)
[ "$VARIANT" = gpu ] && PKGS+=(libgl1-mesa-dri mesa-vulkan-drivers libegl1 vainfo pciutils)
[ "$CHROMIUM" = 1 ] && PKGS+=(chromium fonts-liberation)
NAME=sandbox-app-runtime
[ "$VARIANT" = default ] || NAME=$NAME-$VARIANT

CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/image
key=$(printf '%s\n' "$SUITE" "$MIRROR" "$PROFILE" "${BASE[@]}" -- "${PKGS[@]}" -- "${NPM_PKGS[@]}" |
	sha256sum | cut -c1-16)
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
	if [ ${#NPM_PKGS[@]} -gt 0 ]; then
		# By the build machine's npm, as it is set up to reach the registry (its CA, proxy):
		# the new root has neither. The packages are JavaScript, installed below its /usr/local.
		command -v npm >/dev/null || die "npm is needed on this machine for ${NPM_PKGS[*]}"
		say "npm install -g ${NPM_PKGS[*]} (into the new root's /usr/local)"
		npm install -g --prefix "$R/usr/local" --no-audit --no-fund "${NPM_PKGS[@]}" \
			>"$WORK/npm.log" 2>&1 ||
			{ tail -20 "$WORK/npm.log" >&2; die "npm install into the new root failed"; }
	fi
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
# Claude Code sessions run as `claude`, in the app user's group (docs/sessions.md); its home
# keeps a subscription login, so only it may enter. The platform calls /usr/local/bin/sandbox-claude.
if ! in_root getent passwd claude >/dev/null; then
	in_root useradd --user-group --create-home --shell /bin/bash -G sandbox claude
fi
# The package's sysusers.d makes the users without their homes: make them, each its owner's.
for u in sandbox claude; do
	home=$(in_root getent passwd "$u" | cut -d: -f6)
	[ -n "$home" ] && [ ! -d "$R$home" ] && mkdir -p "$R$home" && in_root chown "$u:$u" "$home"
done
chmod 0700 "$R/home/claude"
ln -sfn /usr/sbin/sandbox-agent "$R/usr/local/bin/sandbox-claude"
if [ "$CLAUDE_CODE" = 1 ]; then
	# The pinned CLI from the npm registry (tests/claude/install-cli.sh: cached by version on
	# this machine), where sandbox-claude looks for it: ~claude/.local/bin/claude.
	cli=$("$ROOT/tests/claude/install-cli.sh") || die "the Claude Code CLI could not be installed"
	cli_dir=$(cd "$(dirname "$cli")/../.." && pwd)
	cli_name=$(basename "$cli_dir")
	rm -rf "$R/home/claude/.local/lib/$cli_name"
	mkdir -p "$R/home/claude/.local/lib" "$R/home/claude/.local/bin"
	cp -a "$cli_dir" "$R/home/claude/.local/lib/$cli_name"
	ln -sfn "../lib/$cli_name/node_modules/.bin/claude" "$R/home/claude/.local/bin/claude"
	in_root chown -R claude:claude /home/claude/.local
	say "Claude Code CLI: $cli_name in ~claude/.local"
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
	# The database servers are installed stopped and disabled: the engine starts the one an
	# app's database.yml (or a spec's toolchain.services) asks for. PostgreSQL's cluster stays
	# startable by hand (pg_ctlcluster, also under systemd): "manual", not masked.
	for unit in postgresql.service redis-server.service mariadb.service; do
		in_root systemctl disable "$unit" >/dev/null 2>&1 || true
	done
	for conf in "$R"/etc/postgresql/*/*/start.conf; do
		[ -f "$conf" ] && echo manual >"$conf"
	done
	in_root sh -c 'command -v corepack >/dev/null && corepack enable' >/dev/null 2>&1 || true
fi

# Host keys: baked ones (--authorized-key), and the instance's own from its Incus configuration
# (user.sandbox-agent.authorized-keys) read at every start (sandbox-agent-incus-keys).
mkdir -p "$R/etc/sandbox-agent/authorized_keys.d"
for k in "${AUTHORIZED_KEYS[@]}"; do
	install -m 0644 "$k" "$R/etc/sandbox-agent/authorized_keys.d/image-$(basename "$k" .pub).pub"
done
install -D -m 0755 "$HERE/files/sandbox-agent-incus-keys" \
	"$R/usr/local/lib/sandbox-app-runtime/sandbox-agent-incus-keys"
install -m 0644 "$HERE/files/sandbox-agent-incus-keys.service" "$R/etc/systemd/system/"
mkdir -p "$R/etc/systemd/system/multi-user.target.wants"
ln -sf ../sandbox-agent-incus-keys.service \
	"$R/etc/systemd/system/multi-user.target.wants/sandbox-agent-incus-keys.service"

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
