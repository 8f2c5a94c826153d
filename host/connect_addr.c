/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Addresses of the agent: parsing --connect, formatting for messages, and the default name a
 * guest key is pinned under.
 */
#include "connect.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "pins.h"
#include "strv.h"

#define FORMS "vsock:CID[:PORT], unix:PATH, serial:PATH, fc:PATH[:PORT] or exec -- CMD ARGS..."

/* A decimal u32: 1 to 10 digits, nothing else. */
static int parse_u32(const char *s, size_t len, uint32_t *ret)
{
	uint64_t v = 0;

	if (len == 0 || len > 10)
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	if (v > UINT32_MAX)
		return -1;
	*ret = (uint32_t)v;
	return 0;
}

static int bad(struct err *err, const char *spec, const char *why)
{
	return err_set(err, ERR_REFUSED, EINVAL, "invalid address '%s': %s (expected " FORMS ")",
	               spec, why);
}

/* "PATH[:PORT]": a numeric suffix after the last ':' is the port. */
static int parse_path_port(const char *spec, const char *rest, struct connect_addr *a,
                           struct err *err)
{
	const char *colon = strrchr(rest, ':');
	size_t path_len = strlen(rest);
	uint32_t port;

	a->port = CONNECT_DEFAULT_PORT;
	if (colon && colon[1] && parse_u32(colon + 1, strlen(colon + 1), &port) == 0) {
		if (port == UINT32_MAX)
			return bad(err, spec, "port 4294967295 is reserved");
		a->port = port;
		path_len = (size_t)(colon - rest);
	}
	if (path_len == 0)
		return bad(err, spec, "no path");
	a->path = strndup(rest, path_len);
	if (!a->path)
		return err_oom(err);
	return 0;
}

int connect_addr_parse(const char *spec, char *const *exec_argv, struct connect_addr *ret,
                       struct err *err)
{
	struct connect_addr a = {0};
	const char *rest;
	int r;

	if (strcmp(spec, "exec") == 0) {
		if (!exec_argv || !exec_argv[0] || !exec_argv[0][0])
			return bad(err, spec, "exec needs a command after --");
		a.kind = CONNECT_EXEC;
		a.argv = strv_copy(exec_argv);
		if (!a.argv)
			return err_oom(err);
		*ret = a;
		return 0;
	}
	if (strncmp(spec, "vsock:", 6) == 0) {
		const char *colon;
		rest = spec + 6;
		colon = strchr(rest, ':');
		a.kind = CONNECT_VSOCK;
		a.port = CONNECT_DEFAULT_PORT;
		if (parse_u32(rest, colon ? (size_t)(colon - rest) : strlen(rest), &a.cid) < 0)
			return bad(err, spec, "the CID is not a number");
		if (a.cid == UINT32_MAX)
			return bad(err, spec, "CID 4294967295 means any, not a guest");
		if (colon &&
		    (parse_u32(colon + 1, strlen(colon + 1), &a.port) < 0 || a.port == UINT32_MAX))
			return bad(err, spec, "the port is not a number below 4294967295");
		*ret = a;
		return 0;
	}
	if (strncmp(spec, "fc:", 3) == 0) {
		a.kind = CONNECT_FC;
		r = parse_path_port(spec, spec + 3, &a, err);
		if (r < 0)
			return r;
	} else if (strncmp(spec, "unix:", 5) == 0 || strncmp(spec, "serial:", 7) == 0) {
		a.kind = spec[0] == 'u' ? CONNECT_UNIX : CONNECT_SERIAL;
		rest = strchr(spec, ':') + 1;
		if (!*rest)
			return bad(err, spec, "no path");
		a.path = strdup(rest);
		if (!a.path)
			return err_oom(err);
	} else {
		return bad(err, spec, "unknown transport");
	}
	if (a.kind != CONNECT_SERIAL &&
	    strlen(a.path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		connect_addr_dispose(&a);
		return bad(err, spec, "the socket path is too long");
	}
	*ret = a;
	return 0;
}

void connect_addr_dispose(struct connect_addr *a)
{
	free(a->path);
	strv_free(a->argv);
	*a = (struct connect_addr){0};
}

int connect_addr_copy(const struct connect_addr *a, struct connect_addr *ret, struct err *err)
{
	struct connect_addr c = *a;

	c.path = NULL;
	c.argv = NULL;
	if ((a->path && !(c.path = strdup(a->path))) ||
	    (a->argv && !(c.argv = strv_copy(a->argv)))) {
		connect_addr_dispose(&c);
		return err_oom(err);
	}
	*ret = c;
	return 0;
}

/* The command's words joined with sep, each byte mapped by unprintable_as (0: kept). */
static char *join_argv(char *const *argv, const char *prefix, char sep, char unprintable_as)
{
	size_t len = strlen(prefix) + 1;
	char *s, *p;

	for (char *const *w = argv; *w; w++)
		len += strlen(*w) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	p = stpcpy(s, prefix);
	for (char *const *w = argv; *w; w++) {
		if (w != argv)
			*p++ = sep;
		for (const char *c = *w; *c; c++)
			*p++ = (unprintable_as &&
			        ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f))
			           ? unprintable_as
			           : *c;
	}
	*p = '\0';
	return s;
}

char *connect_addr_format(const struct connect_addr *a)
{
	char *s = NULL;

	switch (a->kind) {
	case CONNECT_VSOCK:
		if (asprintf(&s, "vsock:%u:%u", a->cid, a->port) < 0)
			s = NULL;
		break;
	case CONNECT_FC:
		if (asprintf(&s, "fc:%s:%u", a->path, a->port) < 0)
			s = NULL;
		break;
	case CONNECT_UNIX:
		if (asprintf(&s, "unix:%s", a->path) < 0)
			s = NULL;
		break;
	case CONNECT_SERIAL:
		if (asprintf(&s, "serial:%s", a->path) < 0)
			s = NULL;
		break;
	case CONNECT_EXEC:
		s = join_argv(a->argv, "exec: ", ' ', 0);
		break;
	}
	return s;
}

int connect_addr_instance(const struct connect_addr *a, char **ret, struct err *err)
{
	_cleanup_free_ char *name = NULL;

	if (a->kind == CONNECT_EXEC)
		name = join_argv(a->argv, "exec:", ',', '_');
	else
		name = connect_addr_format(a);
	if (!name)
		return err_oom(err);
	if (!pins_name_valid(name))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "cannot name the instance after its address (%zu characters, blanks "
		               "or control characters): give it a name with --instance NAME",
		               strlen(name));
	*ret = TAKE_PTR(name);
	return 0;
}
