#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Runs the test suites and prints one closing line "N passed, N failed, N skipped".
#   tests/run.sh --unit [--build DIR]     Check unit tests and fuzz corpus replay
#   tests/run.sh --integration            tests/integration/test_*.sh (exit 77 = skipped)
#   tests/run.sh --all                    unit tests in build/ and build-san/, replay, integration
#   tests/run.sh --only NAME              one integration script
# Each Check binary counts its own checks; each replay and each integration script counts as one.
set -u
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
failures=() details=()
builds=()
do_unit=0 do_integ=0 only=""

while [ $# -gt 0 ]; do
	case "$1" in
	--unit) do_unit=1 ;;
	--integration) do_integ=1 ;;
	--all) do_unit=1 do_integ=1 ;;
	--build) builds+=("$2"); shift ;;
	--only) do_integ=1 only="$2"; shift ;;
	*) echo "usage: $0 [--unit] [--integration] [--all] [--build DIR] [--only NAME]" >&2; exit 2 ;;
	esac
	shift
done
if [ ${#builds[@]} -eq 0 ]; then
	builds=(build)
	[ -d build-san/tests ] && [ $do_integ -eq 1 ] && builds+=(build-san)
fi

run_unit() {
	local bin=$1 out rc checks fails errs
	out=$(CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-30} "$bin" 2>&1)
	rc=$?
	printf '%s\n' "$out" | grep -v '^Running suite' | sed "s|^|  $(basename "$bin"): |" | grep -v ': 100%:' || true
	if [[ "$out" =~ Checks:\ ([0-9]+),\ Failures:\ ([0-9]+),\ Errors:\ ([0-9]+) ]]; then
		checks=${BASH_REMATCH[1]} fails=${BASH_REMATCH[2]} errs=${BASH_REMATCH[3]}
		passed=$((passed + checks - fails - errs))
		failed=$((failed + fails + errs))
		if [ $((fails + errs)) -gt 0 ]; then
			failures+=("$bin")
			# The failing checks again at the end, where a truncated log still shows them.
			details+=("$bin:"$'\n'"$(printf '%s\n' "$out" | grep -E ':[EF]:' | head -20)")
		fi
		echo "unit $bin: $((checks - fails - errs))/$checks"
	else
		failed=$((failed + 1))
		failures+=("$bin (exit $rc, no Check summary)")
		details+=("$bin (exit $rc), its last lines:"$'\n'"$(printf '%s\n' "$out" | tail -15)")
		echo "unit $bin: FAILED (exit $rc)"
	fi
	[ $rc -ne 0 ] && ! [[ " ${failures[*]} " == *" $bin"* ]] && { failed=$((failed + 1)); failures+=("$bin (exit $rc)"); }
	return 0
}

run_replay() {
	local bin=$1 name corpus
	name=$(basename "$bin")
	corpus=tests/fuzz/corpus/${name#fuzz_}
	if [ ! -d "$corpus" ]; then
		echo "replay $bin: no corpus at $corpus"
		failed=$((failed + 1)); failures+=("$bin (no corpus)")
		return
	fi
	if "$bin" "$corpus" >/tmp/replay.$$ 2>&1; then
		passed=$((passed + 1))
		echo "replay $bin: $(tail -1 /tmp/replay.$$)"
	else
		failed=$((failed + 1)); failures+=("$bin")
		echo "replay $bin: FAILED"; tail -30 /tmp/replay.$$
	fi
	rm -f /tmp/replay.$$
}

run_integration() {
	local t=$1 rc start
	start=$(date +%s)
	echo "=== integration $(basename "$t")"
	bash "$t"
	rc=$?
	case $rc in
	0) passed=$((passed + 1)); echo "--- PASS $(basename "$t") ($(( $(date +%s) - start )) s)" ;;
	77) skipped=$((skipped + 1)); echo "--- SKIP $(basename "$t")" ;;
	*) failed=$((failed + 1)); failures+=("$t"); echo "--- FAIL $(basename "$t") (exit $rc)" ;;
	esac
}

if [ $do_unit -eq 1 ]; then
	for b in "${builds[@]}"; do
		for bin in "$b"/tests/test_*; do
			[ -x "$bin" ] && [ ! -d "$bin" ] && case "$bin" in *.d|*.o) ;; *) run_unit "$bin" ;; esac
		done
		for bin in "$b"/replay/fuzz_*; do
			[ -x "$bin" ] && case "$bin" in *.d|*.o) ;; *) run_replay "$bin" ;; esac
		done
	done
fi
if [ $do_integ -eq 1 ]; then
	for t in tests/integration/test_*.sh; do
		[ -e "$t" ] || continue
		[ -n "$only" ] && [ "$(basename "$t" .sh)" != "$only" ] && [ "$(basename "$t")" != "$only" ] && continue
		run_integration "$t"
	done
fi

if [ ${#failures[@]} -gt 0 ]; then
	echo "failed:"
	printf '  %s\n' "${failures[@]}"
	for d in "${details[@]}"; do
		printf '%s\n' "$d" | sed 's/^/    /'
	done
fi
echo "$passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
