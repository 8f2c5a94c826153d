#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Turns a staged install tree into a binary package with dpkg's own tools (no debhelper):
#   packaging/debian/mkdeb.sh PACKAGE STAGE OUTDIR [BUILT_USING]
# STAGE is what `make install-guest|install-host DESTDIR=STAGE PREFIX=/usr` left; this script
# adds what Debian policy asks of a binary package, the way debhelper would:
#   - ELF files stripped like dh_strip (--strip-unneeded, no .comment/.note)
#   - man pages gzip -9n; /usr/share/doc/PACKAGE/{copyright,changelog.gz}
#   - the lintian overrides, maintainer scripts and conffiles from packaging/debian/PACKAGE.*
#   - Depends from dpkg-shlibdeps (nothing for a static binary), the control file from
#     dpkg-gencontrol (packaging/debian/control + changelog), DEBIAN/md5sums
#   - owner root, modes 0755/0644, every mtime set to the changelog's date (reproducible)
# and builds OUTDIR/PACKAGE_VERSION_ARCH.deb with dpkg-deb. Prints the path of the .deb.
# BUILT_USING: the Built-Using value for statically linked code from other source packages.
set -euo pipefail

pkg=$1 stage=$2 out=$3 built_using=${4:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
stage=$(cd "$stage" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)

die() {
	echo "mkdeb: $pkg: $*" >&2
	exit 1
}
[ -d "$stage" ] || die "no staged tree at $stage"
grep -q "^Package: $pkg\$" "$here/control" || die "not a package of packaging/debian/control"

epoch=$(dpkg-parsechangelog -l "$here/changelog" -S Timestamp)

# Strip every ELF file (a no-op on an already stripped one).
while IFS= read -r -d '' f; do
	if [ "$(head -c 4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
		strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f"
	fi
done < <(find "$stage" -type f -print0)

# Man pages compressed, as policy 12.1 wants.
if [ -d "$stage/usr/share/man" ]; then
	find "$stage/usr/share/man" -type f ! -name '*.gz' -exec gzip -9n {} +
fi

doc=$stage/usr/share/doc/$pkg
install -d -m 0755 "$doc"
install -m 0644 "$here/$pkg.copyright" "$doc/copyright"
# A native package's changelog is changelog.gz (policy 12.7).
gzip -9nc "$here/changelog" >"$doc/changelog.gz"
if [ -e "$here/$pkg.lintian-overrides" ]; then
	install -d -m 0755 "$stage/usr/share/lintian/overrides"
	install -m 0644 "$here/$pkg.lintian-overrides" "$stage/usr/share/lintian/overrides/$pkg"
fi

rm -rf "$stage/DEBIAN"
install -d -m 0755 "$stage/DEBIAN"
for s in postinst prerm postrm preinst; do
	[ -e "$here/$pkg.$s" ] && install -m 0755 "$here/$pkg.$s" "$stage/DEBIAN/$s"
done
if [ -e "$here/$pkg.conffiles" ]; then
	while read -r c; do
		[ -f "$stage$c" ] || die "conffile $c is not in the package"
	done <"$here/$pkg.conffiles"
	install -m 0644 "$here/$pkg.conffiles" "$stage/DEBIAN/conffiles"
fi

# dpkg-shlibdeps and dpkg-gencontrol read ./debian/control: work in a scratch directory.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/debian"
cp "$here/control" "$here/changelog" "$work/debian/"
subst=$work/debian/substvars
# Both empty unless filled below (a static binary has no shared library dependencies).
echo "shlibs:Depends=" >"$subst"
mapfile -d '' elfs < <(find "$stage" -type f -perm /111 -print0)
dyn=()
for f in "${elfs[@]}"; do
	# Only dynamically linked ELF files have dependencies (a static one has no PT_INTERP).
	if readelf -l "$f" 2>/dev/null | grep -q 'INTERP'; then
		dyn+=("$f")
	fi
done
if [ ${#dyn[@]} -gt 0 ]; then
	# (Its warning that binaries "should already be installed" in debian/PACKAGE is noise:
	# the staged tree is elsewhere.)
	if ! (cd "$work" && dpkg-shlibdeps -T"$subst" -e "${dyn[@]}") 2>"$work/shlibdeps.log"; then
		cat "$work/shlibdeps.log" >&2
		die "dpkg-shlibdeps failed"
	fi
	grep -v 'binaries to analyze should already be installed' "$work/shlibdeps.log" >&2 || true
fi
echo "static:Built-Using=$built_using" >>"$subst"

# Modes and owners as a package wants them; the .deb's owners come from --root-owner-group.
find "$stage" -type d -exec chmod 0755 {} +
find "$stage" -type f ! -perm /111 -exec chmod 0644 {} +
find "$stage" -type f -perm /111 -exec chmod 0755 {} +

(cd "$work" && dpkg-gencontrol -p"$pkg" -P"$stage" -T"$subst" -f"$work/files")
# dpkg-gencontrol leaves empty fields out, except an empty Depends when every binary is static.
sed -i -e '/^Depends: *$/d' -e '/^Built-Using: *$/d' "$stage/DEBIAN/control"

(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z |
	xargs -0r md5sum) >"$stage/DEBIAN/md5sums"
chmod 0644 "$stage/DEBIAN/md5sums" "$stage/DEBIAN/control"

find "$stage" -exec touch -h -d "@$epoch" {} +
version=$(sed -n 's/^Version: //p' "$stage/DEBIAN/control")
arch=$(sed -n 's/^Architecture: //p' "$stage/DEBIAN/control")
deb=$out/${pkg}_${version}_${arch}.deb
SOURCE_DATE_EPOCH=$epoch dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >/dev/null
echo "$deb"
