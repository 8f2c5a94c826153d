/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl stop [--app-dir DIR] [--discard] [--grace S]: stop every process of the boot and
 * keep the files, or with --discard also drop the databases and remove the workspace
 * (docs/design.md). Prints the agent's {"stopped": bool}.
 */
#include "cmd.h"

#include <getopt.h>

#define USAGE "stop [--app-dir DIR] [--discard] [--grace S]"
#define GRACE_MAX_MS (3600 * 1000)

int cmd_stop(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"app-dir", required_argument, NULL, 'a'},
	    {"discard", no_argument, NULL, 'd'},
	    {"grace", required_argument, NULL, 'g'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *req = NULL;
	const char *app_dir = CTL_DEFAULT_APP_DIR;
	int64_t grace_ms = -1;
	bool discard = false;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 'a')
			app_dir = optarg;
		else if (c == 'd')
			discard = true;
		else if (c == 'g' && cmd_parse_seconds(optarg, GRACE_MAX_MS, &grace_ms) == 0)
			continue;
		else if (c == 'g')
			return cmd_usage(ctl, USAGE, "--grace wants seconds, not '%s'", optarg);
		else
			return cmd_bad_option(ctl, USAGE, c, argv);
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	req = json_object_new_object();
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "discard", json_object_new_boolean(discard));
	/* Whole seconds, as the agent takes them; a fraction rounds up. */
	if (grace_ms >= 0)
		json_object_object_add(req, "grace",
		                       json_object_new_int64((grace_ms + 999) / 1000));
	/* Stopping waits out the grace period (10 s by default) before the reply. */
	s->timeout_ms += (int)(grace_ms >= 0 ? (grace_ms + 999) / 1000 * 1000 : 10000);
	return connect_session_request(s, MSG_STOP, req, NULL, 0, &ctl->result, &ctl->err);
}
