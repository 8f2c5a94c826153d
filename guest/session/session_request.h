/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A session's request.json (docs/sessions.md, "The request"), parsed with json-c:
 *
 *   {"argv": ["claude", "-p", ...], "mode": "api_key" | "sandbox_login", "timeout": SECONDS,
 *    "env": {"NAME": "VALUE", ...}, "pathspecs": [":(exclude)...", ...],
 *    "max_diff_bytes": N, "live": B, "approval_timeout": SECONDS, "dangerously_no_sandbox": B}
 *
 * Unknown keys are ignored. Every refusal has class ERR_REFUSED and names the key, e.g.
 * "request: `argv` must be a non-empty list of strings".
 */
#ifndef SA_SESSION_REQUEST_H
#define SA_SESSION_REQUEST_H

#include <stdbool.h>
#include <stddef.h>

#include "err.h"

#define SESSION_REQUEST_MAX (1024 * 1024)
#define SESSION_REQUEST_MAX_ARGS 64
#define SESSION_REQUEST_MAX_ARG_LEN 4096
#define SESSION_REQUEST_MAX_ENV 128
#define SESSION_REQUEST_MAX_PATHSPECS 256
#define SESSION_DEFAULT_TIMEOUT 1800
#define SESSION_TIMEOUT_MAX 86400
#define SESSION_DEFAULT_DIFF_BYTES 1000000
#define SESSION_DIFF_BYTES_MAX (64 * 1024 * 1024)
#define SESSION_DEFAULT_APPROVAL_TIMEOUT 300

enum session_mode {
	SESSION_MODE_API_KEY = 0,
	SESSION_MODE_SANDBOX_LOGIN,
};

struct session_request {
	char **argv; /* NULL-terminated; argv[0] is the name the platform gave ("claude") */
	enum session_mode mode;
	unsigned timeout;      /* seconds, 1..SESSION_TIMEOUT_MAX */
	char **env;            /* "NAME=VALUE", names valid and unique; may be NULL */
	char **pathspecs;      /* may be NULL */
	size_t max_diff_bytes; /* 1..SESSION_DIFF_BYTES_MAX */
	/* A long-lived session fed turns on its stdin (docs/sessions.md, "Long-lived sessions"). */
	bool live;
	unsigned approval_timeout;   /* seconds a can_use_tool request waits for an answer */
	bool dangerously_no_sandbox; /* recorded in status.json; the start decides on it */
};

/* ret is filled only on success; release it with session_request_dispose. */
int session_request_parse(const char *buf, size_t len, struct session_request *ret,
                          struct err *err);
/*
 * Read request.json below the directory dirfd (no links, a regular file, capped) and parse it.
 * A missing file: ERR_REFUSED "there is no request.json".
 */
int session_request_load(int dirfd, struct session_request *ret, struct err *err);
void session_request_dispose(struct session_request *r);
/* "api_key" or "sandbox_login". */
const char *session_request_mode_name(enum session_mode mode);

#endif
