/* SPDX-License-Identifier: Apache-2.0 */
/* What the guest runs in: a container shares the machine's kernel (and its vsock). */
#ifndef SA_VIRT_H
#define SA_VIRT_H

#include <stdbool.h>

/*
 * true inside a container: systemd's /run/systemd/container (written by systemd, Incus/LXC,
 * nspawn, podman), or a `container=` variable in PID 1's environment. root is the directory
 * those paths are looked up under ("/" normally; tests pass another).
 */
bool virt_in_container(const char *root);

#endif
