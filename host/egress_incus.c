/* SPDX-License-Identifier: Apache-2.0 */
/* The incus client run with a document on stdin and its output kept for the error message. */
#include "egress_incus.h"

#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "cleanup.h"
#include "exec_capture.h"
#include "strv.h"

#define INCUS_CALL_MS 30000
#define INCUS_OUT_MAX 4096

/* The last line of the client's output, for a message. */
static const char *last_line(char *out)
{
	char *e = out + strlen(out), *s;

	while (e > out && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
		*--e = '\0';
	s = strrchr(out, '\n');
	return s ? s + 1 : out;
}

/* argv run with input (or /dev/null) on stdin; stdout and stderr into out. */
static int run(char *const *argv, const char *input, char *out, size_t cap, int *ret_status,
               struct err *err)
{
	return exec_capture_run(argv, input, true, INCUS_CALL_MS, out, cap, ret_status, err);
}

/* run() that fails unless the client exits 0; its last line of output goes into the error. */
static int run_ok(char *const *argv, const char *input, const char *what, struct err *err)
{
	char out[INCUS_OUT_MAX];
	int status;

	if (run(argv, input, out, sizeof(out), &status, err) < 0)
		return err_wrap(err, "%s", what);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && !out[0])
		return err_set(err, ERR_FAILED, ENOENT,
		               "%s: cannot run %s (is the incus client installed? "
		               "SANDBOX_CTL_INCUS names another one)",
		               what, argv[0]);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return err_set(err, ERR_FAILED, EIO, "%s: %s", what, last_line(out));
	return 0;
}

int egress_incus_apply(const char *incus, const char *instance, const char *device,
                       const char *network, const char *acl_name, json_object *acl,
                       json_object *nic_keys, struct err *err)
{
	char *show[] = {(char *)incus, "network", "acl", "show", (char *)acl_name, NULL};
	char *create[] = {(char *)incus, "network", "acl", "create", (char *)acl_name, NULL};
	char *edit[] = {(char *)incus, "network", "acl", "edit", (char *)acl_name, NULL};
	_cleanup_strv_ char **set = NULL;
	char out[INCUS_OUT_MAX], what[256];
	int status;

	if (run(show, NULL, out, sizeof(out), &status, err) < 0)
		return err_wrap(err, "looking for the network ACL %s", acl_name);
	if ((!WIFEXITED(status) || WEXITSTATUS(status) != 0) &&
	    run_ok(create, NULL, "incus network acl create", err) < 0)
		return err_ret(err);
	if (run_ok(edit,
	           json_object_to_json_string_ext(acl, JSON_C_TO_STRING_PRETTY |
	                                                   JSON_C_TO_STRING_NOSLASHESCAPE),
	           "incus network acl edit", err) < 0)
		return err_ret(err);
	if (network ? (strv_push(&set, incus) < 0 || strv_push(&set, "network") < 0 ||
	               strv_push(&set, "set") < 0 || strv_push(&set, network) < 0)
	            : (strv_push(&set, incus) < 0 || strv_push(&set, "config") < 0 ||
	               strv_push(&set, "device") < 0 || strv_push(&set, "set") < 0 ||
	               strv_push(&set, instance) < 0 || strv_push(&set, device) < 0))
		return err_oom(err);
	json_object_object_foreach(nic_keys, key, val)
	{
		_cleanup_free_ char *kv = NULL;

		if (asprintf(&kv, "%s=%s", key, json_object_get_string(val)) < 0 ||
		    strv_consume(&set, kv) < 0)
			return err_oom(err);
		kv = NULL;
	}
	if (network) {
		snprintf(what, sizeof(what), "attaching the ACL to the network %s", network);
		return run_ok(set, NULL, what, err);
	}
	snprintf(what, sizeof(what), "attaching the ACL to %s's NIC %s", instance, device);
	if (run(set, NULL, out, sizeof(out), &status, err) < 0)
		return err_wrap(err, "%s", what);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	/* A NIC from a profile is overridden in the instance with the same keys. */
	free(set[3]);
	set[3] = strdup("override");
	if (!set[3])
		return err_oom(err);
	return run_ok(set, NULL, what, err);
}
