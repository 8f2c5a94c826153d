/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy: the allowlist, the refused ranges (with 128-bit arithmetic for both
 * families), the proxy's and the controller's addresses.
 */
#include "egress_policy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "cleanup.h"
#include "file.h"

#define ALLOW_FILE_MAX (64 * 1024)

const char *const egress_policy_default_allow[] = {
    "api.anthropic.com:443",   /* the model API */
    "github.com:443",          /* clone and fetch over HTTPS */
    "api.github.com:443",      /* the forge's REST API */
    "codeload.github.com:443", /* archives */
    NULL,
};

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '.';
}

int egress_policy_allow(struct egress_policy *p, const char *entry, struct err *err)
{
	const char *colon = strrchr(entry, ':');
	size_t n = colon ? (size_t)(colon - entry) : 0;
	char *end;
	long port;

	if (!colon || n == 0 || n > EGRESS_HOST_MAX)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "'%s' is not HOST:PORT (for example api.anthropic.com:443)", entry);
	for (size_t i = 0; i < n; i++)
		if (!host_char(entry[i]))
			return err_set(
			    err, ERR_REFUSED, EINVAL,
			    "'%.*s' is not a host name: letters, digits, '-' and '.' only "
			    "(a leading '.' also allows the subdomains)",
			    (int)n, entry);
	/* squid reads a leading '-' as a flag: a name starts and ends with a letter or digit. */
	if (n == 1 || strstr(entry, "..") || entry[0] == '-' || entry[n - 1] == '-' ||
	    entry[n - 1] == '.' || (entry[0] == '.' && entry[1] == '-'))
		return err_set(err, ERR_REFUSED, EINVAL, "'%.*s' is not a host name", (int)n,
		               entry);
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535)
		return err_set(err, ERR_REFUSED, EINVAL, "'%s': the port must be 1 to 65535",
		               entry);
	for (size_t i = 0; i < p->n_allow; i++)
		if (p->allow[i].port == port && strncasecmp(p->allow[i].host, entry, n) == 0 &&
		    p->allow[i].host[n] == '\0')
			return 0;
	if (p->n_allow == EGRESS_ALLOW_MAX)
		return err_set(err, ERR_REFUSED, E2BIG, "more than %d allowed destinations",
		               EGRESS_ALLOW_MAX);
	memcpy(p->allow[p->n_allow].host, entry, n);
	p->allow[p->n_allow].host[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (p->allow[p->n_allow].host[i] >= 'A' && p->allow[p->n_allow].host[i] <= 'Z')
			p->allow[p->n_allow].host[i] += 'a' - 'A';
	p->allow[p->n_allow++].port = (uint16_t)port;
	return 0;
}

int egress_policy_allow_file(struct egress_policy *p, const char *path, struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	char *line, *save = NULL;
	unsigned lineno = 0;
	size_t len;

	if (file_read_capped(AT_FDCWD, path, ALLOW_FILE_MAX, 0, &buf, &len, err) != 0)
		return err_wrap(err, "reading the allowlist %s", path);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *s = line, *e;

		lineno++;
		while (*s == ' ' || *s == '\t')
			s++;
		e = s + strlen(s);
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			*--e = '\0';
		if (!*s || *s == '#')
			continue;
		if (egress_policy_allow(p, s, err) < 0)
			return err_wrap(err, "%s, line %u", path, lineno);
	}
	return 0;
}

int egress_policy_parse_ip(const char *s, struct egress_ip *ret, struct err *err)
{
	unsigned char b[16];

	if (inet_pton(AF_INET, s, b) == 1) {
		ret->family = AF_INET;
		ret->v = ((unsigned __int128)b[0] << 24) | ((unsigned __int128)b[1] << 16) |
		         ((unsigned __int128)b[2] << 8) | b[3];
		return 0;
	}
	if (inet_pton(AF_INET6, s, b) == 1) {
		ret->family = AF_INET6;
		ret->v = 0;
		for (int i = 0; i < 16; i++)
			ret->v = (ret->v << 8) | b[i];
		return 0;
	}
	return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not an IPv4 or IPv6 address", s);
}

