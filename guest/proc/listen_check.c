/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Who listens on a port. /proc/net/tcp and /proc/net/tcp6 list the sockets of the caller's
 * network namespace: "sl local_address rem_address st ... inode". An address is hex, one 32-bit
 * word at a time in host byte order (IPv4 127.0.0.1 reads 0100007F on little-endian machines),
 * the port is hex in host order, st 0A is LISTEN. A socket belongs to a process when one of its
 * descriptors reads "socket:[INODE]" under /proc/PID/fd.
 *
 * /proc does not say whether an IPv6 socket is v6-only; a listener on "::" counts as dual-stack
 * (the Linux default, net.ipv6.bindv6only = 0).
 */
#include "listen_check.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>

#include "cleanup.h"
#include "log.h"

#define TCP_LISTEN 0x0A

enum addr_kind {
	ADDR_LOOPBACK4, /* 127.0.0.0/8, also as ::ffff:127.x.y.z */
	ADDR_ANY4,      /* 0.0.0.0 */
	ADDR_ANY6,      /* :: (dual-stack) */
	ADDR_LOOPBACK6, /* ::1 */
	ADDR_OTHER,
};

struct listener {
	uint16_t port;
	enum addr_kind kind;
	unsigned long inode;
};

/*
 * The listeners found, in `first` while they fit: a server's start is watched with a look
 * every millisecond, and a buffer taken from and given back to the allocator at each look
 * would cost a fresh page (and its fault) each time with musl's allocator.
 */
#define LISTENERS_INLINE 64
struct listeners {
	struct listener *v; /* first, or allocated */
	size_t n, cap;
	struct listener first[LISTENERS_INLINE];
};

static void listeners_free(struct listeners *l)
{
	if (l->v != l->first)
		free(l->v);
}

static int hex_nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* "0100007F" -> the four bytes of the word as they sit in memory (network order). */
static int parse_word(const char *s, uint8_t out[4])
{
	uint32_t w = 0;

	for (int i = 0; i < 8; i++) {
		int v = hex_nibble(s[i]);

		if (v < 0)
			return -EINVAL;
		w = (w << 4) | (uint32_t)v;
	}
	memcpy(out, &w, 4);
	return 0;
}

static enum addr_kind classify(const uint8_t *a, size_t len)
{
	static const uint8_t zero[16];
	static const uint8_t mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (len == 4) {
		if (a[0] == 127)
			return ADDR_LOOPBACK4;
		return memcmp(a, zero, 4) ? ADDR_OTHER : ADDR_ANY4;
	}
	if (!memcmp(a, zero, 16))
		return ADDR_ANY6;
	if (!memcmp(a, zero, 15) && a[15] == 1)
		return ADDR_LOOPBACK6;
	if (!memcmp(a, mapped, 12))
		return a[12] == 127 ? ADDR_LOOPBACK4
		                    : (memcmp(a + 12, zero, 4) ? ADDR_OTHER : ADDR_ANY4);
	return ADDR_OTHER;
}

/* One line of /proc/net/tcp{,6}; 1 for a listener, 0 for anything else. */
static int parse_line(char *line, size_t addr_len, struct listener *ret)
{
	char *tok[10], *save = NULL;
	uint8_t addr[16];
	int n = 0;
	char *colon, *end;

	for (char *t = strtok_r(line, " \t\n", &save); t && n < 10;
	     t = strtok_r(NULL, " \t\n", &save))
		tok[n++] = t;
	if (n < 10)
		return 0;
	if (strtoul(tok[3], &end, 16) != TCP_LISTEN || *end)
		return 0;
	colon = strchr(tok[1], ':');
	if (!colon || (size_t)(colon - tok[1]) != addr_len * 2)
		return 0;
	for (size_t i = 0; i < addr_len / 4; i++)
		if (parse_word(tok[1] + i * 8, addr + i * 4) < 0)
			return 0;
	unsigned long port = strtoul(colon + 1, &end, 16);
	if (*end || port > 65535)
		return 0;
	unsigned long inode = strtoul(tok[9], &end, 10);
	if (*end)
		return 0;
	ret->port = (uint16_t)port;
	ret->kind = classify(addr, addr_len);
	ret->inode = inode;
	return 1;
}

