/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl status [--app-dir DIR]: the boot's state as the agent knows it (docs/protocol.md
 * §7.5): {"state": ..., "phase": ..., "since": ..., "reason": ..., "logs": {...}}.
 */
#include "cmd.h"

#include <getopt.h>

#define USAGE "status [--app-dir DIR]"

int cmd_status(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"app-dir", required_argument, NULL, 'a'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *req = NULL;
	const char *app_dir = CTL_DEFAULT_APP_DIR;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c != 'a')
			return cmd_bad_option(ctl, USAGE, c, argv);
		app_dir = optarg;
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	r = session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	req = json_object_new_object();
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	return session_request(s, MSG_STATUS, req, NULL, 0, &ctl->result, &ctl->err);
}
