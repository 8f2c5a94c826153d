# SPDX-License-Identifier: Apache-2.0
# Sourced by the re-sync tests after lib_git_channel.sh: one app in $TMP/ws/app re-synced from the
# git test server. Sets APP and STATE; commit MESSAGE pushes what changed in $SRC to the server,
# checkout checks the server's main out into APP, boot boots it with --wait (each leaves its exit
# status in RC and prints its error when it failed).
APP=$TMP/ws/app
mkdir -p "$TMP/ws"
STATE=$TMP/ws/.sandbox/state.json
on_exit "'$CTL' --connect '$A' stop --app-dir '$APP' --grace 1"
commit() {
	(cd "$SRC" && git add -A && git -c user.name=t -c user.email=t@example.com commit -qm "$1" &&
		git push -q "$SRV/repos/app.git" main)
}
checkout() {
	spec "$TOKEN" main | "$CTL" --timeout 120 --connect "$A" checkout --spec - --app-dir "$APP" >"$OUT" 2>"$ERR"
	RC=$?
	[ "$RC" -eq 0 ] || cat "$ERR"
}
boot() {
	"$CTL" --timeout 300 --connect "$A" boot --app-dir "$APP" --wait --deadline 300 >"$TMP/boot.out" 2>"$TMP/boot.err"
	RC=$?
	[ "$RC" -eq 0 ] || cat "$TMP/boot.err" "$TMP/agent.log"
}