static int listeners_push(struct listeners *l, const struct listener *x);

static int read_table(const char *path, size_t addr_len, struct listeners *l, bool missing_ok)
{
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	bool first = true;

	if (!f)
		return missing_ok && errno == ENOENT ? 0 : -errno;
	while (getline(&line, &cap, f) > 0) {
		struct listener x;

		if (first) { /* the header */
			first = false;
			continue;
		}
		if (parse_line(line, addr_len, &x) <= 0)
			continue;
		if (listeners_push(l, &x) < 0)
			return -ENOMEM;
	}
	return ferror(f) ? -EIO : 0;
}

static int listeners_push(struct listeners *l, const struct listener *x)
{
	if (!l->cap) {
		l->v = l->first;
		l->cap = LISTENERS_INLINE;
	}
	if (l->n == l->cap) {
		struct listener *nv = malloc(2 * l->cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		memcpy(nv, l->v, l->n * sizeof(*nv));
		listeners_free(l);
		l->v = nv;
		l->cap *= 2;
	}
	l->v[l->n++] = *x;
	return 0;
}

/*
 * The listening TCP sockets of one family from the kernel's sock_diag interface: it filters
 * by state itself, so the answer stays small however many connections wait in TIME_WAIT
 * (reading /proc/net/tcp walks every one of them). Returns -errno when unavailable.
 */
static int diag_listeners(int fd, int family, struct listeners *l)
{
	struct {
		struct nlmsghdr nlh;
		struct inet_diag_req_v2 req;
	} q = {
	    .nlh = {.nlmsg_len = sizeof(q),
	            .nlmsg_type = SOCK_DIAG_BY_FAMILY,
	            .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
	    .req = {.sdiag_family = (uint8_t)family,
	            .sdiag_protocol = IPPROTO_TCP,
	            .idiag_states = 1U << TCP_LISTEN},
	};
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	char buf[16384] __attribute__((aligned(NLMSG_ALIGNTO)));

	if (sendto(fd, &q, sizeof(q), 0, (struct sockaddr *)&nl, sizeof(nl)) < 0)
		return -errno;
	for (;;) {
		/* MSG_TRUNC: the datagram's whole length, even where it did not fit. */
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_TRUNC);
		size_t left;
		struct nlmsghdr *h;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		/* A dump always ends with NLMSG_DONE; a cut datagram would lose it. */
		if (n == 0 || (size_t)n > sizeof(buf))
			return -EIO;
		/*
		 * A dump comes in as many datagrams as it takes (about a hundred listeners each):
		 * read until NLMSG_DONE. NLMSG_NEXT counts `left` down, not n.
		 */
		left = (size_t)n;
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
			const struct inet_diag_msg *m;
			struct listener x;

			if (h->nlmsg_type == NLMSG_DONE) {
				/* The kernel says here when it could not finish the dump. */
				if (h->nlmsg_len >= NLMSG_LENGTH(sizeof(int)) &&
				    *(const int *)NLMSG_DATA(h) < 0)
					return *(const int *)NLMSG_DATA(h);
				return 0;
			}
			if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);
				return e->error ? e->error : -EIO;
			}
			if (h->nlmsg_len < NLMSG_LENGTH(sizeof(*m)))
				continue;
			m = NLMSG_DATA(h);
			if (m->idiag_state != TCP_LISTEN)
				continue;
			x.port = ntohs(m->id.idiag_sport);
			x.kind = classify((const uint8_t *)m->id.idiag_src,
			                  m->idiag_family == AF_INET ? 4 : 16);
			x.inode = m->idiag_inode;
			if (listeners_push(l, &x) < 0)
				return -ENOMEM;
		}
	}
}

