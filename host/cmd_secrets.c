/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl secrets put --scope fetch|boot|session NAME...
 * sandbox-ctl secrets drop NAME... | --scope SCOPE
 *
 * Values come from stdin as one JSON object {"NAME": "value", ...}, never from argv (which
 * every user of the host can read in /proc) nor from a file named in argv (which lands in
 * shell histories and logs). Each value travels in the data part of its own secrets.put
 * message (docs/protocol.md §7.2), never inside JSON. Every copy this process holds is wiped
 * before it is freed: the stdin buffer (guarded memory), json-c's strings and its parse buffer.
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <sodium.h>
#include <string.h>
#include <unistd.h>

#include <json-c/printbuf.h>

#include "json_wipe.h"
#include "keys.h"
#include "strv.h"

#define USAGE_PUT "secrets put --scope fetch|boot|session NAME... < values.json"
#define USAGE_DROP "secrets drop NAME... | --scope fetch|boot|session"
#define USAGE "secrets put|drop ..."
#define STDIN_MAX (1024 * 1024)

static bool scope_valid(const char *s)
{
	return strcmp(s, "fetch") == 0 || strcmp(s, "boot") == 0 || strcmp(s, "session") == 0;
}

/* Read all of stdin into guarded memory, NUL-terminated. */
static int read_stdin(char **ret, size_t *ret_len, struct err *err)
{
	size_t len = 0;
	char *buf;

	if (keys_sodium_init(err) < 0)
		return err_ret(err);
	buf = sodium_malloc(STDIN_MAX + 1);
	if (!buf)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	for (;;) {
		ssize_t n = read(STDIN_FILENO, buf + len, STDIN_MAX + 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			sodium_free(buf);
			return err_errno(err, "cannot read the secrets from stdin");
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > STDIN_MAX) {
			sodium_free(buf);
			return err_set(err, ERR_REFUSED, EFBIG,
			               "the secrets on stdin are over %d bytes", STDIN_MAX);
		}
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Wipe every string of the document (nested ones too), then put it. */
static void values_free(struct json_object *obj)
{
	if (!obj)
		return;
	json_wipe_strings(obj);
	json_object_put(obj);
}

/* Parse stdin's object; json-c's scratch buffer held the values too: wipe it. */
static int parse_values(const char *buf, size_t len, struct json_object **ret, struct err *err)
{
	struct json_tokener *tok = json_tokener_new_ex(4);
	struct json_object *obj;
	enum json_tokener_error jerr;
	size_t end;

	if (!tok)
		return err_oom(err);
	obj = json_tokener_parse_ex(tok, buf, (int)len);
	jerr = json_tokener_get_error(tok);
	end = json_tokener_get_parse_end(tok);
	/* json-c 0.16 keeps the last string it read in tok->pb. */
	if (tok->pb && tok->pb->buf)
		sodium_memzero(tok->pb->buf, (size_t)tok->pb->size);
	json_tokener_free(tok);
	if (!obj || jerr != json_tokener_success) {
		values_free(obj);
		return err_set(err, ERR_REFUSED, EINVAL,
		               "stdin is not one JSON object of secrets {\"NAME\": \"value\"}: %s",
		               obj ? "it ends too early" : json_tokener_error_desc(jerr));
	}
	for (; end < len; end++)
		if (!strchr(" \t\r\n", buf[end])) {
			values_free(obj);
			return err_set(err, ERR_REFUSED, EINVAL,
			               "stdin holds more than one JSON object of secrets");
		}
	if (!json_object_is_type(obj, json_type_object)) {
		values_free(obj);
		return err_set(err, ERR_REFUSED, EINVAL,
		               "stdin is not a JSON object of secrets {\"NAME\": \"value\"}");
	}
	*ret = obj;
	return 0;
}

/* Every name on the command line is in the object as a string, and nothing else is. */
static int check_names(struct json_object *values, char **names, int n, struct err *err)
{
	for (int i = 0; i < n; i++) {
		struct json_object *v;
		if (!strv_env_name_valid(names[i]))
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "invalid secret name '%s' (letters, digits and _, not starting "
			    "with a digit)",
			    names[i]);
		for (int j = 0; j < i; j++)
			if (strcmp(names[i], names[j]) == 0)
				return err_set(err, ERR_REFUSED, EINVAL, "%s is named twice",
				               names[i]);
		if (!json_object_object_get_ex(values, names[i], &v))
			return err_set(err, ERR_REFUSED, ENOENT, "%s is not in the object on stdin",
			               names[i]);
		if (!json_object_is_type(v, json_type_string))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the value of %s on stdin is not a string", names[i]);
	}
	json_object_object_foreach(values, key, val)
	{
		bool named = false;
		(void)val;
		for (int i = 0; i < n && !named; i++)
			named = strcmp(key, names[i]) == 0;
		if (!named)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "stdin holds %s, which is not named on the command line: "
			               "name every secret to send, and only those",
			               key);
	}
	return 0;
}

