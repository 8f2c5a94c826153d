#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# image-build/build.sh --profile minimal, as CI runs it: the unified Incus image's layout and
# metadata.yaml (checked against Incus's documented image format), the root filesystem's
# contents (our package installed with its unit enabled, the sandbox user, the cache root),
# then sandbox-app-boot on a copy of tests/data/pyapp INSIDE that root (chroot in private mount
# and PID namespaces, so every mount and process goes away with them): ready, /up answers 200,
# runtime.json written, --stop leaves no app process.
# The first run debootstraps from Debian's archive (cached after, keyed by the package list:
# see image-build/README.md for times); later runs reuse the cached root.
. "$(dirname "$0")/lib.sh"

[ "$(id -u)" = 0 ] || skip "needs root (debootstrap, chroot, mount namespaces)"
for tool in debootstrap unshare chroot ruby dpkg-deb; do
	command -v "$tool" >/dev/null || skip "$tool is missing (packaging/install-deps.sh installs debootstrap)"
done
[ -f "$ROOT/mk/static.mk" ] || skip "no \`make static\` in this tree: the image carries the static guest binary"
VERSION=$(sed -n 's/^VERSION *:\{0,1\}= *//p' "$ROOT/Makefile")

if ! make -C "$ROOT" -s deb >"$TMP/deb.log" 2>&1; then
	cat "$TMP/deb.log"
	fail "make deb"
	finish
fi

OUT=$TMP/out
# A host key baked in with --authorized-key (and a file that is no key, refused at once).
"$BUILD/sandbox-ctl" keygen --out "$TMP/host_key" >/dev/null
echo "not a key" >"$TMP/junk.pub"
"$ROOT/image-build/build.sh" --profile minimal --authorized-key "$TMP/junk.pub" --out "$TMP/junk" >/dev/null 2>"$TMP/junk.err"
check "--authorized-key with a file that is no public key is refused" \
	grep -q "not a public key" "$TMP/junk.err"
start=$(date +%s)
if ! "$ROOT/image-build/build.sh" --profile minimal --authorized-key "$TMP/host_key.pub" --out "$OUT" \
	>"$TMP/build.out" 2>"$TMP/build.err"; then
	tail -30 "$TMP/build.err"
	fail "image-build/build.sh --profile minimal"
	finish
fi
log "build.sh --profile minimal took $(($(date +%s) - start)) s ($(grep -c 'reusing the cached root' "$TMP/build.err") cached root reused)"
image=$(tail -n 1 "$TMP/build.out")
check "the image is named after the variant, profile and version" \
	test "$image" = "$OUT/sandbox-app-runtime-minimal-$VERSION-amd64.tar.gz"

# --- the unified tarball: metadata.yaml, rootfs/, templates/ and nothing else ------------------
tar -tzf "$image" >"$TMP/list" 2>/dev/null
top=$(sed 's|^\./||; s|/.*||' "$TMP/list" | sort -u | paste -sd' ')
check "top level is metadata.yaml rootfs templates (got: $top)" test "$top" = "metadata.yaml rootfs templates"
for f in rootfs/usr/sbin/sandbox-agent rootfs/usr/bin/sandbox-app-boot rootfs/usr/bin/python3 \
	rootfs/usr/sbin/init rootfs/etc/systemd/system/multi-user.target.wants/sandbox-agent.service \
	templates/hostname.tpl; do
	check "the tarball holds $f" grep -qx "$f" "$TMP/list"
done
mkdir -p "$TMP/meta"
tar -C "$TMP/meta" -xzf "$image" metadata.yaml templates
check "the baked host key is in authorized_keys.d" \
	sh -c "tar -xzOf '$image' rootfs/etc/sandbox-agent/authorized_keys.d/image-host_key.pub | cmp -s - '$TMP/host_key.pub'"
check "the Incus configuration's keys are read at start (sandbox-agent-incus-keys.service enabled)" \
	grep -qx rootfs/etc/systemd/system/multi-user.target.wants/sandbox-agent-incus-keys.service "$TMP/list"

# metadata.yaml through Ruby's YAML (a real parser): the mandatory keys and their types, the
# properties naming the variant and our version, and each template's file present.
if ruby -ryaml -e '
	m = YAML.safe_load(File.read(ARGV[0]))
	now, ver, tdir = Time.now.to_i, ARGV[1], ARGV[2]
	bad = []
	bad << "keys #{m.keys.sort}" unless (m.keys - %w[architecture creation_date expiry_date properties templates]).empty?
	bad << "architecture #{m["architecture"].inspect}" unless m["architecture"] == "x86_64"
	c = m["creation_date"]
	bad << "creation_date #{c.inspect}" unless c.is_a?(Integer) && c > now - 3600 && c <= now + 60
	p = m["properties"] || {}
	bad << "properties not a map" unless p.is_a?(Hash) && p.values.all? { |v| v.is_a?(String) }
	bad << "os #{p["os"].inspect}" unless p["os"] == "debian"
	bad << "release #{p["release"].inspect}" unless p["release"].to_s.start_with?("bookworm")
	bad << "variant #{p["variant"].inspect}" unless p["variant"] == "default"
	d = p["description"].to_s
	bad << "description #{d.inspect}" unless d.include?(ver) && d.include?("default variant") && d.include?("sandbox-app-runtime")
	(m["templates"] || {}).each do |path, t|
		bad << "template #{path}: when #{t["when"].inspect}" unless (t["when"] - %w[create copy start]).empty?
		bad << "template #{path}: no templates/#{t["template"]}" unless File.file?(File.join(tdir, t["template"].to_s))
	end
	abort bad.join("; ") unless bad.empty?
