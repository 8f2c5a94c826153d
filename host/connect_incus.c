/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Finding an Incus instance's agent: a VM has a vsock CID (`volatile.vsock_id`), which is the
 * fast path on the instance's own cluster member; everything else (a container, an instance on
 * another member, a VM whose vsock cannot be reached) goes through
 * `incus exec NAME -- sandbox-agent serve --stdio`, which Incus routes wherever the instance is.
 */
#include "connect.h"

#include <errno.h>
#include <string.h>
#include <sys/wait.h>

#include "exec_capture.h"
#include "strv.h"

#define INCUS_OUTPUT_MAX 256
#define INCUS_TIMEOUT_MS 10000

/* Instance names as Incus allows them, optionally with a "remote:" prefix. */
static bool name_valid(const char *name)
{
	if (!name[0] || name[0] == '-' || strlen(name) > 253)
		return false;
	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		      (*p >= '0' && *p <= '9') || *p == '-' || *p == '.' || *p == '_' || *p == ':'))
			return false;
	return true;
}

/* Run argv with stdout captured (at most cap - 1 bytes), stdin and stderr on /dev/null. */
static int run_capture(char *const *argv, char *out, size_t cap, int *ret_status, struct err *err)
{
	return exec_capture_run(argv, NULL, false, INCUS_TIMEOUT_MS, out, cap, ret_status, err);
}

/* The CID in the output of `incus config get`, or 0 when there is none. */
static uint32_t parse_cid(const char *s)
{
	uint64_t v = 0;
	size_t digits = 0;

	while (*s == ' ' || *s == '\t')
		s++;
	for (; *s >= '0' && *s <= '9' && digits < 11; s++, digits++)
		v = v * 10 + (uint64_t)(*s - '0');
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	/* 0, 1 and 2 are the hypervisor, loopback and the host: never a guest. */
	if (*s || digits == 0 || digits > 10 || v < 3 || v >= UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

int connect_incus_resolve(const char *incus, const char *name, uint32_t port,
                          struct connect_addr *ret, struct connect_addr *ret_fallback,
                          struct err *err)
{
	char *get_argv[] = {(char *)incus,       "config", "get", (char *)name,
	                    "volatile.vsock_id", NULL};
	char *exec_argv[] = {(char *)incus,   "exec",  (char *)name, "--",
	                     "sandbox-agent", "serve", "--stdio",    NULL};
	struct connect_addr exec_addr = {.kind = CONNECT_EXEC};
	char out[INCUS_OUTPUT_MAX];
	struct err run_err;
	uint32_t cid = 0;
	int status, r;

	if (!name_valid(name))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "invalid Incus instance name '%s' (letters, digits, '-', '.', '_' "
		               "and a 'remote:' prefix)",
		               name);
	r = run_capture(get_argv, out, sizeof(out), &status, &run_err);
	if (r == 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0)
		cid = parse_cid(out);
	exec_addr.argv = strv_copy(exec_argv);
	if (!exec_addr.argv)
		return err_oom(err);
	if (cid == 0) {
		*ret = exec_addr;
		if (ret_fallback)
			*ret_fallback = (struct connect_addr){0};
		return 0;
	}
	*ret = (struct connect_addr){.kind = CONNECT_VSOCK, .cid = cid, .port = port};
	if (ret_fallback)
		*ret_fallback = exec_addr;
	else
		connect_addr_dispose(&exec_addr);
	return 0;
}
