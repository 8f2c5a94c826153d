/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Limits through cgroups, v2 first, v1 beside it. cgroup v2: memory.max (and memory.swap.max
 * 0), pids.max, cpu.weight in the set's own directory, counted by memory.events (oom_kill) and
 * pids.events (max). cgroup v1: memory.limit_in_bytes (and memory.memsw.limit_in_bytes where
 * swap is accounted), pids.max, cpu.shares (weight 100 = 1024 shares), counted by
 * memory.oom_control (oom_kill) and pids.events (max).
 */
#include "cgroup_limits.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup_place.h"
#include "cleanup.h"
#include "procstatus.h"
#include "file.h"
#include "log.h"

#define PSEUDO_MAX 4096

static const char *const v1_names[CGROUP_LIMITS_N] = {"memory", "pids", "cpu"};
static const char *const nouns[CGROUP_LIMITS_N] = {"memory", "processes", "CPU weight"};

void cgroup_limits_init(struct cgroup_limits_set *s)
{
	for (int i = 0; i < CGROUP_LIMITS_N; i++) {
		s->dir[i] = NULL;
		s->v2[i] = false;
		s->join_fd[i] = -1;
		s->inside[i] = false;
		s->back_fd[i] = -1;
	}
}

void cgroup_limits_dispose(struct cgroup_limits_set *s)
{
	for (int i = 0; i < CGROUP_LIMITS_N; i++) {
		free(s->dir[i]);
		s->dir[i] = NULL;
		if (s->join_fd[i] >= 0)
			close(s->join_fd[i]);
		if (s->back_fd[i] >= 0)
			close(s->back_fd[i]);
		s->join_fd[i] = -1;
		s->back_fd[i] = -1;
	}
}

static bool wanted(const struct cgroup_limits *l, int c)
{
	switch (c) {
	case CGROUP_LIMITS_MEMORY:
		return l->memory_max > 0;
	case CGROUP_LIMITS_PIDS:
		return l->pids_max > 0;
	default:
		return l->cpu_weight > 0;
	}
}

/* A small pseudo-file of dir, NUL-terminated; -errno. */
static int read_small(const char *dir, const char *name, char *buf, size_t len)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int fd = -1;
	ssize_t n;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	n = file_read_all(fd, buf, len - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	return 0;
}

static int write_small(const char *dir, const char *name, const char *text)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int fd = -1;

	if (asprintf(&p, "%s/%s", dir, name) < 0)
		return -ENOMEM;
	fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	return file_write_all(fd, text, strlen(text));
}

/* Whether a space-separated list (cgroup.controllers) names word. */
static bool words_have(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
			return true;
	return false;
}

/*
 * The set's cgroup2 directory offers controller c: listed in its cgroup.controllers, or made
 * so by enabling it in the parent (our sandbox-app-runtime/ directory, which holds no process).
 */
static bool v2_offers(const char *set_dir, int c, bool create)
{
	_cleanup_free_ char *parent = strdup(set_dir);
	char buf[PSEUDO_MAX], plus[32];
	char *slash;

	if (read_small(set_dir, "cgroup.controllers", buf, sizeof(buf)) == 0 &&
	    words_have(buf, v1_names[c]))
		return true;
	if (!create || !parent || !(slash = strrchr(parent, '/')))
		return false;
	*slash = '\0';
	if (read_small(parent, "cgroup.controllers", buf, sizeof(buf)) < 0 ||
	    !words_have(buf, v1_names[c]))
		return false;
	snprintf(plus, sizeof(plus), "+%s", v1_names[c]);
	if (write_small(parent, "cgroup.subtree_control", plus) < 0)
		return false;
	return read_small(set_dir, "cgroup.controllers", buf, sizeof(buf)) == 0 &&
	       words_have(buf, v1_names[c]);
}

