#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The fully static build (mk/static.mk, packaging/static/build-deps.sh): `make static` links
# sandbox-agent, sandbox-ctl and tests/static/libcheck with musl; they must be static, the agent
# within 2.0 MB stripped, and they must run in an EMPTY chroot (no libc, no /dev, no /etc):
# the multi-call link, --version, and libcheck, which drives libyaml, json-c, zlib, libcurl,
# libgit2 and libsodium there, and fetches over HTTP and HTTPS (mbedTLS, a test CA) from
# servers this test runs on 127.0.0.1. A second `make static` must rebuild nothing.
# The first run on a machine builds the dependency set (a few minutes); later runs reuse it.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1

command -v musl-gcc >/dev/null || skip "musl-gcc is missing (apt-get install musl-tools)"

tmp=$TMP
server_pid=
on_exit '[ -n "$server_pid" ] && kill "$server_pid" && wait "$server_pid"'
fail() { die "$@"; } # every check here ends the test

echo "make static (the first run on a machine builds the dependencies)"
if ! make static >"$tmp/make.log" 2>&1; then
	tail -n 60 "$tmp/make.log"
	fail "make static failed"
fi
grep -E 'stripped|static build' "$tmp/make.log"

out=build-static
stripped=$out/stripped
for b in sandbox-agent sandbox-ctl tests/libcheck; do
	for f in "$out/$b" "$stripped/$b"; do
		[ -x "$f" ] || fail "$f was not built"
		info=$(file -b "$f")
		[[ $info == *"statically linked"* ]] || fail "$f is not statically linked: $info"
		readelf -d "$f" 2>&1 | grep -q 'no dynamic section' || fail "$f has a dynamic section"
	done
done
[ "$(readlink "$out/sandbox-app-boot")" = sandbox-agent ] || fail "sandbox-app-boot link missing"

size=$(stat -c %s "$stripped/sandbox-agent")
echo "sandbox-agent stripped: $size bytes"
[ "$size" -le 2000000 ] || fail "sandbox-agent is $size bytes stripped, above 2,000,000"

# A warm second run reuses the dependency set and every object.
make static >"$tmp/make2.log" 2>&1 || {
	cat "$tmp/make2.log"
	fail "second make static failed"
}
if grep -E 'static-deps: building|MUSL-CC|MUSL-LD' "$tmp/make2.log"; then
	fail "a second make static rebuilt something"
fi

# The empty root: only our binaries, the multi-call link and a test CA certificate.
root=$tmp/root
mkdir "$root"
cp "$stripped/sandbox-agent" "$stripped/sandbox-ctl" "$stripped/tests/libcheck" "$root/"
ln -s sandbox-agent "$root/sandbox-app-boot"
in_root() { env -i /usr/sbin/chroot "$root" "$@"; }

version=$(sed -n 's/^VERSION := //p' Makefile)
got=$(in_root /sandbox-agent --version 2>&1) || fail "sandbox-agent --version in the chroot: $got"
[ "$got" = "sandbox-agent $version" ] || fail "sandbox-agent --version said '$got'"
got=$(in_root /sandbox-ctl --version 2>&1) || fail "sandbox-ctl --version in the chroot: $got"
[ "$got" = "sandbox-ctl $version" ] || fail "sandbox-ctl --version said '$got'"
got=$(in_root /sandbox-app-boot --help 2>&1)
rc=$?
[ $rc -lt 126 ] || fail "sandbox-app-boot did not run in the chroot (exit $rc): $got"
[[ $got == *sandbox-app-boot* ]] || fail "sandbox-app-boot did not dispatch on its name: $got"
echo "chroot: sandbox-agent, sandbox-ctl and sandbox-app-boot run"

