# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash
# The minimal image for a test, built and cached exactly as tests/integration/test_incus.sh
# does: sourced (after tests/integration/lib.sh), never run.
#
#   incus_image_minimal   sets IMAGE to the minimal image's unified tarball under
#                         ${SANDBOX_CACHE:-~/.cache/sandbox-app-runtime}/incus-image/, keyed by the
#                         guest package, image-build/ and the cached package layer; builds it with
#                         `make image IMAGE_PROFILE=minimal` when it is missing (the two most
#                         recently used are kept). Returns 1 (after printing the log) on failure.

incus_image_minimal() {
	local version cache key
	version=$(sed -n 's/^VERSION *:\{0,1\}= *//p' "$ROOT/Makefile")
	if ! make -C "$ROOT" -s deb >"$TMP/deb.log" 2>&1; then
		tail -30 "$TMP/deb.log"
		return 1
	fi
	cache=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}
	key=$({
		sha256sum <"$ROOT/build/deb/sandbox-agent_${version}_$(dpkg --print-architecture).deb"
		cat "$ROOT"/image-build/build.sh "$ROOT"/image-build/templates/* "$ROOT"/image-build/files/* | sha256sum
		stat -c '%n %s %Y' "$cache"/image/bookworm-minimal-*.tar.zst 2>/dev/null
	} | sha256sum | cut -c1-16)
	IMAGE=$cache/incus-image/sandbox-app-runtime-minimal-$version-$key.tar.gz
	if [ -s "$IMAGE" ]; then
		touch "$IMAGE"
		return 0
	fi
	if ! make -C "$ROOT" -s image IMAGE_PROFILE=minimal IMAGE_OUT="$TMP/image" \
		IMAGE_ARGS=--no-rootfs-dir >"$TMP/image.log" 2>&1; then
		tail -30 "$TMP/image.log"
		return 1
	fi
	mkdir -p "$cache/incus-image"
	mv "$TMP/image/sandbox-app-runtime-minimal-$version-amd64.tar.gz" "$IMAGE.tmp.$$" &&
		mv "$IMAGE.tmp.$$" "$IMAGE" || return 1
	find "$cache/incus-image" -maxdepth 1 -name 'sandbox-app-runtime-minimal-*.tar.gz' -printf '%T@ %p\n' |
		sort -rn | tail -n +3 | cut -d' ' -f2- | xargs -r rm -f
}
