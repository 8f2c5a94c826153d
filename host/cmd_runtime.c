/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl runtime [--app-dir DIR]: the app's runtime.json, as {"runtime": {...}}. It holds
 * the app's MCP token (that is the contract): the channel is encrypted, stdout is the caller's.
 */
#include "cmd.h"

int cmd_runtime(struct ctl *ctl, int argc, char **argv)
{
	return cmd_app_request(ctl, argc, argv, "runtime [--app-dir DIR]", MSG_RUNTIME_READ);
}