static int put(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"scope", required_argument, NULL, 's'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	struct json_object *values = NULL, *done = NULL;
	const char *scope = NULL;
	char *buf = NULL;
	size_t len = 0;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 's')
			scope = optarg;
		else
			return cmd_bad_option(ctl, USAGE_PUT, c, argv);
	}
	if (!scope || !scope_valid(scope))
		return cmd_usage(ctl, USAGE_PUT, "--scope must be fetch, boot or session");
	if (optind == argc)
		return cmd_usage(ctl, USAGE_PUT, "name the secrets to send");
	if (isatty(STDIN_FILENO) == 1)
		output_note(&ctl->out, "reading the secrets from stdin as a JSON object");
	r = read_stdin(&buf, &len, &ctl->err);
	if (r == 0) {
		r = parse_values(buf, len, &values, &ctl->err);
		sodium_free(buf);
	}
	if (r == 0)
		r = check_names(values, argv + optind, argc - optind, &ctl->err);
	if (r < 0) {
		values_free(values);
		return output_exit_of(&ctl->err);
	}
	/* Connect only once the input is known to be right. */
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r == 0 && !connect_session_has_capability(s, "secrets")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not take secrets");
		r = CTL_EXIT_REFUSED;
	}
	done = json_object_new_array();
	for (int i = optind; r == 0 && i < argc; i++) {
		_cleanup_json_ struct json_object *req = json_object_new_object();
		struct json_object *v, *reply = NULL;
		json_object_object_get_ex(values, argv[i], &v);
		json_object_object_add(req, "name", json_object_new_string(argv[i]));
		json_object_object_add(req, "scope", json_object_new_string(scope));
		r = connect_session_request(s, MSG_SECRETS_PUT, req, json_object_get_string(v),
		                            (size_t)json_object_get_string_len(v), &reply,
		                            &ctl->err);
		if (r != 0) {
			err_wrap(&ctl->err, "cannot put %s", argv[i]);
			break;
		}
		json_object_array_add(done, reply);
		output_detail(&ctl->out, "put %s (%s)", argv[i], scope);
	}
	values_free(values);
	ctl->result = json_object_new_object();
	json_object_object_add(ctl->result, "put", done);
	if (r != 0) {
		struct json_object *e = output_error_doc(&ctl->err);
		json_object_object_add(ctl->result, "error",
		                       json_object_get(json_object_object_get(e, "error")));
		json_object_put(e);
	}
	return r;
}

static int drop(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"scope", required_argument, NULL, 's'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ struct json_object *req = json_object_new_object();
	const char *scope = NULL;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 's')
			scope = optarg;
		else
			return cmd_bad_option(ctl, USAGE_DROP, c, argv);
	}
	if ((scope != NULL) == (optind < argc))
		return cmd_usage(ctl, USAGE_DROP, "name the secrets or a scope, not both");
	if (scope && !scope_valid(scope))
		return cmd_usage(ctl, USAGE_DROP, "--scope must be fetch, boot or session");
	if (scope) {
		json_object_object_add(req, "scope", json_object_new_string(scope));
	} else {
		struct json_object *names = json_object_new_array();
		json_object_object_add(req, "names", names);
		for (int i = optind; i < argc; i++) {
			if (!strv_env_name_valid(argv[i]))
				return cmd_usage(ctl, USAGE_DROP, "invalid secret name '%s'",
				                 argv[i]);
			json_object_array_add(names, json_object_new_string(argv[i]));
		}
	}
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	return connect_session_request(s, MSG_SECRETS_DROP, req, NULL, 0, &ctl->result, &ctl->err);
}

int cmd_secrets(struct ctl *ctl, int argc, char **argv)
{
	if (argc < 2)
		return cmd_usage(ctl, USAGE, "put or drop?");
	if (strcmp(argv[1], "put") == 0)
		return put(ctl, argc - 1, argv + 1);
	if (strcmp(argv[1], "drop") == 0)
		return drop(ctl, argc - 1, argv + 1);
	return cmd_usage(ctl, USAGE, "unknown action '%s'", argv[1]);
}
