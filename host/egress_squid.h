/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allowlisting forward proxy's configuration: squid (docs/isolation.md "The proxy").
 */
#ifndef SA_HOST_EGRESS_SQUID_H
#define SA_HOST_EGRESS_SQUID_H

#include <stddef.h>

#include "egress_policy.h"
#include "err.h"

struct egress_squid_options {
	const char *dir;        /* the proxy's own directory: logs, pid file, the error page */
	const char *hosts_file; /* squid's hosts_file, or NULL for its default (/etc/hosts) */
};

/*
 * squid.conf: listens on the proxy's address and port only; allows exactly the allowlist's
 * host:port pairs (CONNECT included), refuses every destination that resolves into a refused
 * range first (no name may lead into the host's networks), refuses the rest with 403 and the
 * error page egress_squid_error_page(); caches nothing; logs every request to DIR/access.log.
 * A heap string, or NULL when out of memory.
 */
char *egress_squid_config(const struct egress_policy *p, const struct egress_squid_options *o);

/* The 403 page the proxy answers a refusal with: it names the policy and what to do. */
extern const char egress_squid_error_page[];

/* squid's own error templates (Debian's squid), linked beside our page. */
#define EGRESS_SQUID_TEMPLATES "/usr/share/squid/errors/templates"

/*
 * DIR/errors, squid's error_directory: our page ERR_SANDBOX_EGRESS, and a link to each of
 * squid's own templates found in templates (squid wants every page it may send in that one
 * directory). *ret_linked: how many; 0 when templates is missing (squid then answers its other
 * errors with "Missing Template": install squid where the configuration is written).
 */
int egress_squid_write_errors(const char *dir, const char *templates, size_t *ret_linked,
                              struct err *err);

#endif
