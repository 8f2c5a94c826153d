#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Installs the real Claude Code CLI from the npm registry into a cache outside the clone and
# prints the path of its `claude` executable:
#
#   tests/claude/install-cli.sh [VERSION]        (default 2.1.197)
#
# The cache is ~/.cache/sandbox-app-runtime/claude-code-VERSION/ (XDG_CACHE_HOME honoured),
# keyed by version. A second call finds it and prints the path at once. The install goes into a
# temporary directory beside it, is checked (the binary runs `--version`), and is then renamed
# into place, so an interrupted or concurrent install never leaves a half cache behind.
# node_modules/.bin/claude is a native binary, brought by the optional dependency
# @anthropic-ai/claude-code-linux-x64 and linked by the package's postinstall.
# Node and npm are Debian's (installed through apt when missing).
set -eu

version=${1:-${CLAUDE_CODE_VERSION:-2.1.197}}
case "$version" in
*[!0-9.]* | "") echo "install-cli.sh: bad version '$version'" >&2; exit 2 ;;
esac
cache=${XDG_CACHE_HOME:-$HOME/.cache}/sandbox-app-runtime
dest=$cache/claude-code-$version
bin=$dest/node_modules/.bin/claude

if [ -x "$bin" ]; then
	echo "$bin"
	exit 0
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	[ "$(id -u)" -eq 0 ] || { echo "install-cli.sh: node/npm missing and not root" >&2; exit 1; }
	echo "install-cli.sh: installing nodejs and npm from Debian" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=900 update -qq >&2 || true
	apt-get -o DPkg::Lock::Timeout=900 install -y -qq nodejs npm >&2
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.claude-code-$version.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
chmod 755 "$tmp"
printf '{"name":"claude-code-cache","private":true}\n' >"$tmp/package.json"
# The package's own cache and logs stay inside the temporary directory.
if ! (cd "$tmp" && npm install --no-audit --no-fund --no-update-notifier --loglevel=error \
	--cache "$tmp/.npm" "@anthropic-ai/claude-code@$version" >&2); then
	echo "install-cli.sh: npm install @anthropic-ai/claude-code@$version failed" >&2
	exit 1
fi
rm -rf "$tmp/.npm"
if ! [ -x "$tmp/node_modules/.bin/claude" ]; then
	echo "install-cli.sh: no node_modules/.bin/claude after the install" >&2
	exit 1
fi
if ! got=$(DISABLE_AUTOUPDATER=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
	CLAUDE_CONFIG_DIR="$tmp/.config" HOME="$tmp" timeout 60 \
	"$tmp/node_modules/.bin/claude" --version 2>&1); then
	echo "install-cli.sh: the installed claude does not run: $got" >&2
	exit 1
fi
rm -rf "$tmp/.config" "$tmp/.claude.json" "$tmp"/.claude*
case "$got" in
"$version"*) ;;
*) echo "install-cli.sh: claude --version says '$got', wanted $version" >&2; exit 1 ;;
esac

# Atomic: a rename of the finished tree. Another install that finished first wins.
if ! mv -T "$tmp" "$dest" 2>/dev/null; then
	[ -x "$bin" ] || { echo "install-cli.sh: could not move the install to $dest" >&2; exit 1; }
	rm -rf "$tmp"
fi
trap - EXIT
echo "$bin"