int egress_policy_parse_endpoint(const char *s, struct egress_ip *ret_ip, uint16_t *ret_port,
                                 struct err *err)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon = strrchr(s, ':'), *h = host;
	size_t n = colon ? (size_t)(colon - s) : 0;
	char *end;
	long port;

	if (!colon || n == 0 || n >= sizeof(host))
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not ADDRESS:PORT", s);
	memcpy(host, s, n);
	host[n] = '\0';
	if (host[0] == '[' && host[n - 1] == ']') {
		host[n - 1] = '\0';
		h = host + 1;
	}
	errno = 0;
	port = strtol(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port < 1 || port > 65535)
		return err_set(err, ERR_REFUSED, EINVAL, "'%s': the port must be 1 to 65535", s);
	*ret_port = (uint16_t)port;
	return egress_policy_parse_ip(h, ret_ip, err);
}

const char *egress_policy_ip_str(const struct egress_ip *ip, char *buf, size_t size)
{
	unsigned char b[16];

	if (ip->family == AF_INET) {
		for (int i = 0; i < 4; i++)
			b[i] = (unsigned char)(ip->v >> (24 - 8 * i));
	} else {
		for (int i = 0; i < 16; i++)
			b[i] = (unsigned char)(ip->v >> (120 - 8 * i));
	}
	if (!inet_ntop(ip->family, b, buf, (socklen_t)size))
		snprintf(buf, size, "?");
	return buf;
}

static int bits_of(int family)
{
	return family == AF_INET ? 32 : 128;
}

/* The range of the network addr/prefix. */
static void range_of(int family, unsigned __int128 addr, int prefix, unsigned __int128 *lo,
                     unsigned __int128 *hi)
{
	int host_bits = bits_of(family) - prefix;
	unsigned __int128 mask =
	    host_bits >= 128 ? ~(unsigned __int128)0 : (((unsigned __int128)1 << host_bits) - 1);

	*lo = addr & ~mask;
	*hi = *lo | mask;
	if (family == AF_INET)
		*hi &= 0xffffffffu;
}

static int add_range(struct egress_policy *p, int family, unsigned __int128 lo,
                     unsigned __int128 hi, const char *why, struct err *err)
{
	if (p->n_deny == EGRESS_DENY_MAX)
		return err_set(err, ERR_REFUSED, E2BIG, "more than %d refused ranges",
		               EGRESS_DENY_MAX);
	p->deny[p->n_deny++] = (struct egress_range){family, lo, hi, why};
	return 0;
}

int egress_policy_deny(struct egress_policy *p, const char *cidr, const char *why, struct err *err)
{
	char addr[INET6_ADDRSTRLEN];
	const char *slash = strchr(cidr, '/');
	size_t n = slash ? (size_t)(slash - cidr) : strlen(cidr);
	struct egress_ip ip;
	unsigned __int128 lo, hi;
	long prefix;
	char *end;

	if (n >= sizeof(addr))
		return err_set(err, ERR_REFUSED, EINVAL, "'%s' is not an address or CIDR", cidr);
	memcpy(addr, cidr, n);
	addr[n] = '\0';
	if (egress_policy_parse_ip(addr, &ip, err) < 0)
		return err_ret(err);
	prefix = bits_of(ip.family);
	if (slash) {
		errno = 0;
		prefix = strtol(slash + 1, &end, 10);
		if (errno || end == slash + 1 || *end || prefix < 0 || prefix > bits_of(ip.family))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "'%s': the prefix length must be 0 to %d", cidr,
			               bits_of(ip.family));
	}
	range_of(ip.family, ip.v, (int)prefix, &lo, &hi);
	return add_range(p, ip.family, lo, hi, why, err);
}

int egress_policy_deny_builtin(struct egress_policy *p, struct err *err)
{
	static const struct {
		const char *cidr, *why;
	} ranges[] = {
	    {"0.0.0.0/8", "this network"},
	    {"10.0.0.0/8", "RFC 1918"},
	    {"100.64.0.0/10", "shared address space (CGNAT)"},
	    {"127.0.0.0/8", "loopback"},
	    {"169.254.0.0/16", "link-local, the cloud metadata address 169.254.169.254"},
	    {"172.16.0.0/12", "RFC 1918"},
	    {"192.168.0.0/16", "RFC 1918"},
	    {"::1/128", "loopback"},
	    {"fc00::/7", "unique local (ULA), the cloud metadata address fd00:ec2::254"},
	    {"fe80::/10", "link-local"},
	};

	for (size_t i = 0; i < ELEMENTSOF(ranges); i++)
		if (egress_policy_deny(p, ranges[i].cidr, ranges[i].why, err) < 0)
			return err_ret(err);
	return 0;
}

