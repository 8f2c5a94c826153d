#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The kernel of the test VM: Debian's own amd64 kernel package, unpacked with dpkg -x (nothing is
# installed), reduced to the ELF vmlinux (booted through PVH, about twice as fast as the bzImage)
# and the few modules the guest loads. Cached under
#   ${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/vm-kernel/<package version>/
#     vmlinux  modules/<name>.ko  release  package
# and printed on stdout (the cache directory, one line). Progress goes to stderr.
#
# The package is the one linux-image-amd64 depends on now. When it cannot be fetched, the
# package list is refreshed once (as root; VM_KERNEL_NO_UPDATE=1 skips that); failing that
# too (offline), the newest kernel already in the cache is used.
# VM_KERNEL_DEB=FILE uses that .deb instead of downloading one.
set -euo pipefail

CACHE=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/vm-kernel
# Loaded in this order by the guest's /init (tests/vm/init); the order follows their depends
# (modinfo -F depends): 9p needs 9pnet, fscache and netfs; 9pnet_virtio needs virtio and 9pnet.
# The 9p ones mount the host's read-only shares (run-vm.sh) for the session test.
MODULES="virtio_ring virtio virtio_pci_legacy_dev virtio_pci_modern_dev virtio_pci virtio_console
virtio-rng vsock vmw_vsock_virtio_transport_common vsock_loopback netfs fscache 9pnet
9pnet_virtio 9p"
MODULES_ORDER=$(echo "$MODULES" | tr '\n' ' ' | sed 's/ *$//')

say() { echo "build-kernel: $*" >&2; }
die() {
	say "$*"
	exit 1
}

# The name and version of the kernel package, "NAME VERSION", or nothing.
current_package() {
	local name version
	name=$(apt-cache depends linux-image-amd64 2>/dev/null |
		sed -n 's/^ *Depends: \(linux-image-[0-9].*-amd64\)$/\1/p' | head -n 1)
	[ -n "$name" ] || return 0
	version=$(apt-cache policy "$name" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	[ -n "$version" ] && [ "$version" != "(none)" ] && echo "$name $version"
	return 0
}

# cached DIR "NAME VERSION": DIR holds that package's kernel with this module list (a kernel
# cached with another list is unpacked again).
cached() {
	[ -s "$1/vmlinux" ] && [ "$(cat "$1/package" 2>/dev/null)" = "$2" ] &&
		[ "$(cat "$1/modules/order" 2>/dev/null)" = "$MODULES_ORDER" ]
}

newest_cached() {
	local d
	d=$(find "$CACHE" -mindepth 2 -maxdepth 2 -name vmlinux 2>/dev/null | sort -V | tail -n 1) || true
	[ -n "$d" ] && dirname "$d"
	return 0
}

# The ELF vmlinux is the xz stream inside vmlinuz: find its magic (FD 37 7A 58 5A 00) and
# decompress from there. xz stops with "unexpected end"/"trailing garbage" complaints at the
# end of the stream; what it wrote before is the whole kernel, checked below.
extract_vmlinux() {
	local vmlinuz=$1 out=$2 off
	off=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$vmlinuz" | head -n 1 | cut -d: -f1) || true
	[ -n "$off" ] || die "no xz stream in $vmlinuz"
	tail -c +$((off + 1)) "$vmlinuz" | xz -dc 2>/dev/null >"$out" || true
	[ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] ||
		die "what $vmlinuz holds at byte $off is not an ELF kernel"
}

build() {
	local name=$1 version=$2 dest=$3 tmp deb mod f release
	tmp=$(mktemp -d "$CACHE/.build.XXXXXX")
	# shellcheck disable=SC2064
	trap "rm -rf '$tmp'" EXIT
	if [ -n "${VM_KERNEL_DEB:-}" ]; then
		deb=$VM_KERNEL_DEB
	else
		say "downloading $name $version"
		(cd "$tmp" && apt-get download -q "$name=$version" >/dev/null 2>"$tmp/apt.log") || {
			cat "$tmp/apt.log" >&2
			die "apt-get download $name=$version failed"
		}
		deb=$(ls "$tmp"/*.deb)
	fi
	say "unpacking $(basename "$deb")"
	dpkg -x "$deb" "$tmp/x"
	release=$(ls "$tmp/x/lib/modules")
	mkdir -p "$tmp/out/modules"
	extract_vmlinux "$tmp/x/boot/vmlinuz-$release" "$tmp/out/vmlinux"
	for mod in $MODULES; do
		f=$(find "$tmp/x/lib/modules/$release" -name "$mod.ko" -o -name "$mod.ko.xz" | head -n 1)
		[ -n "$f" ] || die "module $mod is not in $name"
		case $f in
		*.xz) xz -dc "$f" >"$tmp/out/modules/$mod.ko" ;;
		*) cp "$f" "$tmp/out/modules/$mod.ko" ;;
		esac
	done
	echo "$MODULES_ORDER" >"$tmp/out/modules/order"
	echo "$release" >"$tmp/out/release"
	echo "$name $version" >"$tmp/out/package"
	rm -rf "$dest"
	mv "$tmp/out" "$dest"
	rm -rf "$tmp"
	trap - EXIT
	say "cached $name $version in $dest ($(du -sh "$dest" | cut -f1))"
}

mkdir -p "$CACHE"
if [ -n "${VM_KERNEL_DEB:-}" ]; then
	pkg="$(dpkg-deb -f "$VM_KERNEL_DEB" Package) $(dpkg-deb -f "$VM_KERNEL_DEB" Version)"
else
	pkg=$(current_package)
fi
if [ -n "$pkg" ]; then
	read -r name version <<<"$pkg"
	dir=$CACHE/$version
	if cached "$dir" "$name $version"; then
		echo "$dir"
		exit 0
	fi
	# The download fails when the package list is older than the archive (the version is gone)
	# or absent; as root, refresh it once and ask again.
	if (build "$name" "$version" "$dir"); then
		echo "$dir"
		exit 0
	fi
fi
if [ -z "${VM_KERNEL_DEB:-}" ] && [ "$(id -u)" -eq 0 ] && [ "${VM_KERNEL_NO_UPDATE:-0}" != 1 ]; then
	say "refreshing the package list (apt-get update)"
	if apt-get update -q >/dev/null 2>&1 && pkg=$(current_package) && [ -n "$pkg" ]; then
		read -r name version <<<"$pkg"
		dir=$CACHE/$version
		if cached "$dir" "$name $version" || (build "$name" "$version" "$dir"); then
			echo "$dir"
			exit 0
		fi
	fi
fi
dir=$(newest_cached)
[ -n "$dir" ] || die "no kernel package could be fetched and none is cached in $CACHE"
say "using the cached $(cat "$dir/package")"
echo "$dir"
