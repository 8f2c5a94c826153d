/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl keygen [--out PATH] [--comment TEXT] [--force]: the host's identity key. The
 * secret goes to PATH (0600, in a 0700 directory made when missing), the public line to
 * PATH.pub; the public line is what the guest's authorized keys list.
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file.h"
#include "keys.h"

#define USAGE "keygen [--out PATH] [--comment TEXT] [--force]"

static char *default_comment(void)
{
	char host[HOST_NAME_MAX + 1] = "localhost";
	struct passwd *pw = getpwuid(getuid());
	char *s;

	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	if (asprintf(&s, "sandbox-ctl %s@%s", pw ? pw->pw_name : "user", host) < 0)
		return NULL;
	return s;
}

int cmd_keygen(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"out", required_argument, NULL, 'o'},
	    {"comment", required_argument, NULL, 'c'},
	    {"force", no_argument, NULL, 'f'},
	    {0},
	};
	_cleanup_keypair_ struct keypair *kp = NULL;
	_cleanup_free_ char *comment = NULL, *pub_path = NULL, *dir = NULL, *line = NULL;
	const char *path = ctl->so.key_path;
	char fp[KEYS_FINGERPRINT_MAX];
	struct json_object *doc;
	bool force = false;
	struct stat st;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			path = optarg;
			break;
		case 'c':
			free(comment);
			comment = strdup(optarg);
			break;
		case 'f':
			force = true;
			break;
		default:
			return cmd_bad_option(ctl, USAGE, c, argv);
		}
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (!force && lstat(path, &st) == 0) {
		err_set(
		    &ctl->err, ERR_REFUSED, EEXIST,
		    "%s exists already: keygen never replaces a key (remove it, or pass --force)",
		    path);
		return CTL_EXIT_REFUSED;
	}
	if (!comment)
		comment = default_comment();
	dir = strdup(path);
	if (asprintf(&pub_path, "%s.pub", path) < 0)
		pub_path = NULL;
	if (!comment || !dir || !pub_path) {
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	if (file_mkdir_p(dirname(dir), 0700, &ctl->err) < 0 || keys_generate(&kp, &ctl->err) < 0 ||
	    keys_set_comment(kp, comment, &ctl->err) < 0 || keys_save(kp, path, &ctl->err) < 0) {
		err_wrap(&ctl->err, "cannot make the host key");
		return output_exit_of(&ctl->err);
	}
	keys_fingerprint(kp->pk, fp);
	line = keys_format_public(kp->pk, kp->comment);
	doc = json_object_new_object();
	if (!doc || !line) {
		json_object_put(doc);
		err_oom(&ctl->err);
		return CTL_EXIT_FAILED;
	}
	json_object_object_add(doc, "key", json_object_new_string(path));
	json_object_object_add(doc, "public_key", json_object_new_string(pub_path));
	json_object_object_add(doc, "fingerprint", json_object_new_string(fp));
	json_object_object_add(doc, "public", json_object_new_string(line));
	ctl->result = doc;
	return CTL_EXIT_OK;
}