# Loopback HTTP and HTTPS servers for libcheck's fetches; the HTTPS one has a leaf certificate
# for 127.0.0.1 signed by a CA made here. mbedTLS 2.28 matches a host only against DNS names
# (no IP SANs), so the address is a DNS name as well.
make_certs() {
	local ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
	openssl req -x509 "${ec[@]}" -days 2 -subj /CN=libcheck-ca -keyout "$tmp/ca.key" \
		-out "$tmp/ca.pem" -addext basicConstraints=critical,CA:TRUE || return
	openssl req "${ec[@]}" -subj /CN=127.0.0.1 -keyout "$tmp/leaf.key" -out "$tmp/leaf.csr" ||
		return
	printf 'subjectAltName=DNS:127.0.0.1,IP:127.0.0.1\nbasicConstraints=CA:FALSE\n' \
		>"$tmp/leaf.ext"
	openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
		-CAcreateserial -days 2 -extfile "$tmp/leaf.ext" -out "$tmp/leaf.pem" || return
	# Another CA, for the refusal check below.
	openssl req -x509 "${ec[@]}" -days 2 -subj /CN=other-ca -keyout "$tmp/other.key" \
		-out "$tmp/other.pem" -addext basicConstraints=critical,CA:TRUE
}
make_certs >"$tmp/openssl.log" 2>&1 || {
	cat "$tmp/openssl.log"
	fail "could not make the test certificates"
}
cp "$tmp/ca.pem" "$root/ca.pem"

cat >"$tmp/server.py" <<'EOF'
import http.server, ssl, sys, threading

class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b"libcheck-ok\n"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
tls = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[1], sys.argv[2])
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
for s in (plain, tls):
    threading.Thread(target=s.serve_forever, daemon=True).start()
with open(sys.argv[3] + ".new", "w") as f:
    f.write("%d %d\n" % (plain.server_address[1], tls.server_address[1]))
import os
os.rename(sys.argv[3] + ".new", sys.argv[3])
threading.Event().wait(300)
EOF
/usr/bin/python3 "$tmp/server.py" "$tmp/leaf.pem" "$tmp/leaf.key" "$tmp/ports" &
server_pid=$!
for _ in $(seq 100); do
	[ -s "$tmp/ports" ] && break
	kill -0 "$server_pid" 2>/dev/null || fail "the test servers did not start"
	sleep 0.1
done
read -r http_port https_port <"$tmp/ports" || fail "the test servers did not report their ports"

echo "libcheck in the chroot, fetching http://127.0.0.1:$http_port/"
in_root /libcheck "http://127.0.0.1:$http_port/" || fail "libcheck failed in the empty chroot"
echo "libcheck in the chroot, fetching https://127.0.0.1:$https_port/ trusting /ca.pem"
in_root /libcheck "https://127.0.0.1:$https_port/" /ca.pem ||
	fail "libcheck failed over HTTPS in the empty chroot"

# The compile-time CA bundle path is used when CURLOPT_CAINFO is not set ...
mkdir -p "$root/etc/ssl/certs"
cp "$tmp/ca.pem" "$root/etc/ssl/certs/ca-certificates.crt"
echo "libcheck in the chroot, fetching https://127.0.0.1:$https_port/ with the default CA bundle"
in_root /libcheck "https://127.0.0.1:$https_port/" ||
	fail "libcheck did not use /etc/ssl/certs/ca-certificates.crt by default"

# The static set's libgit2 has no CA location of its own (packaging/static/README.md): the
# static sandbox-ctl's fetch loads the same default bundle. The server is no git server, so a
# fetch that trusts it gets through TLS and fails on what it reads.
mkdir -p "$root/tmp"
git_fetch_in_root() {
	in_root /sandbox-ctl --connect unix:/nonexistent checkout --spec - 2>/dev/null \
		<<<'{"clone_url":"https://127.0.0.1:'"$https_port"'/app.git","ref":"main"}'
}
got=$(git_fetch_in_root) && fail "a checkout from a server that is not git succeeded: $got"
[[ $got == *'"msg"'* && $got != *[Cc]ertificate* ]] ||
	fail "the static sandbox-ctl did not trust the default CA bundle: $got"
echo "the static sandbox-ctl's fetch trusts the default CA bundle: $got"

