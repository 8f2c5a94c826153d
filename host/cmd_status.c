/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl status [--app-dir DIR]: the boot's state as the agent knows it (docs/protocol.md
 * §7.5): {"status": ..., "boot_id": ..., "phase": ..., "since": ..., "cause": ...,
 * "reason": ..., "logs": {...}}.
 */
#include "cmd.h"

int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	return cmd_app_request(ctl, argc, argv, "status [--app-dir DIR]", MSG_STATUS);
}
