/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl verify (docs/isolation.md "verify"): proves the guest's confinement with four
 * checks, run by the guest's daemon from what the host sends (protocol: "verify"):
 *   1. kernel_or_namespaces: the guest runs another kernel (boot id) or other mount, pid and
 *      network namespaces than this host;
 *   2. host_file_unreachable: a file made here with a random token cannot be read at its path
 *      in the guest;
 *   3. allowed_endpoint_answers: --allowed answers through --proxy;
 *   4. others_refused: every --forbidden URL and the metadata addresses are refused, directly
 *      and through the proxy.
 * One JSON document with each check; exit 1 when any failed. The guest records the result;
 * a coding session refuses to start until it passed.
 */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "file.h"
#include "sysid.h"

#define USAGE "verify --proxy URL --allowed URL [--forbidden URL]... [--host-file DIR]"
#define FORBIDDEN_MAX 6

/* The token file: DIR/sandbox-verify.XXXXXX/token, world-readable (only the guest's view of
 * it is in question), removed afterwards. */
struct token_file {
	char dir[PATH_MAX];
	char path[PATH_MAX + 16];
	char token[33];
};

static int token_file_make(struct token_file *t, const char *base, struct err *err)
{
	unsigned char raw[16];
	_cleanup_close_ int fd = -1;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return err_errno(err, "cannot read random bytes for the token");
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(t->token + 2 * i, 3, "%02x", raw[i]);
	if ((size_t)snprintf(t->dir, sizeof(t->dir), "%s/sandbox-verify.XXXXXX", base) >=
	    sizeof(t->dir))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "--host-file: the path is too long");
	if (!mkdtemp(t->dir))
		return err_errno(err, "cannot make a directory in %s for the token file", base);
	chmod(t->dir, 0755);
	snprintf(t->path, sizeof(t->path), "%s/token", t->dir);
	fd = open(t->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 || file_write_all(fd, t->token, strlen(t->token)) < 0)
		return err_errno(err, "cannot write the token file %s", t->path);
	return 0;
}

static void token_file_remove(struct token_file *t)
{
	if (t->path[0])
		unlink(t->path);
	if (t->dir[0])
		rmdir(t->dir);
}

int cmd_verify(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"proxy", required_argument, NULL, 'p'},
	    {"allowed", required_argument, NULL, 'a'},
	    {"forbidden", required_argument, NULL, 'f'},
	    {"host-file", required_argument, NULL, 'h'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object *forbidden = json_object_new_array(), *hf, *v, *reply = NULL;
	const char *proxy = NULL, *allowed = NULL, *base = "/tmp";
	struct token_file t = {.dir = ""};
	uint64_t t0 = clock_now_ms();
	int c, r;

	if (!req || !forbidden) {
		json_object_put(forbidden);
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	json_object_object_add(req, "forbidden", forbidden);
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			proxy = optarg;
			break;
		case 'a':
			allowed = optarg;
			break;
		case 'f':
			if (json_object_array_length(forbidden) == FORBIDDEN_MAX)
				return cmd_usage(ctl, USAGE,
				                 "at most %d --forbidden URLs (the metadata "
				                 "addresses are always tried)",
				                 FORBIDDEN_MAX);
			json_object_array_add(forbidden, json_object_new_string(optarg));
			break;
		case 'h':
			base = optarg;
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (!proxy || !allowed)
		return cmd_usage(ctl, USAGE,
		                 "--proxy and --allowed are required (the proxy the guest reaches, "
		                 "one URL of the allowlist)");
	json_object_object_add(req, "proxy", json_object_new_string(proxy));
	json_object_object_add(req, "allowed", json_object_new_string(allowed));
	json_object_object_add(req, "host", sysid_json());
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	if (!connect_session_has_capability(s, "verify")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP,
		        "the agent cannot run the confinement checks (it is older than verify): "
		        "install this version's sandbox-agent in the image");
		return CTL_EXIT_REFUSED;
	}
	if (token_file_make(&t, base, &ctl->err) < 0) {
		token_file_remove(&t);
		return CTL_EXIT_FAILED;
	}
	hf = json_object_new_object();
	json_object_object_add(hf, "path", json_object_new_string(t.path));
	json_object_object_add(hf, "token", json_object_new_string(t.token));
	json_object_object_add(req, "host_file", hf);
	r = connect_session_request(s, MSG_VERIFY, req, NULL, 0, &reply, &ctl->err);
	token_file_remove(&t);
	if (r != 0)
		return r;
	json_object_object_add(reply, "elapsed_ms",
	                       json_object_new_int64((int64_t)(clock_now_ms() - t0)));
	ctl->result = reply;
	if (!json_object_object_get_ex(reply, "confined", &v) || !json_object_get_boolean(v)) {
		err_set(&ctl->err, ERR_FAILED, EPERM,
		        "the sandbox is not confined: a check failed (see \"checks\"); coding "
		        "sessions will refuse to start there");
		return CTL_EXIT_FAILED;
	}
	return CTL_EXIT_OK;
}
