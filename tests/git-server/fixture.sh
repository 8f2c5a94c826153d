#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Builds test repositories with the git CLI (tests only; the library never runs git).
#
#   fixture.sh REPOS NAME            the standard repository REPOS/NAME.git
#   fixture.sh REPOS NAME escape DIR a repository whose one commit holds a symlink `link -> DIR`
#                                    and a file `link/x` in the same tree
#   fixture.sh REPOS NAME relink DIR two commits: `link -> DIR` (a symlink), then `link/x` (a
#                                    directory where the symlink was)
#
# Prints KEY=VALUE lines on stdout (commit and object ids) and writes them to REPOS/NAME.ids.
#
# The standard repository: branch main with commits c1..c4 (a subdirectory, an executable, a
# relative and an absolute symlink, a 512 KiB blob), an annotated tag v1 on c2, a lightweight
# tag v0 on c1, branch feature off c2; c3 is the tip of nothing. HEAD -> main.
set -eu

repos=${1:?usage: fixture.sh REPOS NAME [escape|relink DIR]}
name=${2:?usage: fixture.sh REPOS NAME [escape|relink DIR]}
kind=${3:-standard}
target=${4:-}

export GIT_AUTHOR_NAME=Fixture GIT_AUTHOR_EMAIL=fixture@example.invalid
export GIT_COMMITTER_NAME=Fixture GIT_COMMITTER_EMAIL=fixture@example.invalid
export GIT_AUTHOR_DATE='2024-01-02T03:04:05Z' GIT_COMMITTER_DATE='2024-01-02T03:04:05Z'
export GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
g() { git -c init.defaultBranch=main -c core.symlinks=true "$@"; }

mkdir -p "$repos"
bare=$repos/$name.git
work=$(mktemp -d "${TMPDIR:-/tmp}/fixture.XXXXXX")
trap 'rm -rf "$work"' EXIT
g init -q --bare "$bare"
g init -q "$work/w"
cd "$work/w"
out=$work/ids

case "$kind" in
standard)
	mkdir -p src/lib
	echo "first" >README
	printf 'print("hello")\n' >src/main.py
	g add -A && g commit -q -m "first"
	echo "c1=$(g rev-parse HEAD)" >>"$out"
	g tag v0

	printf '#!/bin/sh\necho run\n' >run.sh && chmod 755 run.sh
	ln -s README readme-link
	ln -s /etc abs-link
	echo "lib" >src/lib/util.py
	head -c 524288 /dev/urandom >src/lib/blob.bin
	g add -A && g commit -q -m "second"
	echo "c2=$(g rev-parse HEAD)" >>"$out"
	g tag -a -m "version 1" v1
	echo "tag_v1=$(g rev-parse v1)" >>"$out"

	g checkout -q -b feature
	echo "feature" >feature.txt
	g add -A && g commit -q -m "feature"
	echo "feature=$(g rev-parse HEAD)" >>"$out"

	g checkout -q main
	echo "third" >>README
	g rm -q src/main.py
	g add -A && g commit -q -m "third"
	echo "c3=$(g rev-parse HEAD)" >>"$out"
	echo "fourth" >fourth.txt
	g add -A && g commit -q -m "fourth"
	echo "c4=$(g rev-parse HEAD)" >>"$out"
	g push -q "$bare" main feature v0 v1
	;;
escape)
	[ -n "$target" ] || { echo "fixture.sh: escape needs DIR" >&2; exit 2; }
	echo "payload" >x
	blob_x=$(g hash-object -w x)
	blob_link=$(printf '%s' "$target" | g hash-object -w --stdin)
	sub=$(printf '100644 blob %s\tx\n' "$blob_x" | g mktree)
	# One tree holding both `link` (a symlink) and `link/` (a directory): git mktree takes it.
	tree=$(printf '120000 blob %s\tlink\n040000 tree %s\tlink\n100644 blob %s\tREADME\n' \
		"$blob_link" "$sub" "$blob_x" | g mktree)
	commit=$(echo "escape" | g commit-tree "$tree")
	g update-ref refs/heads/main "$commit"
	echo "c1=$commit" >>"$out"
	g push -q "$bare" main
	;;
relink)
	[ -n "$target" ] || { echo "fixture.sh: relink needs DIR" >&2; exit 2; }
	ln -s "$target" link
	g add -A && g commit -q -m "link"
	echo "c1=$(g rev-parse HEAD)" >>"$out"
	rm link && mkdir link && echo "payload" >link/x
	g add -A && g commit -q -m "dir"
	echo "c2=$(g rev-parse HEAD)" >>"$out"
	g push -q "$bare" main
	;;
*)
	echo "fixture.sh: unknown kind $kind" >&2
	exit 2
	;;
esac
g -C "$bare" symbolic-ref HEAD refs/heads/main
cp "$out" "$repos/$name.ids"
cat "$out"
