#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A hostile app's setup step: every process environment and command line it can read, searched
# for $1 (tests/integration/test_two_apps.sh); prints where it found it.
for p in /proc/[0-9]*; do
	if tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qF -- "$1"; then
		echo "$p/environ"
	fi
done
