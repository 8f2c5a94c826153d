/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Egress in the guest (docs/sandbox-yml.md, "egress"; docs/boot-spec.md): the forward proxy the
 * app's user and the agent's user may reach, besides loopback. Asked for by the spec's
 * `egress`, the daemon's --egress-proxy (SANDBOX_AGENT_EGRESS_PROXY in every boot's
 * environment) or sandbox.yml's `egress` (only when neither of the other two names a proxy:
 * the platform's proxy wins). `required` (any source) makes a boot fail when the rules cannot
 * be applied; without it they are skipped with a warning. The app and the agent get
 * HTTPS_PROXY, HTTP_PROXY and NO_PROXY (and the lowercase forms) pointing at the proxy.
 */
#ifndef SA_EGRESS_CONFIG_H
#define SA_EGRESS_CONFIG_H

#include <stdbool.h>

#include "err.h"

#define EGRESS_NO_PROXY "localhost,127.0.0.1,::1"
#define EGRESS_ENV_PROXY "SANDBOX_AGENT_EGRESS_PROXY"
#define EGRESS_ENV_REQUIRED "SANDBOX_AGENT_EGRESS_REQUIRED"
/* The nft program (tests point it elsewhere); default: the first of /usr/sbin/nft, /sbin/nft. */
#define EGRESS_ENV_NFT "SANDBOX_AGENT_NFT"
/* The coding agent's user, as sandbox-claude reads it. */
#define EGRESS_ENV_AGENT_USER "SANDBOX_CLAUDE_USER"
#define EGRESS_DEFAULT_AGENT_USER "claude"

/* What one source asks for. */
struct egress_request {
	char *proxy;   /* URL, or NULL */
	bool required; /* confinement must be applied */
};

/* The boot's egress. */
struct boot_egress {
	char *proxy; /* "http://10.0.0.1:3128", NULL: no confinement */
	char *host;  /* "10.0.0.1" (brackets of an IPv6 literal removed) */
	unsigned port;
	bool required;
	char *nft;        /* the nft program */
	char *agent_user; /* the coding agent's user: SANDBOX_CLAUDE_USER, else "claude" */
};

/*
 * A proxy URL: http:// (or https://), a host, a port (the scheme's, 80 or 443, by default), no
 * user, password, path beyond "/", query or fragment. ERR_REFUSED "`proxy` must be a URL like
 * http://10.0.0.1:3128, not `...`: ...".
 */
int egress_config_check_proxy(const char *url, char **ret_host, unsigned *ret_port,
                              struct err *err);
/* The spec's, the file's (either may be NULL) and the daemon's, resolved as said above. */
int egress_config_resolve(const struct egress_request *spec, const struct egress_request *file,
                          char *const *caller_env, struct boot_egress *ret, struct err *err);
/* HTTPS_PROXY, HTTP_PROXY, https_proxy, http_proxy = proxy; NO_PROXY, no_proxy. */
int egress_config_proxy_env(char ***env, const char *proxy);
void egress_config_request_dispose(struct egress_request *r);
void egress_config_dispose(struct boot_egress *e);

#endif
