/* SPDX-License-Identifier: Apache-2.0 */
/* The runner process a boot, stop or fetch runs in (docs/daemon.md, "The boot runner"). */
#ifndef SA_SERVE_RUNNER_H
#define SA_SERVE_RUNNER_H

/* The boot runner: the request arrives on fd (docs/daemon.md, "The boot runner"). */
int serve_runner_main(int fd);

#endif
