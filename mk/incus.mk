# SPDX-License-Identifier: Apache-2.0
#
# make test-incus: the minimal image in a real Incus daemon (tests/integration/test_incus.sh,
# tests/incus/README.md): Incus 6.0 from bookworm-backports through a private apt state, a
# private incusd in its own network and mount namespaces, the directory and spec shapes of the
# boot and `sandbox-ctl --incus` against one container. Runs as root.
#   make test-incus [INCUS_FULL=1]    INCUS_FULL=1 builds the full image when it is not cached
#   make incus-install                        only install Incus 6.0 (tests/incus/install.sh)

.PHONY: test-incus incus-install

incus-install:
	tests/incus/install.sh

test-incus: all
	tests/run.sh --only test_incus