# ... and certificates are checked: with another CA there, the same fetches must be refused.
cp "$tmp/other.pem" "$root/etc/ssl/certs/ca-certificates.crt"
got=$(in_root /libcheck "https://127.0.0.1:$https_port/" 2>&1) &&
	fail "an HTTPS fetch from an untrusted server succeeded: $got"
got=$(grep '^FAIL' <<<"$got")
[[ $got == "FAIL curl fetch:"*[Vv]erif* ]] || fail "expected only a certificate failure: $got"
echo "an untrusted HTTPS server is refused: $got"
got=$(git_fetch_in_root) && fail "a checkout from an untrusted server succeeded: $got"
[[ $got == *[Cc]ertificate* ]] || fail "expected a certificate failure from sandbox-ctl: $got"
echo "and by the static sandbox-ctl: $got"

# The channel between the static binaries, and between the dynamic sandbox-ctl (the system's
# libsodium) and the static agent: the cipher each pair agrees on, and a push through it of a
# tree whose biggest file spans several frames, compared byte for byte.
if [ "$(id -u)" -eq 0 ]; then
	# The static set's libsodium, as its KEY-INFO records it (packaging/static/build-deps.sh),
	# read before HOME moves: the set is cached under the real one.
	static_sodium=$(awk '$1 == "libsodium" && $2 ~ /^[0-9]/ { print $2; exit }' \
		"$(packaging/static/build-deps.sh)/KEY-INFO")
	[ -n "$static_sodium" ] || fail "the static set's KEY-INFO names no libsodium"
	export HOME=$tmp/home
	mkdir -p "$HOME" "$tmp/tree/sub"
	head -c 3000000 /dev/urandom >"$tmp/tree/big"
	echo small >"$tmp/tree/sub/small"
	"$stripped/sandbox-ctl" keygen >/dev/null || fail "sandbox-ctl keygen failed"
	cp "$HOME/.config/sandbox-ctl/key.pub" "$tmp/authorized_keys"
	"$stripped/sandbox-agent" serve --unix "$tmp/agent.sock" --authorized-keys \
		"$tmp/authorized_keys" --authorized-keys-dir '' --key "$tmp/guest_key" \
		--state-dir "$tmp/agent.state" --no-forward --cache-root "$tmp/cache" \
		>"$tmp/agent.log" 2>&1 &
	agent_pid=$!
	on_exit "kill $agent_pid"
	wait_socket "$tmp/agent.sock" || fail "the static daemon did not start: $(cat "$tmp/agent.log")"
	# pair NAME CTL WANT: hello names the cipher WANT, and a push arrives whole.
	pair() {
		local name=$1 ctl=$2 want=$3 got
		got=$("$ctl" --connect "unix:$tmp/agent.sock" --timeout 30 hello \
			--accept-new-guest-key | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["cipher"])') ||
			fail "$name: hello failed: $(tail -n 5 "$tmp/agent.log")"
		[ "$got" = "$want" ] || fail "$name: the channel's cipher is $got, expected $want"
		"$ctl" --connect "unix:$tmp/agent.sock" --timeout 30 push "$tmp/tree" \
			--app-dir "$tmp/ws-$name/app" >/dev/null 2>"$tmp/push.err" ||
			fail "$name: push failed: $(cat "$tmp/push.err")"
		diff -r "$tmp/tree" "$tmp/ws-$name/app" >/dev/null ||
			fail "$name: the pushed tree differs from the source"
		echo "$name: $got, a 3 MB push arrived whole"
	}
	pair static "$stripped/sandbox-ctl" "$(expected_cipher "$static_sodium" "$static_sodium")"
	[ -x build/sandbox-ctl ] || make -s all >/dev/null || fail "the dynamic build failed"
	sodium=$(system_libsodium)
	pair "dynamic ctl (libsodium $sodium)" build/sandbox-ctl \
		"$(expected_cipher "$sodium" "$static_sodium")"
else
	echo "not root: the channel between the static binaries is not tried (the daemon serves root)"
fi
echo "PASS"
