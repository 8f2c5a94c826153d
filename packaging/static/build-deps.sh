#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds the static dependencies of the guest and host binaries with musl-gcc from Debian's
# source packages (bookworm; libsodium from forky), with only the features we use, and prints the
# install prefix.
# Also musl's libc.a, from the source of the musl-dev version the machine has (part of the key),
# built the way musl builds itself by default (-Os; -O3 for malloc, string and internal code)
# instead of Debian's -O2.
#
#   packaging/static/build-deps.sh            ensure the set is built; prefix on stdout
#   packaging/static/build-deps.sh --key      print the cache key only
#   packaging/static/build-deps.sh --refresh  re-read the archive's source index first
#
# Cache: ${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/static-deps/
#   apt/          private apt state (sources, lists, archives); /etc/apt is only read
#   versions      the source versions picked at the last index refresh
#   <key>/        one finished prefix: include/ kernel-include/ lib/ KEY-INFO build.log
#   tmp.*/        a build in progress (renamed to <key>/ when complete)
# Key: <sources>-<script>, two 12-hex sha256 prefixes: the first over the source package
# versions plus the toolchain (gcc, musl-dev, linux-libc-dev versions), the second over this file.
#
# Environment: SANDBOX_CACHE, SANDBOX_STATIC_REFRESH_DAYS (default 7: how old the source index
# may get before it is re-read; 0 re-reads it every run), SANDBOX_STATIC_KEEP (default 3: built
# sets kept, least recently used go first), SANDBOX_STATIC_JOBS (default: nproc),
# SANDBOX_STATIC_APT_URI (default: the URI this machine's apt uses for bookworm), MUSL_CC,
# SANDBOX_STATIC_SYSTEM_LIBC=1 (build with the system's libc.a when the archive has no source
# of the installed musl-dev; without it that is an error: the agent would be 37 KB larger).
# Needs: musl-tools cmake make autoconf automake libtool dpkg-dev (apt-get source) xz-utils.
#
# Prefix: include/ kernel-include/ lib/ (the libraries' archives) lib/musl/libc.a (link with
# -L PREFIX/lib/musl so it is found before musl-gcc's own) KEY-INFO build.log
set -euo pipefail

SUITE=bookworm
PACKAGES=(zlib mbedtls http-parser libyaml json-c libsodium curl libgit2)
# Packages taken from a newer suite than $SUITE, with the reason in packaging/static/README.md:
# libsodium has AEGIS-256, the channel's fastest cipher, since 1.0.19. CHECKED is the upstream
# version this script's trimming was read against; another one is built with a warning, and
# the trimming's own checks (libsodium's picks below) fail if it no longer fits.
declare -A NEWER=([libsodium]=forky)
declare -A CHECKED=([libsodium]=1.0.22)
CA_BUNDLE=/etc/ssl/certs/ca-certificates.crt

CACHE_ROOT=${SANDBOX_CACHE:-$HOME/.cache/sandbox-app-runtime}/static-deps
REFRESH_DAYS=${SANDBOX_STATIC_REFRESH_DAYS:-7}
KEEP=${SANDBOX_STATIC_KEEP:-3}
JOBS=${SANDBOX_STATIC_JOBS:-$(nproc)}
MUSL_CC=${MUSL_CC:-musl-gcc}
SCRIPT=$(readlink -f "${BASH_SOURCE[0]}")

mode=build
force_refresh=0
for arg in "$@"; do
	case $arg in
	--key) mode=key ;;
	--refresh) force_refresh=1 ;;
	-h | --help)
		awk 'NR > 2 && /^#/ { sub(/^# ?/, ""); print; next } NR > 2 { exit }' "$SCRIPT"
		exit 0
		;;
	*)
		echo "build-deps.sh: unknown argument '$arg' (try --help)" >&2
		exit 2
		;;
	esac
done

say() { echo "static-deps: $*" >&2; }
die() {
	say "$*"
	exit 1
}

APT_DIR=$CACHE_ROOT/apt
APT_OPTS=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$APT_DIR/sources"
	-o "Dir::State::Lists=$APT_DIR/lists" -o "Dir::Cache=$APT_DIR/cache"
	-o Dir::Etc::Preferences=/dev/null -o "Dir::Etc::PreferencesParts=$APT_DIR/sources"
	-o APT::Sandbox::User=root -o Acquire::Languages=none -q)

# The toolchain is part of the key: a new gcc, musl or kernel header set rebuilds everything.
toolchain_id() {
	echo "gcc $(${REALGCC:-gcc} -dumpfullversion)"
	dpkg-query -W -f '${Package} ${Version}\n' musl-dev linux-libc-dev 2>/dev/null || true
}