/* Whether the cgroup directory own is .../sandbox-app-runtime/<name>. */
static bool inside_named(const char *own, const char *name)
{
	size_t n = strlen(own), k = strlen(name), d = strlen(CGROUP_PLACE_SET_DIR);

	return n > k + d + 2 && !strcmp(own + n - k, name) && own[n - k - 1] == '/' &&
	       !strncmp(own + n - k - 1 - d, CGROUP_PLACE_SET_DIR, d) && own[n - k - d - 2] == '/';
}

static int place_v1(const struct cgroup_place_view *view, const char *set_dir, const char *name,
                    int c, bool create, struct cgroup_limits_set *s, struct err *err)
{
	_cleanup_free_ char *own = NULL, *base = NULL, *dir = NULL, *procs = NULL;

	if (cgroup_place_own_in(view, v1_names[c], &own) < 0)
		return 0; /* no such hierarchy: not placed */
	if (!create && inside_named(own, name)) {
		/* We sit in it (the engine, the supervisor): our forks are born there. */
		s->dir[c] = TAKE_PTR(own);
		s->inside[c] = true;
		return 0;
	}
	if (asprintf(&base, "%s/" CGROUP_PLACE_SET_DIR, own) < 0 ||
	    asprintf(&dir, "%s/%s", base, name) < 0)
		return err_oom(err);
	if (set_dir && strcmp(dir, set_dir) == 0) {
		/* The set's own cgroup (v1 pids): joined already. */
		s->dir[c] = TAKE_PTR(dir);
		return 0;
	}
	if (create) {
		if (cgroup_place_fs_magic(base) != CGROUP_SUPER_MAGIC &&
		    cgroup_place_fs_magic(base) != -ENOENT)
			return 0;
		if ((mkdir(base, 0755) < 0 && errno != EEXIST) ||
		    (mkdir(dir, 0755) < 0 && errno != EEXIST))
			return err_errno(err, "create cgroup %s", dir);
	}
	if (cgroup_place_fs_magic(dir) != CGROUP_SUPER_MAGIC)
		return 0;
	if (asprintf(&procs, "%s/" CGROUP_LIMITS_JOIN_FILE, dir) < 0)
		return err_oom(err);
	s->join_fd[c] = open(procs, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (s->join_fd[c] < 0)
		return err_errno(err, "open %s", procs);
	s->dir[c] = TAKE_PTR(dir);
	return 0;
}

static void view_disposep(struct cgroup_place_view *v)
{
	cgroup_place_view_dispose(v);
}

int cgroup_limits_place(const char *set_dir, bool set_v2, const char *name,
                        const struct cgroup_limits *want, bool create, struct cgroup_limits_set *s,
                        struct err *err)
{
	_cleanup_(view_disposep) struct cgroup_place_view view = {0};
	int viewed = 0;

	for (int c = 0; c < CGROUP_LIMITS_N; c++) {
		if (s->dir[c] || (create && !wanted(want, c)))
			continue;
		if (set_v2 && set_dir && *set_dir && v2_offers(set_dir, c, create)) {
			s->dir[c] = strdup(set_dir);
			if (!s->dir[c])
				return err_oom(err);
			s->v2[c] = true;
			continue;
		}
		/* Where we sit, read once for the three hierarchies; unreadable: none to place in.
		 */
		if (!viewed) {
			int r = cgroup_place_view_read(&view);
			viewed = r == 0 ? 1 : -1;
			if (r < 0)
				log_warn(
				    "cannot read /proc/self/mountinfo or /proc/self/cgroup (%s): "
				    "no v1 cgroup to place the limits in",
				    strerror(-r));
		}
		if (viewed < 0)
			continue;
		if (place_v1(&view, set_v2 ? NULL : set_dir, name, c, create, s, err) < 0)
			return -1;
	}
	return 0;
}

static int write_limit(const struct cgroup_limits_set *s, int c, const char *file, uint64_t value,
                       struct err *err)
{
	char text[32];
	int r;

	snprintf(text, sizeof(text), "%" PRIu64, value);
	r = write_small(s->dir[c], file, text);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "cannot limit %s: write %s to %s/%s", nouns[c], text,
		                 s->dir[c], file);
	}
	return 0;
}

