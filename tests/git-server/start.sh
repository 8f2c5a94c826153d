#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A real git smart-HTTP server for tests: `git http-backend` behind lighttpd on 127.0.0.1,
# requiring HTTP Basic authentication (lighttpd mod_auth, a plain user file).
#
#   tests/git-server/start.sh DIR USER <<<"$TOKEN"
#
# DIR is an existing, empty or fresh directory the server owns: its config, the user file, the
# log and the repositories (DIR/repos/*.git, served as URL/NAME.git) live there. The token is
# read from stdin, never from argv. Prints the base URL (http://127.0.0.1:PORT/git) on stdout
# once the server answers; its pid is in DIR/pid. URL/../moved/NAME.git redirects to
# URL/NAME.git, URL/../offsite/NAME.git to the same under the host name localhost.
# Stop it with tests/git-server/stop.sh DIR.
set -eu

dir=${1:?usage: start.sh DIR USER <<<TOKEN}
user=${2:?usage: start.sh DIR USER <<<TOKEN}
dir=$(cd "$dir" && pwd)
IFS= read -r token || true
[ -n "$token" ] || { echo "start.sh: no token on stdin" >&2; exit 2; }
case "$user$token" in *:* | *$'\n'*) echo "start.sh: user and token may not contain ':'" >&2; exit 2 ;; esac

backend=$(git --exec-path)/git-http-backend
[ -x "$backend" ] || { echo "start.sh: $backend not found" >&2; exit 2; }
command -v lighttpd >/dev/null || { echo "start.sh: lighttpd is not installed" >&2; exit 2; }

mkdir -p "$dir/repos" "$dir/www"
umask 077
printf '%s:%s\n' "$user" "$token" >"$dir/users"
unset token

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

answers() { # answers PORT: anything listening (an HTTP status, even 401)
	local code
	code=$(curl -s -o /dev/null -w '%{http_code}' --noproxy '*' --max-time 2 \
		"http://127.0.0.1:$1/git/" 2>/dev/null) || true
	[ -n "$code" ] && [ "$code" != 000 ]
}

# A port can be taken between choosing and binding it: try a few.
for _ in 1 2 3 4 5; do
	port=$(free_port)
	cat >"$dir/lighttpd.conf" <<CONF
server.modules = ("mod_alias", "mod_redirect", "mod_auth", "mod_authn_file", "mod_cgi", "mod_setenv")
server.bind = "127.0.0.1"
server.port = $port
server.document-root = "$dir/www"
server.errorlog = "$dir/error.log"
server.max-request-size = 0
server.stream-request-body = 0
auth.backend = "plain"
auth.backend.plain.userfile = "$dir/users"
alias.url = ("/git/" => "$backend/")
# Redirects: /moved/ to /git/ on this host, /offsite/ to /git/ under another host name.
url.redirect = (
	"^/moved/(.*)\$" => "http://127.0.0.1:$port/git/\$1",
	"^/offsite/(.*)\$" => "http://localhost:$port/git/\$1"
)
\$HTTP["url"] =~ "^/git/" {
	cgi.assign = ("" => "")
	setenv.set-environment = (
		"GIT_PROJECT_ROOT" => "$dir/repos",
		"GIT_HTTP_EXPORT_ALL" => "1",
		"PATH" => "/usr/local/bin:/usr/bin:/bin",
		"HOME" => "$dir"
	)
	auth.require = ("" => ("method" => "basic", "realm" => "git", "require" => "valid-user"))
	# mod_auth (listed before mod_setenv) has checked the header by now; drop it so the CGI
	# processes never carry the credential in their environment (lighttpd passes it on as
	# HTTP_AUTHORIZATION otherwise).
	setenv.set-request-header = ("Authorization" => "")
}
CONF
	lighttpd -D -f "$dir/lighttpd.conf" </dev/null >>"$dir/error.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/pid"
	for _ in $(seq 1 200); do
		if ! kill -0 "$pid" 2>/dev/null; then
			break
		fi
		if answers "$port"; then
			echo "http://127.0.0.1:$port/git"
			exit 0
		fi
		sleep 0.05
	done
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
	rm -f "$dir/pid"
done
echo "start.sh: lighttpd did not start; see $dir/error.log" >&2
tail -5 "$dir/error.log" >&2 || true
exit 1