# Private sources list: deb-src for the suite, its -updates and the suites of NEWER, from the
# mirror the machine's own apt uses (which must carry them). Nothing under /etc/apt is written.
apt_setup() {
	local uri=${SANDBOX_STATIC_APT_URI:-}
	if [ -z "$uri" ]; then
		# shellcheck disable=SC2016 # $(...) is apt's own field syntax here
		uri=$(apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 2>/dev/null |
			awk -v s="$SUITE" '$2 == s { print $1; exit }')
	fi
	[ -n "$uri" ] || die "no apt source for '$SUITE' on this machine; set SANDBOX_STATIC_APT_URI"
	mkdir -p "$APT_DIR/sources" "$APT_DIR/lists/partial" "$APT_DIR/cache/archives/partial"
	cat >"$APT_DIR/sources/static-deps.sources.new" <<-EOF
		Types: deb-src
		URIs: $uri
		Suites: $SUITE $SUITE-updates $(printf '%s\n' "${NEWER[@]}" | sort -u | tr '\n' ' ')
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOF
	mv "$APT_DIR/sources/static-deps.sources.new" "$APT_DIR/sources/static-deps.sources"
}

# Re-read the source index and record the version of each package in the suite itself
# (pkg/bookworm: the security pocket's sources are not all downloadable; pkg/forky for NEWER).
versions_refresh() {
	local out p
	local -a wanted=()
	for p in "${PACKAGES[@]}"; do
		wanted+=("$p/${NEWER[$p]:-$SUITE}")
	done
	apt_setup
	say "reading the $SUITE source index"
	apt-get "${APT_OPTS[@]}" update >"$APT_DIR/update.log" 2>&1 ||
		{
			cat "$APT_DIR/update.log" >&2
			return 1
		}
	out=$(apt-get "${APT_OPTS[@]}" source --print-uris "${wanted[@]}" 2>&1) ||
		{
			echo "$out" >&2
			return 1
		}
	echo "$out" | sed -n "s/^Selected version '\([^']*\)' ([a-z-]*) for \(.*\)\$/\2 \1/p" |
		sort >"$CACHE_ROOT/versions.new"
	[ "$(wc -l <"$CACHE_ROOT/versions.new")" -eq ${#PACKAGES[@]} ] || {
		echo "$out" >&2
		return 1
	}
	for p in "${!CHECKED[@]}"; do
		grep -q "^$p ${CHECKED[$p]}-" "$CACHE_ROOT/versions.new" ||
			say "warning: $(grep "^$p " "$CACHE_ROOT/versions.new") is not the checked" \
				"upstream ${CHECKED[$p]}: review its trimming in this script"
	done
	mv "$CACHE_ROOT/versions.new" "$CACHE_ROOT/versions"
}

versions_fresh() {
	[ "$REFRESH_DAYS" -gt 0 ] && [ -s "$CACHE_ROOT/versions" ] &&
		[ -z "$(find "$CACHE_ROOT/versions" -mtime "+$((REFRESH_DAYS - 1))" 2>/dev/null)" ]
}

cache_key() {
	local src scr
	src=$({
		cat "$CACHE_ROOT/versions"
		toolchain_id
	} | sha256sum | cut -c1-12)
	scr=$(sha256sum <"$SCRIPT" | cut -c1-12)
	echo "$src-$scr"
}

mkdir -p "$CACHE_ROOT"
command -v "$MUSL_CC" >/dev/null || die "$MUSL_CC not found: apt-get install musl-tools"

# Fast path: a fresh version list and a finished prefix for its key. No lock, no network.
if [ $force_refresh -eq 0 ] && versions_fresh; then
	key=$(cache_key)
	if [ $mode = key ]; then
		echo "$key"
		exit 0
	fi
	if [ -f "$CACHE_ROOT/$key/KEY-INFO" ]; then
		touch "$CACHE_ROOT/$key" # its mtime is its last use
		echo "$CACHE_ROOT/$key"
		exit 0
	fi
fi

exec 9>"$CACHE_ROOT/.lock"
flock 9

# Refresh the index when asked, when stale, and before every build (the archive keeps only the
# current version of each package, so an old list can name files that are gone).
if [ $force_refresh -eq 1 ] || ! versions_fresh || [ $mode = build ]; then
	if ! versions_refresh; then
		[ -s "$CACHE_ROOT/versions" ] || die "cannot read the source index (see above)"
		say "cannot refresh the source index; using the versions read before"
	fi
fi
key=$(cache_key)
if [ $mode = key ]; then
	echo "$key"
	exit 0
fi
FINAL=$CACHE_ROOT/$key
if [ -f "$FINAL/KEY-INFO" ]; then
	touch "$FINAL"
	echo "$FINAL"
	exit 0
fi

# Cold build. We hold the lock, so any tmp.* left over is from a build that died.
rm -rf "$CACHE_ROOT"/tmp.*
TMP=$(mktemp -d "$CACHE_ROOT/tmp.XXXXXX")
LOG=$TMP/build.log
SRC=$TMP/src
STAGE=$TMP/dest$FINAL # installed with DESTDIR=$TMP/dest, renamed to $FINAL at the end
mkdir -p "$SRC" "$STAGE/include" "$STAGE/lib"
start=$(date +%s)

on_exit() {
	local rc=$?
	[ $rc -eq 0 ] && return
	say "FAILED while $step; last lines of $LOG:"
	tail -n 40 "$LOG" >&2
	say "full log: $LOG (the build tree is kept until the next build)"
	exit $rc
}
trap on_exit EXIT
step="starting"

# Each step logs to the same file; only one line per package reaches the terminal.
run() { "$@" >>"$LOG" 2>&1; }
timings=()
step_start=$start
step_name=""
lap() { # close the timing of the current step
	[ -n "$step_name" ] && timings+=("$step_name $(($(date +%s) - step_start)) s")
	step_start=$(date +%s)
	step_name=${1:-}
}
begin() {
	lap "$1"
	step="building $1"
	say "$step"
	echo "===== $1 =====" >>"$LOG"
}

CFLAGS_DEPS="-Os -ffunction-sections -fdata-sections -fno-asynchronous-unwind-tables"
CFLAGS_DEPS+=" -fstack-protector-strong -fno-pie"
# -Oz (smaller than -Os, slower) for the libraries that are not crypto or compression: libgit2
# (its SHA-1 collision detection too; its zlib is the one above), libyaml, json-c, http-parser,
# and curl (its configure does not know -Oz and would add -O2: given -Os, then -Oz in its
# lib/Makefile).
CFLAGS_SMALL=${CFLAGS_DEPS/-Os/-Oz}
CMAKE_SMALL=(-DCMAKE_C_FLAGS_MINSIZEREL="-Oz -DNDEBUG")
LDFLAGS_DEPS="-no-pie" # configure and cmake link test programs; gcc defaults to PIE here
CMAKE_COMMON=(-DCMAKE_C_COMPILER="$MUSL_CC" -DCMAKE_BUILD_TYPE=MinSizeRel
	-DCMAKE_C_FLAGS="$CFLAGS_DEPS" -DCMAKE_EXE_LINKER_FLAGS="$LDFLAGS_DEPS"
	-DCMAKE_INSTALL_PREFIX="$FINAL" -DCMAKE_INSTALL_LIBDIR=lib
	-DBUILD_SHARED_LIBS=OFF -DBUILD_TESTING=OFF
	-DCMAKE_FIND_ROOT_PATH="$TMP/dest" -DCMAKE_FIND_ROOT_PATH_MODE_LIBRARY=ONLY
	-DCMAKE_FIND_ROOT_PATH_MODE_INCLUDE=ONLY -DCMAKE_FIND_ROOT_PATH_MODE_PACKAGE=ONLY
	-DCMAKE_PREFIX_PATH="$FINAL")

cmake_build() { # srcdir [cmake options...]: configure, build, install into the stage
	local dir=$1
	shift
	run cmake -S "$dir" -B "$dir/_build" "${CMAKE_COMMON[@]}" "$@"
	run cmake --build "$dir/_build" -j "$JOBS"
	run env DESTDIR="$TMP/dest" cmake --install "$dir/_build"
}

step="fetching sources"
lap fetch
say "fetching ${#PACKAGES[@]} source packages into $TMP"
mapfile -t pins < <(awk '{ print $1 "=" $2 }' "$CACHE_ROOT/versions")
(cd "$SRC" && run apt-get "${APT_OPTS[@]}" source "${pins[@]}")
# musl: the version of the installed musl-dev (its headers and start files are the ones used),
# not the suite's; a version the archive no longer has leaves the system libc.a in use.
musl_dev=$(dpkg-query -W -f '${Version}' musl-dev 2>/dev/null || true)
musl_src=no
if [ -n "$musl_dev" ] && (cd "$SRC" && run apt-get "${APT_OPTS[@]}" source "musl=$musl_dev"); then
	musl_src=$musl_dev
fi
srcdir() { # the unpacked tree of a source package
	local d
	d=$(find "$SRC" -mindepth 1 -maxdepth 1 -type d -name "$1-[0-9]*" | head -n 1)
	[ -n "$d" ] || {
		echo "no unpacked tree for $1" >>"$LOG"
		return 1
	}
	echo "$d"
}

# Kernel headers: musl-gcc searches only musl's own include directory, so copy the uapi headers
# the guest needs (linux/, asm/, asm-generic/) into the prefix; compile with -isystem on it.
step="copying kernel headers"
multiarch=$(gcc -print-multiarch)
mkdir -p "$STAGE/kernel-include"
cp -a /usr/include/linux /usr/include/asm-generic "$STAGE/kernel-include/"
cp -a "/usr/include/$multiarch/asm" "$STAGE/kernel-include/asm"

# musl's libc.a. Debian builds it with -O2 (its build flags); musl's own default is -Os with -O3
# for malloc, the string functions and internal helpers: 37 KB less in sandbox-agent. The fts
# functions Debian adds to its libc.a (and their header, to build them) are added too.
begin musl
if [ "$musl_src" != no ]; then
	d=$(srcdir musl)
	mkdir -p "$d/src/fts" "$STAGE/lib/musl"
	cp "$d/debian/musl-fts/fts.c" "$d/debian/musl-fts/config.h" "$d/src/fts/"
	cp "$d/debian/musl-fts/fts.h" "$d/include/"
	(cd "$d" && run env CC="${REALGCC:-gcc}" CFLAGS="-fstack-protector-strong" \
		./configure --disable-shared --prefix=/usr)
	grep -q '^CFLAGS_AUTO = -Os ' "$d/config.mak" # musl's defaults, not "provided CFLAGS"
	grep -q '^OPTIMIZE_GLOBS = internal/\*\.c malloc/\*\.c string/\*\.c$' "$d/config.mak"
	run make -C "$d" -j "$JOBS" lib/libc.a
	cp "$d/lib/libc.a" "$STAGE/lib/musl/libc.a"
	musl_libc="built from the source of musl $musl_src"
elif [ "${SANDBOX_STATIC_SYSTEM_LIBC:-}" = 1 ]; then
	musl_libc="the system's: no source of musl-dev ${musl_dev:-(not installed)} in the archive"
	say "no musl source for musl-dev ${musl_dev:-(not installed)}: the system's libc.a stays in use"
else
	die "the archive has no source of musl ${musl_dev:-(musl-dev is not installed)}, the" \
		"installed musl-dev, to build libc.a from: install the bookworm musl-dev" \
		"(apt-get install musl-dev/bookworm), or set SANDBOX_STATIC_SYSTEM_LIBC=1 to link" \
		"the system's libc.a (37 KB larger)"
fi

begin zlib
d=$(srcdir zlib)
# DYNAMIC_CRC_TABLE: the CRC-32 tables (8 KB) are computed on first use into .bss instead of
# being stored in the binary (zlib makes that thread-safe with C11 atomics).
(cd "$d" && run env CC="$MUSL_CC" CFLAGS="$CFLAGS_DEPS -DDYNAMIC_CRC_TABLE" \
	LDFLAGS="$LDFLAGS_DEPS" ./configure --static --prefix="$FINAL")
run make -C "$d" -j "$JOBS" libz.a
run make -C "$d" install DESTDIR="$TMP/dest"

begin mbedtls
d=$(srcdir mbedtls)
# As Debian's own build: thread-safe RNG and contexts (libgit2 and curl may run on threads).
for opt in MBEDTLS_THREADING_C MBEDTLS_THREADING_PTHREAD; do
	sed -i "s|^//#define $opt\$|#define $opt|" "$d/include/mbedtls/config.h"
	grep -q "^#define $opt\$" "$d/include/mbedtls/config.h"
done
# mbedTLS 2.28 calls getrandom(2) only under glibc and otherwise reads /dev/urandom, which an
# early or minimal guest may not have: use the syscall with musl too.
sed -i 's/^#if ((defined(__linux__) \&\& defined(__GLIBC__)) || defined(__midipix__))$/#if defined(__linux__) || defined(__midipix__)/' \
	"$d/library/entropy_poll.c"
grep -q '^#if defined(__linux__) || defined(__midipix__)$' "$d/library/entropy_poll.c"
# Trimmed to what curl and libgit2 need as a TLS 1.2 client verifying a server against a CA
# bundle (mbedTLS 2.28 has no TLS 1.3): ECDHE-ECDSA and ECDHE-RSA key exchange over P-256/384/
# 521 and X25519, AES-GCM, SHA-1/224/256/384/512, RSA (PKCS#1 v1.5, PSS) and ECDSA signatures,
# PEM and DER certificates and keys, the error texts. Everything below is off (a line
# `#define OPT` in config.h becomes `//#define OPT`, checked); packaging/static/README.md says why.
mbedtls_off=(
	# no server, no DTLS, no TLS 1.0/1.1, no renegotiation (curl turns session tickets off)
	MBEDTLS_SSL_SRV_C MBEDTLS_SSL_CACHE_C MBEDTLS_SSL_TICKET_C MBEDTLS_SSL_COOKIE_C
	MBEDTLS_SSL_PROTO_DTLS MBEDTLS_SSL_DTLS_ANTI_REPLAY MBEDTLS_SSL_DTLS_HELLO_VERIFY
	MBEDTLS_SSL_DTLS_CLIENT_PORT_REUSE MBEDTLS_SSL_DTLS_BADMAC_LIMIT MBEDTLS_TIMING_C
	MBEDTLS_SSL_PROTO_TLS1 MBEDTLS_SSL_PROTO_TLS1_1 MBEDTLS_SSL_CBC_RECORD_SPLITTING
	MBEDTLS_SSL_RENEGOTIATION MBEDTLS_SSL_SESSION_TICKETS MBEDTLS_SSL_TRUNCATED_HMAC
	MBEDTLS_SSL_CONTEXT_SERIALIZATION MBEDTLS_SSL_RECORD_CHECKING MBEDTLS_SSL_EXPORT_KEYS
	MBEDTLS_SSL_ENCRYPT_THEN_MAC MBEDTLS_SSL_MAX_FRAGMENT_LENGTH
	# key exchanges: ECDHE only (no static RSA, DHE, static ECDH, PSK)
	MBEDTLS_KEY_EXCHANGE_PSK_ENABLED MBEDTLS_KEY_EXCHANGE_DHE_PSK_ENABLED
	MBEDTLS_KEY_EXCHANGE_ECDHE_PSK_ENABLED MBEDTLS_KEY_EXCHANGE_RSA_PSK_ENABLED
	MBEDTLS_KEY_EXCHANGE_RSA_ENABLED MBEDTLS_KEY_EXCHANGE_DHE_RSA_ENABLED
	MBEDTLS_KEY_EXCHANGE_ECDH_ECDSA_ENABLED MBEDTLS_KEY_EXCHANGE_ECDH_RSA_ENABLED MBEDTLS_DHM_C
	# ciphers and modes: AES-GCM only (with AES-NI; what current TLS 1.2 servers offer first)
	MBEDTLS_CIPHER_MODE_CBC MBEDTLS_CIPHER_MODE_CFB MBEDTLS_CIPHER_MODE_CTR
	MBEDTLS_CIPHER_MODE_OFB MBEDTLS_CIPHER_MODE_XTS MBEDTLS_CIPHER_PADDING_PKCS7
	MBEDTLS_CIPHER_PADDING_ONE_AND_ZEROS MBEDTLS_CIPHER_PADDING_ZEROS_AND_LEN
	MBEDTLS_CIPHER_PADDING_ZEROS MBEDTLS_ARC4_C MBEDTLS_BLOWFISH_C MBEDTLS_CAMELLIA_C
	MBEDTLS_DES_C MBEDTLS_XTEA_C MBEDTLS_CCM_C MBEDTLS_PADLOCK_C MBEDTLS_CHACHAPOLY_C
	MBEDTLS_CHACHA20_C MBEDTLS_POLY1305_C
	# hashes: no MD5 (TLS 1.0/1.1 and encrypted PEM only), no RIPEMD-160, no HKDF (TLS 1.3)
	MBEDTLS_MD5_C MBEDTLS_RIPEMD160_C MBEDTLS_HKDF_C
	# curves: the ones TLS servers and CAs use
	MBEDTLS_ECP_DP_SECP192R1_ENABLED MBEDTLS_ECP_DP_SECP224R1_ENABLED
	MBEDTLS_ECP_DP_SECP192K1_ENABLED MBEDTLS_ECP_DP_SECP224K1_ENABLED
	MBEDTLS_ECP_DP_SECP256K1_ENABLED MBEDTLS_ECP_DP_BP256R1_ENABLED
	MBEDTLS_ECP_DP_BP384R1_ENABLED MBEDTLS_ECP_DP_BP512R1_ENABLED MBEDTLS_ECP_DP_CURVE448_ENABLED
	# the generic modular reduction for the NIST curves (slower P-256/384 arithmetic: one ECDHE
	# and a few signature checks per handshake), no EC keys with explicit curve parameters
	MBEDTLS_ECP_NIST_OPTIM MBEDTLS_PK_PARSE_EC_EXTENDED
	# no signing, key generation or certificate writing: a client without a certificate only
	# verifies (the public-key writer stays: curl's CURLOPT_PINNEDPUBLICKEY hashes its output)
	MBEDTLS_ECDSA_DETERMINISTIC MBEDTLS_HMAC_DRBG_C MBEDTLS_GENPRIME MBEDTLS_PK_RSA_ALT_SUPPORT
	MBEDTLS_PEM_WRITE_C MBEDTLS_X509_CREATE_C MBEDTLS_X509_CRT_WRITE_C
	MBEDTLS_X509_CSR_WRITE_C MBEDTLS_X509_CSR_PARSE_C MBEDTLS_X509_CRL_PARSE_C
	MBEDTLS_PKCS5_C MBEDTLS_PKCS12_C
	# no PSA API (nothing calls it), no debug messages, feature strings, test certificates
	MBEDTLS_PSA_CRYPTO_C MBEDTLS_PSA_CRYPTO_STORAGE_C MBEDTLS_PSA_ITS_FILE_C MBEDTLS_DEBUG_C
	MBEDTLS_VERSION_FEATURES MBEDTLS_CERTS_C MBEDTLS_SELF_TEST MBEDTLS_NET_C
)
for opt in "${mbedtls_off[@]}"; do
	sed -i "s|^#define $opt\$|//#define $opt|" "$d/include/mbedtls/config.h"
	if ! grep -q "^//#define $opt\$" "$d/include/mbedtls/config.h" ||
		grep -q "^#define $opt\b" "$d/include/mbedtls/config.h"; then
		echo "mbedtls config.h: could not turn $opt off" >>"$LOG"
		exit 1
	fi
done
cmake_build "$d" -DENABLE_PROGRAMS=OFF -DENABLE_TESTING=OFF -DGEN_FILES=OFF \
	-DUSE_SHARED_MBEDTLS_LIBRARY=OFF -DUSE_STATIC_MBEDTLS_LIBRARY=ON \
	-DMBEDTLS_FATAL_WARNINGS=OFF -DENABLE_ZLIB_SUPPORT=OFF

begin http-parser
d=$(srcdir http-parser)
# shellcheck disable=SC2086 # CFLAGS_DEPS is a list of flags
run "$MUSL_CC" $CFLAGS_SMALL -DHTTP_PARSER_STRICT=0 -I"$d" -c "$d/http_parser.c" -o "$d/http_parser.o"
run ar rcs "$STAGE/lib/libhttp_parser.a" "$d/http_parser.o"
cp "$d/http_parser.h" "$STAGE/include/"

begin libyaml
cmake_build "$(srcdir libyaml)" "${CMAKE_SMALL[@]}" -DINSTALL_CMAKE_DIR=lib/cmake/yaml

begin json-c
cmake_build "$(srcdir json-c)" "${CMAKE_SMALL[@]}" -DBUILD_STATIC_LIBS=ON -DDISABLE_WERROR=ON \
	-DDISABLE_EXTRA_LIBS=ON -DENABLE_THREADING=OFF -DENABLE_RDRAND=OFF

begin libsodium
d=$(srcdir libsodium)
# The Debian source is a git export without a generated configure script.
(cd "$d" && run autoreconf -fi)
# sodium_init() picks the fastest code for the CPU, which links every variant of what it picks
# for. Nothing here calls crypto_pwhash (Argon2), Salsa20 or AEGIS-128L, and X25519 runs once
# per channel handshake: those keep their portable default (same results, the ref10 X25519).
# BLAKE2b hashes the channel transcript and the step inputs (capped files): the portable code as
# well. Poly1305's SSE2 code compiled for size is slower than the portable one (ChaCha20-
# Poly1305 over 64 MiB: 95 ms against 68), so Poly1305 keeps its portable code too. ChaCha20
# keeps its SSSE3/AVX2 code, AEGIS-256 its AES-NI code; AES-256-GCM picks at each call.
for pick in _crypto_pwhash_argon2 _crypto_scalarmult_curve25519 _crypto_stream_salsa20 \
	_crypto_generichash_blake2b _crypto_onetimeauth_poly1305 _crypto_aead_aegis128l; do
	sed -i "/^    ${pick}_pick_best_implementation();\$/d" "$d/src/libsodium/sodium/core.c"
	if grep -q "${pick}_pick_best_implementation();" "$d/src/libsodium/sodium/core.c"; then
		echo "libsodium core.c: ${pick}_pick_best_implementation() is still called" >>"$LOG"
		exit 1
	fi
done
# What is left to pick must be exactly ChaCha20 and AEGIS-256: a newer libsodium that picks more
# would link more, unseen.
picks=$(sed -n 's/^ *\(_crypto_[a-z0-9_]*\)_pick_best_implementation();$/\1/p' \
	"$d/src/libsodium/sodium/core.c" | sort | tr '\n' ' ')
if [ "$picks" != "_crypto_aead_aegis256 _crypto_stream_chacha20 " ]; then
	echo "libsodium core.c picks '$picks', expected ChaCha20 and AEGIS-256 only:" \
		"review the list above" >>"$LOG"
	exit 1
fi
(cd "$d" && run env CC="$MUSL_CC" CFLAGS="$CFLAGS_DEPS" LDFLAGS="$LDFLAGS_DEPS" \
	./configure --prefix="$FINAL" \
	--disable-shared --enable-static --disable-dependency-tracking --disable-pie)
run make -C "$d" -j "$JOBS"
# AEGIS-256's AES-NI code, the channel's cipher where both ends have it, is compiled again at
# -O2, as the one exception to -Os: 64 MiB in 8 ms instead of 19, for 2.2 KB. Its objects are
# removed and made again with the configured flags, -Os replaced.
aegis_fail() {
	echo "libsodium: cannot compile AEGIS-256's AES-NI code again at -O2: $*" >>"$LOG"
	exit 1
}
sodium_cflags=$(sed -n 's/^CFLAGS = //p' "$d/src/libsodium/Makefile")
[[ $sodium_cflags == *-Os* ]] || aegis_fail "its Makefile's CFLAGS have no -Os: '$sodium_cflags'"
mapfile -t aegis_objs < <(find "$d/src/libsodium/crypto_aead/aegis256" -name 'libaesni_la-aegis256_aesni.*')
[ "${#aegis_objs[@]}" -gt 0 ] || aegis_fail "no libaesni_la-aegis256_aesni objects after the build"
rm -f "${aegis_objs[@]}"
run make -C "$d" CFLAGS="${sodium_cflags/-Os/-O2}"
[ -n "$(find "$d/src/libsodium/crypto_aead/aegis256" -name 'libaesni_la-aegis256_aesni.o')" ] ||
	aegis_fail "its object was not made again"
run make -C "$d" install DESTDIR="$TMP/dest"

begin curl
d=$(srcdir curl)
# HTTP and HTTPS over mbedTLS only; everything else off. The CA bundle path is a compile-time
# default; CURLOPT_CAINFO overrides it at run time.
# --disable-verbose drops the infof() texts (CURLOPT_VERBOSE output, which nothing here turns
# on) but would also turn every curl_easy_strerror() into "Error": strerror.c keeps its texts.
sed -i 's|^#include "curl_setup.h"$|&\n#undef CURL_DISABLE_VERBOSE_STRINGS /* keep the error texts */|' \
	"$d/lib/strerror.c"
grep -q '^#undef CURL_DISABLE_VERBOSE_STRINGS' "$d/lib/strerror.c"
# The server certificate's text dump (mbedtls_x509_crt_info(), only with CURLOPT_VERBOSE, whose
# output --disable-verbose drops anyway) goes with the other verbose texts: 6 KB of mbedTLS's
# X.509 printing (the verification and its error texts stay).
sed -i '/^  if(peercert && data->set.verbose) {$/,/^  }$/{
/^  if(peercert/i #ifndef CURL_DISABLE_VERBOSE_STRINGS /* the certificate dump is verbose output */
/^  }$/a #endif
}' "$d/lib/vtls/mbedtls.c"
[ "$(grep -c '^#ifndef CURL_DISABLE_VERBOSE_STRINGS /\* the certificate dump' "$d/lib/vtls/mbedtls.c")" = 1 ]
(cd "$d" && run env CC="$MUSL_CC" CFLAGS="$CFLAGS_DEPS" \
	CPPFLAGS="-I$STAGE/include -DCURL_DISABLE_PARSEDATE" \
	LDFLAGS="$LDFLAGS_DEPS -L$STAGE/lib" ./configure --prefix="$FINAL" \
	--disable-shared --enable-static --disable-dependency-tracking --disable-silent-rules \
	--with-mbedtls="$STAGE" --with-zlib="$STAGE" --without-openssl --without-gnutls \
	--with-ca-bundle="$CA_BUNDLE" --without-ca-path --without-ca-fallback \
	--enable-http --disable-ftp --disable-file --disable-ldap --disable-ldaps --disable-rtsp \
	--disable-dict --disable-telnet --disable-tftp --disable-pop3 --disable-imap --disable-smb \
	--disable-smtp --disable-gopher --disable-mqtt --disable-websockets \
	--disable-manual --disable-libcurl-option --disable-ntlm --disable-ntlm-wb \
	--disable-tls-srp \
	--disable-cookies --disable-alt-svc --disable-hsts --disable-doh --disable-mime \
	--disable-netrc --disable-progress-meter --disable-dnsshuffle --disable-get-easy-options \
	--without-libpsl --without-libidn2 --without-brotli --without-zstd --without-nghttp2 \
	--without-ngtcp2 --without-nghttp3 --without-quiche --without-msh3 --without-hyper \
	--without-libssh2 --without-libssh --without-wolfssh --without-librtmp --without-gssapi \
	--without-libgsasl --disable-ares --enable-threaded-resolver --enable-ipv6 \
	--disable-unix-sockets --enable-http-auth --disable-crypto-auth --enable-proxy \
	--disable-verbose --disable-socketpair --disable-headers-api \
	--disable-versioned-symbols)
