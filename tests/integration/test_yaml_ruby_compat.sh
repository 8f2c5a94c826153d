#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The env values of .activeagents/sandbox.yml must become the strings the upstream engine gave
# them: Ruby's YAML.safe_load (Psych, YAML 1.1) and #to_s. This feeds every scalar of
# tests/data/yaml_scalars/corpus.txt through Ruby and through our parser
# (tests/tools/yaml_env_dump.c, built here against build/) and fails on any difference, in the
# value or in accepting versus refusing.
. "$(dirname "$0")/lib.sh"
cd "$ROOT" || exit 1

corpus=tests/data/yaml_scalars/corpus.txt
if ! command -v ruby >/dev/null 2>&1 || ! ruby -ryaml -e '' 2>/dev/null; then
	skip "ruby with its yaml library is not installed; it is the reference here"
fi
if [ ! -f build/libsandbox-guest.a ] || [ ! -f build/libsandbox-common.a ]; then
	skip "build/ has no libraries; run make first"
fi

tmp=$TMP

# shellcheck disable=SC2046
if ! ${CC:-cc} -std=gnu11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror $(layer_includes) \
	-o "$tmp/dump" tests/tools/yaml_env_dump.c build/libsandbox-guest.a build/libsandbox-common.a \
	$(pkg-config --libs yaml-0.1 json-c libcurl libgit2 libsodium); then
	echo "FAIL: cannot build tests/tools/yaml_env_dump.c"
	exit 1
fi

cat >"$tmp/reference.rb" <<'RUBY'
require 'yaml'
ARGV.each do |f|
  begin
    v = YAML.safe_load(File.read(f))["env"]["V"]
    if v.nil? || v.is_a?(Array) || v.is_a?(Hash)
      puts "ERR\t#{v.class}"
    else
      s = v.to_s
      # An environment cannot hold NUL: the upstream engine failed on it when spawning.
      puts(s.include?("\0") ? "ERR\tNUL" : "OK #{s.unpack1('H*')}")
    end
  rescue Exception => e
    puts "ERR\t#{e.class}: #{e.message.lines.first.to_s.chomp[0, 80]}"
  end
end
RUBY

nl=$'\n    '
entries=()
files=()
n=0
while IFS= read -r line; do
	case "$line" in '#'* | '') continue ;; esac
	n=$((n + 1))
	value=$line
	[ "$value" = "<empty>" ] && value=""
	value=${value//⏎/$nl}
	f=$(printf '%s/%04d.yml' "$tmp" "$n")
	printf 'env:\n  V: %s\n' "$value" >"$f"
	entries+=("$line")
	files+=("$f")
done <"$corpus"

if [ "$n" -lt 150 ]; then
	echo "FAIL: the corpus has $n scalars, fewer than 150"
	exit 1
fi

ruby "$tmp/reference.rb" "${files[@]}" >"$tmp/ruby.out" 2>"$tmp/ruby.err"
"$tmp/dump" "${files[@]}" >"$tmp/ours.out"
mapfile -t theirs <"$tmp/ruby.out"
mapfile -t ours <"$tmp/ours.out"
if [ ${#theirs[@]} -ne "$n" ] || [ ${#ours[@]} -ne "$n" ]; then
	echo "FAIL: expected $n results, Ruby gave ${#theirs[@]}, we gave ${#ours[@]}"
	cat "$tmp/ruby.err"
	exit 1
fi

# "OK <hex>" shown as the decoded value, quoted so that odd bytes stay visible.
# shellcheck disable=SC2001
show() {
	case "$1" in
	OK\ *) printf 'OK %q' "$(printf '%b' "$(sed 's/../\\x&/g' <<<"${1#OK }")")" ;;
	*) printf '%s' "$1" ;;
	esac
}

diffs=0 refused=0
for ((i = 0; i < n; i++)); do
	a=${theirs[i]%%$'\t'*}
	b=${ours[i]%%$'\t'*}
	[ "$b" = ERR ] && refused=$((refused + 1))
	if [ "$a" != "$b" ]; then
		diffs=$((diffs + 1))
		echo "DIFF: V: ${entries[i]}"
		echo "   ruby: $(show "${theirs[i]}")"
		echo "   ours: $(show "${ours[i]}")"
	fi
done
echo "$n scalars compared with $(ruby -e 'print RUBY_VERSION') / Psych $(ruby -ryaml -e 'print Psych::VERSION'): $((n - refused)) converted, $refused refused, $diffs differences"
[ "$diffs" -eq 0 ]