int cgroup_limits_write(const struct cgroup_limits_set *s, const struct cgroup_limits *l,
                        struct err *err)
{
	for (int c = 0; c < CGROUP_LIMITS_N; c++)
		if (wanted(l, c) && !s->dir[c])
			return err_set(
			    err, ERR_FAILED, ENOTSUP,
			    "cannot limit %s: no %s cgroup controller is available here "
			    "(neither in the cgroup2 hierarchy nor as a v1 hierarchy below "
			    "/sys/fs/cgroup); mount one, or drop the limit",
			    nouns[c], v1_names[c]);
	if (l->memory_max) {
		int c = CGROUP_LIMITS_MEMORY;
		bool v2 = s->v2[c];
		char text[32];

		snprintf(text, sizeof(text), "%" PRIu64, l->memory_max);
		/* v1: memory+swap must stay >= memory, whatever an earlier boot left. */
		if (!v2)
			(void)write_small(s->dir[c], "memory.memsw.limit_in_bytes", "-1");
		if (write_limit(s, c, v2 ? "memory.max" : "memory.limit_in_bytes", l->memory_max,
		                err) < 0)
			return -1;
		/* Without swap an allocation past the limit is an out-of-memory kill, not a crawl.
		 */
		if ((v2 ? write_small(s->dir[c], "memory.swap.max", "0")
		        : write_small(s->dir[c], "memory.memsw.limit_in_bytes", text)) < 0)
			log_debug("swap of %s is not limited (no swap accounting)", s->dir[c]);
	}
	if (l->pids_max && write_limit(s, CGROUP_LIMITS_PIDS, "pids.max", l->pids_max, err) < 0)
		return -1;
	if (l->cpu_weight) {
		int c = CGROUP_LIMITS_CPU;
		uint64_t shares = (uint64_t)l->cpu_weight * 1024 / 100;

		if (s->v2[c] ? write_limit(s, c, "cpu.weight", l->cpu_weight, err) < 0
		             : write_limit(s, c, "cpu.shares", shares < 2 ? 2 : shares, err) < 0)
			return -1;
	}
	return 0;
}

/* The number after "key " in a flat-keyed file; 0 when absent. */
static uint64_t keyed(const char *dir, const char *file, const char *key)
{
	char buf[PSEUDO_MAX];
	size_t n = strlen(key);

	if (!dir || read_small(dir, file, buf, sizeof(buf)) < 0)
		return 0;
	for (const char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (!strncmp(p, key, n) && p[n] == ' ')
			return strtoull(p + n + 1, NULL, 10);
	return 0;
}

/* A single number; "max" and v1's near-2^63 "unlimited" read as 0. */
static uint64_t number(const char *dir, const char *file)
{
	char buf[64];
	uint64_t v;

	if (!dir || read_small(dir, file, buf, sizeof(buf)) < 0 || !strncmp(buf, "max", 3))
		return 0;
	v = strtoull(buf, NULL, 10);
	return v >= (UINT64_C(1) << 62) ? 0 : v;
}

void cgroup_limits_read(const struct cgroup_limits_set *s, struct cgroup_limits_hits *ret)
{
	const char *mem = s->dir[CGROUP_LIMITS_MEMORY], *pids = s->dir[CGROUP_LIMITS_PIDS];
	const char *cpu = s->dir[CGROUP_LIMITS_CPU];

	memset(ret, 0, sizeof(*ret));
	if (s->v2[CGROUP_LIMITS_MEMORY]) {
		ret->oom_kills = keyed(mem, "memory.events", "oom_kill");
		ret->now.memory_max = number(mem, "memory.max");
	} else {
		ret->oom_kills = keyed(mem, "memory.oom_control", "oom_kill");
		ret->now.memory_max = number(mem, "memory.limit_in_bytes");
	}
	ret->forks_denied = keyed(pids, "pids.events", "max");
	ret->now.pids_max = (uint64_t)number(pids, "pids.max");
	if (s->v2[CGROUP_LIMITS_CPU])
		ret->now.cpu_weight = (unsigned)number(cpu, "cpu.weight");
	else if (cpu)
		ret->now.cpu_weight = (unsigned)(number(cpu, "cpu.shares") * 100 / 1024);
}

unsigned cgroup_limits_join_fds(const struct cgroup_limits_set *s, int *fds)
{
	unsigned n = 0;

	for (int c = 0; c < CGROUP_LIMITS_N; c++)
		if (s->join_fd[c] >= 0 && !s->inside[c])
			fds[n++] = s->join_fd[c];
	return n;
}

static int write_self(int fd)
{
	return file_write_all(fd, "0\n", 2);
}

/* Whether this process has one thread, the caller (/proc/self/status's Threads). */
static bool single_threaded(void)
{
	unsigned long n;

	return procstatus_field("Threads", 10, &n) == 0 && n == 1;
}

/* The file through which this process moves: see cgroup_limits_enter(). */
static const char *join_file(void)
{
	return single_threaded() ? CGROUP_LIMITS_JOIN_FILE : "cgroup.procs";
}

/* This process into the cgroup directory dir_fd: file (tasks or cgroup.procs) there; -errno. */
static int move_self(int dir_fd, const char *file)
{
	_cleanup_close_ int fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);

	return fd < 0 ? -errno : write_self(fd);
}