# -Oz as for the other libraries that are neither crypto nor compression (3 KB): configure only
# knows -Os (with -Oz it would add -O2 after it), so the Makefile it wrote gets it afterwards.
sed -i 's/^CFLAGS = -Os /CFLAGS = -Oz /' "$d/lib/Makefile"
grep -q '^CFLAGS = -Oz ' "$d/lib/Makefile"
run make -C "$d/lib" -j "$JOBS"
run make -C "$d/lib" install DESTDIR="$TMP/dest"
run make -C "$d/include" install DESTDIR="$TMP/dest"
run make -C "$d" install-pkgconfigDATA DESTDIR="$TMP/dest"

begin libgit2
d=$(srcdir libgit2)
# The +ds source drops deps/ (bundled pcre, http-parser, ntlmclient, zlib): use musl's POSIX
# regcomp and the http-parser and zlib built above. libgit2 gets no default CA location: with
# one, every git_libgit2_init() parses the whole bundle (10 ms on the test machine), also
# where nothing goes over TLS (a pack taken in over the channel, a diff);
# git_fetch_global_init() loads $CA_BUNDLE (SA_CA_BUNDLE, mk/static.mk) where a fetch or a push
# may follow. CERT_LOCATION is still given, or cmake would look for one with the builder's
# openssl; its existence check (on the builder, not the guest) and the definition it makes are
# dropped.
# shellcheck disable=SC2016 # literal cmake expressions
sed -i -e 's|if(NOT EXISTS ${CERT_LOCATION})|if(FALSE)|' \
	-e '/add_definitions(-DGIT_DEFAULT_CERT_LOCATION=/d' "$d/cmake/SelectHTTPSBackend.cmake"
