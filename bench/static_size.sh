#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# The static binaries' stripped sizes, and what each library takes in sandbox-agent by its link
# map (packaging/static/size-report.py), after `make static`. Prints figure lines for
# scripts/figures.py.
set -euo pipefail
cd "$(dirname "$0")/.."
S=build-static
for b in sandbox-agent sandbox-ctl; do
	[ -f "$S/stripped/$b" ] && [ -f "$S/$b.map" ] || {
		echo "static_size: $S/$b or its link map is missing: run make static" >&2
		exit 1
	}
done
agent=$(stat -c %s "$S/stripped/sandbox-agent")
ctl=$(stat -c %s "$S/stripped/sandbox-ctl")
parts=$(packaging/static/size-report.py "$S/sandbox-agent.map" |
	awk '$1 >= 10000 {sub(/^lib/, "", $2); sub(/\.a$/, "", $2); printf "%s%s %d KB", sep, $2, $1 / 1000; sep = ", "}')
echo "sandbox-agent, stripped: $agent bytes; sandbox-ctl: $ctl bytes"
# The code segment starts and ends on pages of its own (-z separate-code, mk/static.mk): a few
# bytes more code past its last page cost the file 4096. Say how close the next page is.
code=$(readelf -lW "$S/stripped/sandbox-agent" | awk '$1 == "LOAD" && $7 == "R" && $8 == "E" {print $5}')
echo "sandbox-agent's code segment: $(((4096 - code % 4096) % 4096)) bytes short of its next page"
echo "by its link map: $parts"
printf 'figure: static `sandbox-agent`, stripped, every feature (libgit2 with SHA-1 collision detection, libcurl, mbedTLS, libyaml, json-c, libsodium) | %s bytes (by a link map: %s); static `sandbox-ctl` %s bytes | <= 1.5 MB\n' \
	"$agent" "$parts" "$ctl"
