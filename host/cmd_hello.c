/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl hello: connect, authenticate, and print what the agent said about itself, with
 * the fingerprint of the key it proved and what happened to its pin.
 */
#include "cmd.h"

#include <getopt.h>
#include <string.h>

#define USAGE "hello"

int cmd_hello(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {{0}};
	_cleanup_session_ struct session *s = NULL;
	static const char *const pin_names[] = {"match", "added", "replaced"};
	struct json_object *doc;
	int c, r;

	optind = 0;
	opterr = 0;
	c = getopt_long(argc, argv, ":", opts, NULL);
	if (c != -1)
		return cmd_bad_option(ctl, USAGE, c, argv);
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	doc = json_object_new_object();
	if (!doc) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	/* Everything the agent said, then what we know about the connection. */
	json_object_object_foreach(s->guest_hello, key, val)
	{
		json_object_object_add(doc, key, json_object_get(val));
	}
	json_object_object_add(doc, "guest_key",
	                       json_object_new_string(channel_peer_fingerprint(s->ch)));
	json_object_object_add(doc, "pinned_as", json_object_new_string(s->instance));
	json_object_object_add(doc, "pin", json_object_new_string(pin_names[s->pin]));
	json_object_object_add(doc, "protocol", json_object_new_int(channel_version(s->ch)));
	json_object_object_add(doc, "session", json_object_new_string(channel_session_name(s->ch)));
	json_object_object_add(doc, "cipher", json_object_new_string(channel_cipher_name(s->ch)));
	json_object_object_add(doc, "address", json_object_new_string(s->stream.what));
	ctl->result = doc;
	return CTL_EXIT_OK;
}