if ! grep -q 'if(FALSE)' "$d/cmake/SelectHTTPSBackend.cmake" ||
	grep -q 'GIT_DEFAULT_CERT_LOCATION' "$d/cmake/SelectHTTPSBackend.cmake"; then
	echo "libgit2 SelectHTTPSBackend.cmake: the CERT_LOCATION lines are not as expected" >>"$LOG"
	exit 1
fi
cmake_build "$d" "${CMAKE_SMALL[@]}" -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DBUILD_EXAMPLES=OFF -DBUILD_FUZZERS=OFF \
	-DUSE_HTTPS=mbedTLS -DUSE_SHA1=CollisionDetection -DUSE_SHA256=mbedTLS \
	-DCERT_LOCATION="$CA_BUNDLE" -DUSE_SSH=OFF -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF \
	-DUSE_HTTP_PARSER=system -DREGEX_BACKEND=regcomp -DUSE_BUNDLED_ZLIB=OFF -DUSE_ICONV=OFF \
	-DUSE_THREADS=ON -DUSE_NSEC=ON -DENABLE_REPRODUCIBLE_BUILDS=ON \
	-DMBEDTLS_INCLUDE_DIR="$STAGE/include" -DMBEDTLS_LIBRARY="$STAGE/lib/libmbedtls.a" \
	-DMBEDX509_LIBRARY="$STAGE/lib/libmbedx509.a" \
	-DMBEDCRYPTO_LIBRARY="$STAGE/lib/libmbedcrypto.a"

