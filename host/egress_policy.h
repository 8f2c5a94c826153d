/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy of one instance (docs/isolation.md): the host:port allowlist the proxy
 * enforces, the address ranges the network ACL refuses, where the proxy listens and which
 * address may reach the runtime's port. Built from options, printed by egress_acl.c (the Incus
 * network ACL) and egress_squid.c (the proxy's configuration).
 */
#ifndef SA_HOST_EGRESS_POLICY_H
#define SA_HOST_EGRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define EGRESS_HOST_MAX 253
#define EGRESS_ALLOW_MAX 256
#define EGRESS_DENY_MAX 256

/* One allowed destination: a name (".example.com" also allows its subdomains) and a port. */
struct egress_allow {
	char host[EGRESS_HOST_MAX + 1];
	uint16_t port;
};

/* An address: IPv4 in the low 32 bits of v (family AF_INET), or IPv6. */
struct egress_ip {
	int family;
	unsigned __int128 v;
};

/* An inclusive range of addresses of one family, and why it is refused. */
struct egress_range {
	int family;
	unsigned __int128 lo, hi;
	const char *why;
};

struct egress_policy {
	struct egress_allow allow[EGRESS_ALLOW_MAX];
	size_t n_allow;
	struct egress_range deny[EGRESS_DENY_MAX];
	size_t n_deny;
	struct egress_ip proxy;
	uint16_t proxy_port;
	struct egress_ip controller;
	uint16_t app_port;
};

/* The defaults (docs/isolation.md): the model API and the forge's clone, API, archive hosts. */
extern const char *const egress_policy_default_allow[];

/* "host:port" added to the allowlist; a clear error for a bad name or port. */
int egress_policy_allow(struct egress_policy *p, const char *entry, struct err *err);
/* Every line of a file ("#" comments and blank lines skipped) through egress_policy_allow(). */
int egress_policy_allow_file(struct egress_policy *p, const char *path, struct err *err);
/* "CIDR" (or one address) refused, for the reason given (a static string). */
int egress_policy_deny(struct egress_policy *p, const char *cidr, const char *why, struct err *err);
/* RFC 1918, CGNAT, ULA, link-local, the metadata addresses, loopback, "this network". */
int egress_policy_deny_builtin(struct egress_policy *p, struct err *err);
/* The networks of this host's interfaces (getifaddrs), loopback excepted. */
int egress_policy_deny_host_networks(struct egress_policy *p, struct err *err);

/* "ADDRESS" parsed (IPv4 dotted quad or IPv6). */
int egress_policy_parse_ip(const char *s, struct egress_ip *ret, struct err *err);
/* "ADDRESS:PORT" or "[V6]:PORT". */
int egress_policy_parse_endpoint(const char *s, struct egress_ip *ret_ip, uint16_t *ret_port,
                                 struct err *err);
/* The address as text (no brackets). buf holds at least 64 bytes. */
const char *egress_policy_ip_str(const struct egress_ip *ip, char *buf, size_t size);

/*
 * The refused ranges of one family, comma-separated, a CIDR where a range is one, else
 * "LO-HI" ("10.0.0.0/8,10.0.3.2-10.255.255.255,..."); ranges inside another are dropped. With
 * cut_proxy, the proxy's address is cut out of any range holding it (for the ACL: its reject
 * rules win over its allow rules, whatever their order). A heap string ("" when there is
 * none) or NULL when out of memory.
 */
char *egress_policy_deny_list(const struct egress_policy *p, int family, bool cut_proxy);

#endif