/*
 * A process of one thread moves through `tasks`: the kernel moves that one thread without
 * taking its thread-group lock, whose first taking in a while waits for an RCU grace period
 * (8-18 ms on the test machines, bench/cgroup_join_bench.c). One of several threads moves
 * through cgroup.procs, all of them, and pays that wait.
 */
int cgroup_limits_enter(struct cgroup_limits_set *s, struct err *err)
{
	_cleanup_(view_disposep) struct cgroup_place_view view = {0};
	const char *file = join_file();
	int viewed = cgroup_place_view_read(&view);

	for (int c = 0; c < CGROUP_LIMITS_N; c++) {
		_cleanup_free_ char *own = NULL;
		_cleanup_close_ int dir = -1;
		int r;

		if (s->join_fd[c] < 0 || s->inside[c])
			continue;
		/* Where we came from, as it was before the first move. */
		r = viewed < 0 ? viewed : cgroup_place_own_in(&view, v1_names[c], &own);
		if (r == 0 && (s->back_fd[c] = open(own, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0)
			r = -errno;
		if (r < 0) {
			cgroup_limits_leave(s);
			errno = -r;
			return err_errno(
			    err,
			    "cannot join the %s limit's cgroup: cannot find or open the "
			    "%s cgroup this process came from (/proc/self/cgroup, "
			    "/proc/self/mountinfo%s%s), to return to after the boot",
			    nouns[c], v1_names[c], own ? ": " : "", own ? own : "");
		}
		if (strcmp(file, CGROUP_LIMITS_JOIN_FILE) == 0)
			r = write_self(s->join_fd[c]);
		else
			r = (dir = open(s->dir[c], O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0
			        ? -errno
			        : move_self(dir, file);
		if (r < 0) {
			cgroup_limits_leave(s);
			errno = -r;
			return err_errno(err, "cannot join the %s limit's cgroup %s", nouns[c],
			                 s->dir[c]);
		}
		s->inside[c] = true;
	}
	return 0;
}

void cgroup_limits_leave(struct cgroup_limits_set *s)
{
	const char *file = join_file();

	for (int c = 0; c < CGROUP_LIMITS_N; c++) {
		int r;

		if (s->back_fd[c] < 0)
			continue;
		if (s->inside[c] && (r = move_self(s->back_fd[c], file)) < 0)
			log_debug("cannot leave the %s limit's cgroup %s: %s", nouns[c], s->dir[c],
			          strerror(-r));
		else
			s->inside[c] = false;
		close(s->back_fd[c]);
		s->back_fd[c] = -1;
	}
}

static int rmdir_errno(const char *path)
{
	return rmdir(path) < 0 ? -errno : 0;
}

void cgroup_limits_remove(const struct cgroup_limits_set *s)
{
	for (int c = 0; c < CGROUP_LIMITS_N; c++) {
		if (s->join_fd[c] < 0 || !s->dir[c] || s->inside[c])
			continue;
		int r = cgroup_place_remove_wait(s->dir[c], rmdir_errno);

		if (r < 0)
			log_debug("remove the %s limit's cgroup %s: %s", nouns[c], s->dir[c],
			          strerror(-r));
	}
}

int cgroup_limits_parse_size(const char *text, uint64_t *ret, struct err *err)
{
	static const struct {
		const char *name;
		unsigned shift;
	} units[] = {{"", 0},     {"b", 0},   {"k", 10},   {"kb", 10}, {"kib", 10},
	             {"m", 20},   {"mb", 20}, {"mib", 20}, {"g", 30},  {"gb", 30},
	             {"gib", 30}, {"t", 40},  {"tb", 40},  {"tib", 40}};
	uint64_t whole = 0, frac = 0, scale = 1;
	const char *p = text;
	char unit[8];
	size_t n = 0;

	if (!text)
		goto bad;
	while (*p == ' ')
		p++;
	if (*p < '0' || *p > '9')
		goto bad;
	for (; *p >= '0' && *p <= '9'; p++) {
		/* Checked before it can wrap: past 2^62 is no size anyway. */
		if (whole > ((UINT64_C(1) << 62) - 9) / 10)
			goto bad;
		whole = whole * 10 + (uint64_t)(*p - '0');
	}
	if (*p == '.') {
		p++;
		if (*p < '0' || *p > '9')
			goto bad;
		for (; *p >= '0' && *p <= '9'; p++)
			if (scale < 1000000) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				scale *= 10;
			}
	}
	if (*p == ' ')
		p++;
	for (; *p && *p != ' '; p++) {
		if (n + 1 >= sizeof(unit) ||
		    !((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z')))
			goto bad;
		unit[n++] = (char)(*p | 0x20);
	}
	unit[n] = '\0';
	while (*p == ' ')
		p++;
	if (*p)
		goto bad;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		unsigned sh = units[i].shift;

		if (strcmp(unit, units[i].name))
			continue;
		if (whole > ((UINT64_C(1) << 62) >> sh) || (scale > 1 && sh == 0 && frac))
			goto bad;
		*ret = (whole << sh) + (frac << sh) / scale;
		if (*ret == 0 || *ret > (UINT64_C(1) << 62))
			goto bad;
		return 0;
	}
bad:
	return err_set(err, ERR_REFUSED, EINVAL, "`%.40s` is not a size (e.g. 512MiB, 2GiB)",
	               text ? text : "");
}

void cgroup_limits_format_size(uint64_t bytes, char *buf, size_t len)
{
	static const char *const names[] = {"KiB", "MiB", "GiB", "TiB"};
	int u = -1;

	for (int i = 3; i >= 0 && u < 0; i--)
		if (bytes >= (UINT64_C(1) << (10 * (i + 1))))
			u = i;
	if (u < 0) {
		snprintf(buf, len, "%" PRIu64 " byte%s", bytes, bytes == 1 ? "" : "s");
		return;
	}
	uint64_t unit = UINT64_C(1) << (10 * (u + 1));
	uint64_t tenths = (bytes % unit) * 10 / unit;

	if (tenths)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 " %s", bytes / unit, tenths, names[u]);
	else
		snprintf(buf, len, "%" PRIu64 " %s", bytes / unit, names[u]);
}