lap
step="finishing"
# Only headers and static archives are kept; paths that name the stage are rewritten.
rm -rf "${STAGE:?}/bin" "${STAGE:?}/share"
find "$STAGE/lib" \( -name '*.la' -o -name '*.so*' \) -delete
grep -rlF "$TMP/dest" "$STAGE" 2>/dev/null | while read -r f; do
	sed -i "s|$TMP/dest||g" "$f"
done
{
	echo "key $key"
	echo "script $(sha256sum <"$SCRIPT" | cut -d' ' -f1)"
	echo "built $(date -u +%Y-%m-%dT%H:%M:%SZ) in $(($(date +%s) - start)) s"
	echo "# source packages ($SUITE, but: $(for p in "${!NEWER[@]}"; do printf '%s from %s ' "$p" "${NEWER[$p]}"; done))"
	cat "$CACHE_ROOT/versions"
	echo "# toolchain"
	toolchain_id
	echo "libc.a $musl_libc"
	echo "# seconds per step"
	printf '%s\n' "${timings[@]}"
} >"$STAGE/KEY-INFO.new"
cp "$LOG" "$STAGE/build.log"
mv "$STAGE/KEY-INFO.new" "$STAGE/KEY-INFO"
rm -rf "$FINAL" # a prefix without KEY-INFO never finished
mv "$STAGE" "$FINAL"
touch "$FINAL"
rm -rf "$TMP"

# Keep the KEEP most recently used sets (worktrees on other script versions may still use
# theirs); older ones go. A set is renamed aside first so no reader sees half of one.
for d in "$CACHE_ROOT"/*-*/; do
	if [ -f "$d/KEY-INFO" ]; then echo "$(stat -c %Y "$d") ${d%/}"; fi
done | sort -rn | tail -n +$((KEEP + 1)) | while read -r _ old; do
	mv "$old" "$CACHE_ROOT/tmp.old.${old##*/}" && rm -rf "$CACHE_ROOT/tmp.old.${old##*/}"
done
say "built $key in $(($(date +%s) - start)) s"
echo "$FINAL"