' "$TMP/meta/metadata.yaml" "$VERSION" "$TMP/meta/templates" 2>"$TMP/yaml.err"; then
	pass "metadata.yaml: architecture, creation_date, properties (os, release, variant, description with $VERSION), templates"
else
	cat "$TMP/meta/metadata.yaml"
	fail "metadata.yaml: $(cat "$TMP/yaml.err")"
fi

# --- the root filesystem ---------------------------------------------------------------------------
R=$OUT/rootfs
check "rootfs/ is kept beside the image" test -x "$R/usr/sbin/sandbox-agent"
check "the image's sandbox-agent is the package's static binary, version $VERSION" \
	test "$(chroot "$R" /usr/sbin/sandbox-agent --version 2>&1)" = "sandbox-agent $VERSION"
# shellcheck disable=SC2016 # dpkg-query's own field syntax
check "dpkg knows sandbox-agent $VERSION" \
	test "$(chroot "$R" dpkg-query -W -f '${Version} ${Status}' sandbox-agent)" = "$VERSION install ok installed"
check "the sandbox user is uid 1000" test "$(chroot "$R" getent passwd sandbox | cut -d: -f3)" = 1000
check "the cache root belongs to sandbox" \
	test "$(stat -c '%u %a' "$R/var/cache/sandbox-app-runtime")" = "1000 755"
check "the claude user is in the sandbox group, its home 0700" \
	test "$(chroot "$R" id -nG claude | tr ' ' '\n' | grep -cx sandbox):$(stat -c %a "$R/home/claude")" = "1:700"
check "/usr/local/bin/sandbox-claude is sandbox-agent" \
	test "$(chroot "$R" readlink -f /usr/local/bin/sandbox-claude)" = /usr/sbin/sandbox-agent
check "machine-id is empty (each instance makes its own)" test ! -s "$R/etc/machine-id"
check "no drop-in orders the unit after the deprecated systemd-udev-settle" \
	test ! -e "$R/etc/systemd/system/sandbox-agent.service.d/10-virtio-ports.conf"
check "the port's udev rule pulls the unit in" \
	grep -q 'ATTR{name}=="org.sandbox-app-runtime.agent".*ENV{SYSTEMD_WANTS}+="sandbox-agent.service"' \
	"$R/usr/lib/udev/rules.d/60-sandbox-agent.rules"
check "no policy-rc.d is left behind" test ! -e "$R/usr/sbin/policy-rc.d"
check "the minimal profile has no PostgreSQL" test ! -e "$R/usr/lib/postgresql"

# --- sandbox-app-boot inside the root ------------------------------------------------------------
# Private mount and PID namespaces: /proc, /dev and /run are mounted inside them only, and the
# app (detached by the engine) ends with the namespace. The network is the host's loopback.
mkdir -p "$R/workspace"
rm -rf "$R/workspace/app"
cp -a "$ROOT/tests/data/pyapp" "$R/workspace/app"
port=$(free_port)
cat >"$R/workspace/run.sh" <<SCRIPT
#!/bin/sh
# Runs in the image's root: boot, ask /up, stop; prints what the test checks.
set -u
sandbox-app-boot --listen 127.0.0.1:$port --grace 2000 /workspace/app >/workspace/boot.out 2>/workspace/boot.err
echo "boot=\$?"
python3 -c 'import urllib.request; print("up=%d" % urllib.request.urlopen("http://127.0.0.1:$port/up", timeout=10).status)' 2>&1
test -s /workspace/runtime.json && echo "runtime=\$(stat -c %a /workspace/runtime.json)"
ps -eo args | grep -c '[s]erver.py' | sed 's/^/running=/'
sandbox-app-boot --stop --grace 2000 /workspace/app >/workspace/stop.out 2>&1
echo "stop=\$?"
ps -eo args | grep -c '[s]erver.py' | sed 's/^/after=/'
SCRIPT
chmod 755 "$R/workspace/run.sh"
# shellcheck disable=SC2016 # expanded by the inner shell
unshare --mount --pid --fork --propagation private /bin/sh -c '
	R=$1
	mount -t proc proc "$R/proc" && mount --rbind /dev "$R/dev" &&
		mount -t tmpfs -o mode=0755 tmpfs "$R/run" && mkdir -m 0700 "$R/run/sandbox-agent" &&
		mount -t tmpfs -o mode=1777 tmpfs "$R/tmp" || exit 1
	exec chroot "$R" env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
		LANG=C.UTF-8 /workspace/run.sh
' sh "$R" >"$TMP/inside.out" 2>&1
sed 's/^/    /' "$TMP/inside.out"
val() { sed -n "s/^$1=//p" "$TMP/inside.out" | tail -n 1; }
check "sandbox-app-boot in the image's root: ready (exit 0)" test "$(val boot)" = 0
[ "$(val boot)" = 0 ] || sed 's/^/    | /' "$R/workspace/boot.err"
check "the app answers /up with 200 from inside the root" test "$(val up)" = 200
check "runtime.json is written, 0600" test "$(val runtime)" = 600
check "the app's server runs while ready" test "$(val running)" = 1
check "sandbox-app-boot --stop exits 0" test "$(val stop)" = 0
check "no app process is left after --stop" test "$(val after)" = 0
check "no mount is left below the root" bash -c "! grep -q ' $R/' /proc/self/mounts"
finish