static int prefix_of(const struct sockaddr *mask)
{
	const unsigned char *b;
	size_t n;
	int bits = 0;

	if (mask->sa_family == AF_INET) {
		b = (const unsigned char *)&((const struct sockaddr_in *)mask)->sin_addr;
		n = 4;
	} else {
		b = (const unsigned char *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
		n = 16;
	}
	for (size_t i = 0; i < n; i++)
		bits += __builtin_popcount(b[i]);
	return bits;
}

int egress_policy_deny_host_networks(struct egress_policy *p, struct err *err)
{
	struct ifaddrs *ifs = NULL;
	int r = 0;

	if (getifaddrs(&ifs) < 0)
		return err_errno(err, "cannot list this host's interfaces");
	for (struct ifaddrs *i = ifs; i && r == 0; i = i->ifa_next) {
		char buf[INET6_ADDRSTRLEN];
		struct egress_ip ip;
		unsigned __int128 lo, hi;
		const void *a;

		if (!i->ifa_addr || !i->ifa_netmask || (i->ifa_flags & IFF_LOOPBACK) ||
		    (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
			continue;
		a = i->ifa_addr->sa_family == AF_INET
		        ? (const void *)&((struct sockaddr_in *)i->ifa_addr)->sin_addr
		        : (const void *)&((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr;
		if (!inet_ntop(i->ifa_addr->sa_family, a, buf, sizeof(buf)) ||
		    egress_policy_parse_ip(buf, &ip, err) < 0)
			continue;
		range_of(ip.family, ip.v, prefix_of(i->ifa_netmask), &lo, &hi);
		r = add_range(p, ip.family, lo, hi, "this host's network", err);
	}
	freeifaddrs(ifs);
	return r;
}

/* lo..hi as Incus takes it: one address, a CIDR when it is one, else "lo-hi". */
static int append_range(char **s, size_t *len, int family, unsigned __int128 lo,
                        unsigned __int128 hi)
{
	struct egress_ip a = {family, lo}, b = {family, hi};
	char x[64], y[64], item[160];
	unsigned __int128 size = hi - lo;
	int prefix = -1;
	char *n;
	size_t k;

	/* hi - lo + 1 a power of two and lo aligned on it: a CIDR. */
	if (((size + 1) & size) == 0 && (lo & size) == 0) {
		int host_bits = 0;

		while (host_bits < 128 && (((unsigned __int128)1 << host_bits) - 1) != size)
			host_bits++;
		if (family == AF_INET6 && size == ~(unsigned __int128)0)
			host_bits = 128;
		prefix = bits_of(family) - host_bits;
	}
	egress_policy_ip_str(&a, x, sizeof(x));
	if (lo == hi)
		k = (size_t)snprintf(item, sizeof(item), "%s", x);
	else if (prefix >= 0)
		k = (size_t)snprintf(item, sizeof(item), "%s/%d", x, prefix);
	else
		k = (size_t)snprintf(item, sizeof(item), "%s-%s", x,
		                     egress_policy_ip_str(&b, y, sizeof(y)));
	n = realloc(*s, *len + k + 2);
	if (!n)
		return -1;
	*s = n;
	if (*len)
		(*s)[(*len)++] = ',';
	memcpy(*s + *len, item, k + 1);
	*len += k;
	return 0;
}

char *egress_policy_deny_list(const struct egress_policy *p, int family, bool cut_proxy)
{
	_cleanup_free_ char *s = strdup("");
	size_t len = 0;

	for (size_t i = 0; s && i < p->n_deny; i++) {
		const struct egress_range *r = &p->deny[i];
		bool inside = false;

		if (r->family != family)
			continue;
		/* A range inside another one (or an earlier identical one) adds nothing. */
		for (size_t j = 0; j < p->n_deny && !inside; j++) {
			const struct egress_range *o = &p->deny[j];

			inside = j != i && o->family == family && o->lo <= r->lo &&
			         r->hi <= o->hi && (o->lo != r->lo || o->hi != r->hi || j < i);
		}
		if (inside)
			continue;
		if (!cut_proxy || p->proxy.family != family || r->lo > p->proxy.v ||
		    p->proxy.v > r->hi) {
			if (append_range(&s, &len, family, r->lo, r->hi) < 0)
				return NULL;
			continue;
		}
		/* The proxy's address cut out. */
		if (r->lo < p->proxy.v && append_range(&s, &len, family, r->lo, p->proxy.v - 1) < 0)
			return NULL;
		if (p->proxy.v < r->hi && append_range(&s, &len, family, p->proxy.v + 1, r->hi) < 0)
			return NULL;
	}
	return TAKE_PTR(s);
}