static int read_listeners(struct listeners *l, struct err *err)
{
	/* One socket for both families: each dump ends with NLMSG_DONE before the next is asked. */
	_cleanup_close_ int fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	/* The kernel answers at once; a second is the cap on a wait for it all the same. */
	static const struct timeval cap = {.tv_sec = 1};
	int r = fd < 0 ? -errno : 0;

	if (r == 0 && setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &cap, sizeof(cap)) < 0)
		r = -errno;
	if (r == 0)
		r = diag_listeners(fd, AF_INET, l);

	if (r == 0)
		r = diag_listeners(fd, AF_INET6, l);
	if (r == 0)
		return 0;
	/* No sock_diag (a kernel without inet_diag): the /proc tables say the same. */
	l->n = 0;
	r = read_table("/proc/net/tcp", 4, l, false);

	if (r < 0) {
		errno = -r;
		return err_errno(err, "read /proc/net/tcp");
	}
	r = read_table("/proc/net/tcp6", 16, l, true);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "read /proc/net/tcp6");
	}
	return 0;
}

static int cmp_inode(const void *a, const void *b)
{
	unsigned long x = *(const unsigned long *)a, y = *(const unsigned long *)b;

	return x < y ? -1 : x > y;
}

/* The socket inodes held by pids, sorted. Processes we cannot look into are skipped. */
static int socket_inodes(const pid_t *pids, size_t n_pids, unsigned long **ret, size_t *ret_n)
{
	_cleanup_free_ unsigned long *v = NULL;
	size_t n = 0, cap = 0;

	for (size_t i = 0; i < n_pids; i++) {
		_cleanup_closedir_ DIR *d = NULL;
		struct dirent *de;
		char path[64];
		int dfd;

		if (pids[i] <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/fd", (int)pids[i]);
		d = opendir(path);
		if (!d)
			continue;
		dfd = dirfd(d);
		while ((de = readdir(d))) {
			char link[64];
			unsigned long ino;
			ssize_t len;
			char *end;

			if (de->d_name[0] == '.')
				continue;
			len = readlinkat(dfd, de->d_name, link, sizeof(link) - 1);
			if (len <= 0)
				continue;
			link[len] = '\0';
			if (strncmp(link, "socket:[", 8))
				continue;
			ino = strtoul(link + 8, &end, 10);
			if (*end != ']')
				continue;
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				unsigned long *nv = realloc(v, nc * sizeof(*nv));

				if (!nv)
					return -ENOMEM;
				v = nv;
				cap = nc;
			}
			v[n++] = ino;
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_inode);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

static bool held(const unsigned long *inodes, size_t n, unsigned long inode)
{
	return inode != 0 && n && bsearch(&inode, inodes, n, sizeof(*inodes), cmp_inode);
}

static bool any_on(const struct listeners *l, uint16_t port)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].port == port)
			return true;
	return false;
}

static bool reaches_loopback4(enum addr_kind k)
{
	return k == ADDR_LOOPBACK4 || k == ADDR_ANY4 || k == ADDR_ANY6;
}

int listen_check(uint16_t port, const pid_t *pids, size_t n_pids, enum listen_state *ret,
                 struct err *err)
{
	_cleanup_free_ unsigned long *inodes = NULL;
	_cleanup_(listeners_free) struct listeners l = {0};
	bool ours4 = false, ours6 = false, ours_other = false, foreign4 = false, foreign = false;
	size_t n_inodes = 0;
	int r;

	r = read_listeners(&l, err);
	if (r < 0)
		return r;
	/* Nobody on the port (the usual answer while a server starts): no process to look into. */
	if (!any_on(&l, port)) {
		*ret = LISTEN_NONE;
		return 0;
	}
	r = socket_inodes(pids, n_pids, &inodes, &n_inodes);
	if (r < 0)
		return err_set(err, ERR_FAILED, -r, "list the sockets of the boot's processes");
	for (size_t i = 0; i < l.n; i++) {
		const struct listener *x = &l.v[i];

		if (x->port != port)
			continue;
		if (held(inodes, n_inodes, x->inode)) {
			if (reaches_loopback4(x->kind))
				ours4 = true;
			else if (x->kind == ADDR_LOOPBACK6)
				ours6 = true;
			else
				ours_other = true;
		} else {
			foreign = true;
			if (reaches_loopback4(x->kind))
				foreign4 = true;
		}
	}
	/* What a client of 127.0.0.1:port reaches decides first. */
	if (ours4)
		*ret = LISTEN_OURS;
	else if (foreign4)
		*ret = LISTEN_FOREIGN;
	else if (ours6)
		*ret = LISTEN_OURS_V6_ONLY;
	else if (ours_other)
		*ret = LISTEN_OURS_OTHER_ADDR;
	else if (foreign)
		*ret = LISTEN_FOREIGN;
	else
		*ret = LISTEN_NONE;
	return 0;
}

