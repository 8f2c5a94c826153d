/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The allowlisting forward proxy's configuration: squid (docs/isolation.md "The proxy").
 */
#ifndef SA_HOST_EGRESS_SQUID_H
#define SA_HOST_EGRESS_SQUID_H

#include "egress_policy.h"

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

#endif
