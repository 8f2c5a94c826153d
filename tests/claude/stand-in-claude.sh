#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# A stand-in for the `claude` executable's login commands, for tests of sandbox-claude's login
# verbs (the real `claude auth login` needs the vendor's site):
#   claude auth login          prints an authorize URL of the vendor's shape (escape sequences
#                              around it, as a terminal gets it), reads the code from its
#                              terminal; "good-code" writes CLAUDE_CONFIG_DIR/.credentials.json
#                              (a fake token, printed once more after the code) and exits 0,
#                              anything else exits 1
#   claude auth status --json  {"loggedIn": ..., "authMethod": "claude.ai" | "none", ...}
#   claude auth logout         removes the credentials, appends a line to HOME/logouts
# HOME/fake-mode "evil-url" makes auth login print a URL of another site instead.
mode=$(cat "$HOME/fake-mode" 2>/dev/null)
case "$1 $2" in
"auth login")
	echo "Opening browser to sign in..."
	url="https://claude.com/cai/oauth/authorize?code=true&client_id=test&state=$$"
	[ "$mode" = evil-url ] && url="https://evil.example/oauth/authorize?code=true"
	printf "If the browser didn't open, visit: \033[1m%s\033[0m\n" "$url"
	printf 'Paste code here if prompted > '
	IFS= read -r code
	code=${code%$'\r'}
	if [ "$code" = good-code ]; then
		mkdir -p "$CLAUDE_CONFIG_DIR"
		echo '{"claudeAiOauth":{"accessToken":"sk-ant-oat01-fake-secret-token"}}' >"$CLAUDE_CONFIG_DIR/.credentials.json"
		echo "Login successful: sk-ant-oat01-fake-secret-token"
		exit 0
	fi
	echo "Invalid code"
	exit 1 ;;
"auth status")
	if [ -f "$CLAUDE_CONFIG_DIR/.credentials.json" ]; then
		echo '{"loggedIn": true, "authMethod": "claude.ai", "apiProvider": "firstParty"}'
	else
		echo '{"loggedIn": false, "authMethod": "none", "apiProvider": "firstParty"}'
		exit 1
	fi ;;
"auth logout")
	rm -f "$CLAUDE_CONFIG_DIR/.credentials.json"
	echo "$(date +%s%N)" >>"$HOME/logouts"
	echo "Successfully logged out" ;;
*) exit 2 ;;
esac