int listen_check_port_taken(uint16_t port, bool *ret, struct err *err)
{
	_cleanup_(listeners_free) struct listeners l = {0};
	int r = read_listeners(&l, err);

	if (r == 0)
		*ret = any_on(&l, port);
	return r;
}

size_t listen_check_ports_of(const pid_t *pids, size_t n_pids, uint16_t *ret_ports, size_t max)
{
	_cleanup_free_ unsigned long *inodes = NULL;
	_cleanup_(listeners_free) struct listeners l = {0};
	size_t n_inodes = 0, n = 0;
	struct err e;

	if (read_listeners(&l, &e) < 0 || socket_inodes(pids, n_pids, &inodes, &n_inodes) < 0)
		return 0;
	for (size_t i = 0; i < l.n && n < max; i++) {
		bool seen = false;

		if (!held(inodes, n_inodes, l.v[i].inode))
			continue;
		for (size_t j = 0; j < n && !seen; j++)
			seen = ret_ports[j] == l.v[i].port;
		if (!seen)
			ret_ports[n++] = l.v[i].port;
	}
	return n;
}

/*
 * A wildcard socket conflicts with every socket on its port, so a port the kernel gives to
 * "::" (dual-stack) is free on every address, and one it gives to 0.0.0.0 on every IPv4
 * address: the app may bind 127.0.0.1, 0.0.0.0 or "::" alike. Bound on 127.0.0.1 alone, the
 * kernel could hand out a port a socket on another local address already has, and an app
 * binding 0.0.0.0 would fail.
 */
static int pick_port(int family, bool any, uint16_t *ret, const char **ret_call)
{
	struct sockaddr_storage ss = {0};
	socklen_t len =
	    family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	_cleanup_close_ int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int off = 0;

	*ret_call = "socket";
	if (fd < 0)
		return -errno;
	ss.ss_family = (sa_family_t)family;
	if (!any) /* only for AF_INET */
		((struct sockaddr_in *)&ss)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	*ret_call = "setsockopt IPV6_V6ONLY";
	if (family == AF_INET6 && setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &off, sizeof(off)) < 0)
		return -errno;
	*ret_call = "bind";
	if (bind(fd, (struct sockaddr *)&ss, len) < 0)
		return -errno;
	*ret_call = "getsockname";
	if (getsockname(fd, (struct sockaddr *)&ss, &len) < 0)
		return -errno;
	*ret = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
	                                : ((struct sockaddr_in *)&ss)->sin_port);
	return 0;
}

int listen_check_pick_free_port(uint16_t *ret, struct err *err)
{
	const char *call;
	int r;

	/*
	 * "::" first; where IPv6 is missing or refused (no such family, a seccomp filter, a
	 * security module), 0.0.0.0 covers every IPv4 address. Only when both are refused is the
	 * port picked on 127.0.0.1, free there alone.
	 */
	r = pick_port(AF_INET6, true, ret, &call);
	if (r < 0) {
		log_debug("pick a free port on [::]: %s: %s; trying 0.0.0.0", call, strerror(-r));
		r = pick_port(AF_INET, true, ret, &call);
	}
	if (r < 0) {
		log_warn("pick a free port on 0.0.0.0: %s: %s; picking one on 127.0.0.1, which an "
		         "app that binds every address may find taken elsewhere",
		         call, strerror(-r));
		r = pick_port(AF_INET, false, ret, &call);
	}
	if (r < 0) {
		errno = -r;
		return err_errno(err, "pick a free port on 127.0.0.1: %s", call);
	}
	return 0;
}
