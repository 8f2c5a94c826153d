/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The processes of one boot. With a cgroup (v2 where a writable cgroup2 hierarchy is mounted
 * below /sys/fs/cgroup, else the v1 pids or freezer hierarchy) membership is the kernel's
 * cgroup.procs and nothing escapes by forking or setsid. Without one, the set is the recorded
 * process groups, everything descended from their members, and everything descended from the
 * recorded roots: the supervisor is a child subreaper, so the orphans of daemons that
 * double-fork are reparented to it and stay descendants.
 *
 * Stopping signals pid by pid through proc_signal(), which checks the start time, so a pid
 * recycled while we stop is never hit.
 */
#include "procset.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "cgroup_limits.h"
#include "cgroup_place.h"
#include "clock.h"
#include "cleanup.h"
#include "file.h"
#include "log.h"
#include "proc.h"

#define CGROUP_ROOT CGROUP_PLACE_ROOT
#define SET_DIR CGROUP_PLACE_SET_DIR
#define NAME_MAX_LEN 100
#define KILL_WAIT_MS 2000
#define NEST_MAX 32

struct pid_start {
	pid_t pid;
	uint64_t start;
};

struct procset {
	enum procset_backend backend;
	char *path; /* the cgroup directory, "" without one */
	int procs_fd;
	struct cgroup_limits_set lim; /* where the limits live (beside the set in cgroup v1) */
	char oom_before[16];          /* our oom_score_adj before procset_enter_limits(), or "" */
	struct pid_start *groups;
	size_t n_groups;
	struct pid_start *roots;
	size_t n_roots;
};

static bool name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > NAME_MAX_LEN || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.'))
			return false;
	return true;
}

static struct procset *procset_new(enum procset_backend backend, const char *path)
{
	struct procset *ps = calloc(1, sizeof(*ps));

	if (!ps)
		return NULL;
	ps->backend = backend;
	ps->procs_fd = -1;
	cgroup_limits_init(&ps->lim);
	ps->path = strdup(path);
	if (!ps->path) {
		free(ps);
		return NULL;
	}
	return ps;
}

void procset_free(struct procset *ps)
{
	if (!ps)
		return;
	if (ps->procs_fd >= 0)
		close(ps->procs_fd);
	cgroup_limits_dispose(&ps->lim);
	free(ps->path);
	free(ps->groups);
	free(ps->roots);
	free(ps);
}

/*
 * What a child writes "0" to, to join the set between fork and exec (proc_spawn()): a cgroup2
 * set's cgroup.procs (or nothing: it is born inside, clone3()); a v1 set's tasks, which moves a
 * process of one thread without the kernel's RCU grace period (cgroup_limits.h).
 */
static const char *join_file(bool v1)
{
	return v1 ? CGROUP_LIMITS_JOIN_FILE : "cgroup.procs";
}

static int open_procs(const char *dir, bool v1)
{
	_cleanup_free_ char *p = NULL;

	if (asprintf(&p, "%s/%s", dir, join_file(v1)) < 0)
		return -ENOMEM;
	int fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	return fd < 0 ? -errno : fd;
}

/* Make <base>/<name> in the hierarchy of controller (NULL: cgroup2). */
static int cgroup_make(const char *controller, const char *name, struct procset **ret,
                       struct err *err)
{
	_cleanup_procset_ struct procset *ps = NULL;
	_cleanup_free_ char *base = NULL, *dir = NULL;
	long want = controller ? CGROUP_SUPER_MAGIC : CGROUP2_SUPER_MAGIC;
	const char *what = controller ? controller : "cgroup2";
	int r;

	r = cgroup_place_base(controller, &base);
	if (r < 0) {
		errno = -r;
		return err_errno(err, "find where this process sits in the %s hierarchy", what);
	}
	if (cgroup_place_fs_magic(base) != want && cgroup_place_fs_magic(base) != -ENOENT)
		return err_set(err, ERR_FAILED, EINVAL, "%s is not a %s hierarchy", base, what);
	if (mkdir(base, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "create cgroup %s", base);
	if (asprintf(&dir, "%s/%s", base, name) < 0)
		return err_oom(err);
	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "create cgroup %s", dir);
	if (cgroup_place_fs_magic(dir) != want)
		return err_set(err, ERR_FAILED, EINVAL, "%s is not a %s cgroup", dir, what);
	ps = procset_new(controller ? PROCSET_CGROUP1 : PROCSET_CGROUP2, dir);
	if (!ps)
		return err_oom(err);
	ps->procs_fd = open_procs(dir, controller != NULL);
	if (ps->procs_fd < 0) {
		errno = -ps->procs_fd;
		return err_errno(err, "open %s/%s", dir, join_file(controller != NULL));
	}
	*ret = TAKE_PTR(ps);
	return 0;
}

int procset_create_backend(const char *name, enum procset_backend backend, struct procset **ret,
                           struct err *err)
{
	struct procset *ps;
	struct err e2;

	if (!name || !name_valid(name))
		return err_set(err, ERR_FAILED, EINVAL, "invalid process set name \"%s\"",
		               name ? name : "");
	switch (backend) {
	case PROCSET_CGROUP2:
		return cgroup_make(NULL, name, ret, err);
	case PROCSET_CGROUP1:
		if (cgroup_make("pids", name, ret, &e2) == 0)
			return 0;
		log_debug("process set: %s", e2.msg);
		return cgroup_make("freezer", name, ret, err);
	case PROCSET_AUTO:
		if (cgroup_make(NULL, name, ret, &e2) == 0)
			return 0;
		log_debug("process set: %s", e2.msg);
		if (procset_create_backend(name, PROCSET_CGROUP1, ret, &e2) == 0)
			return 0;
		log_debug("process set: %s; tracking process groups instead", e2.msg);
		break;
	case PROCSET_NO_CGROUP:
		break;
	default:
		return err_set(err, ERR_FAILED, EINVAL, "unknown process set backend %d", backend);
	}
	ps = procset_new(PROCSET_NO_CGROUP, "");
	if (!ps)
		return err_oom(err);
	*ret = ps;
	return 0;
}

int procset_create(const char *name, struct procset **ret, struct err *err)
{
	return procset_create_backend(name, PROCSET_AUTO, ret, err);
}

/* /sys/fs/cgroup/.../sandbox-app-runtime/<name>, no empty, "." or ".." component. */
static bool cgroup_path_valid(const char *path)
{
	const char *last = NULL, *prev = NULL;
	const char *p;

	if (strncmp(path, CGROUP_ROOT "/", strlen(CGROUP_ROOT) + 1) || strlen(path) >= PATH_MAX)
		return false;
	for (p = path + 1; p && *p;) {
		const char *e = strchr(p, '/');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == 0 || (len == 1 && p[0] == '.') || (len == 2 && !strncmp(p, "..", 2)))
			return false;
		prev = last;
		last = p;
		p = e ? e + 1 : NULL;
		if (e && !*p)
			return false; /* trailing slash */
	}
	if (!prev || strncmp(prev, SET_DIR "/", strlen(SET_DIR) + 1))
		return false;
	return name_valid(last);
}

int procset_open(const char *cgroup_path, struct procset **ret, struct err *err)
{
	_cleanup_procset_ struct procset *ps = NULL;
	_cleanup_free_ char *real = NULL;
	long magic;

	if (!cgroup_path || !*cgroup_path) {
		ps = procset_new(PROCSET_NO_CGROUP, "");
		if (!ps)
			return err_oom(err);
		*ret = TAKE_PTR(ps);
		return 0;
	}
	if (!cgroup_path_valid(cgroup_path))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "refusing process set %s: not a cgroup of ours below " CGROUP_ROOT,
		               cgroup_path);
	real = realpath(cgroup_path, NULL);
	if (!real && errno == ENOENT)
		return err_set(err, ERR_FAILED, ENOENT, "process set %s is gone", cgroup_path);
	if (!real)
		return err_errno(err, "open process set %s", cgroup_path);
	if (strcmp(real, cgroup_path))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "refusing process set %s: it resolves to %s", cgroup_path, real);
	magic = cgroup_place_fs_magic(cgroup_path);
	if (magic != CGROUP_SUPER_MAGIC && magic != CGROUP2_SUPER_MAGIC)
		return err_set(err, ERR_REFUSED, EINVAL, "refusing process set %s: not a cgroup",
		               cgroup_path);
	ps = procset_new(magic == CGROUP2_SUPER_MAGIC ? PROCSET_CGROUP2 : PROCSET_CGROUP1,
	                 cgroup_path);
	if (!ps)
		return err_oom(err);
	ps->procs_fd = open_procs(cgroup_path, ps->backend == PROCSET_CGROUP1);
	if (ps->procs_fd < 0) {
		errno = -ps->procs_fd;
		return err_errno(err, "open %s/%s", cgroup_path,
		                 join_file(ps->backend == PROCSET_CGROUP1));
	}
	/* The limits' cgroups of the same name, where they exist. */
	if (cgroup_limits_place(cgroup_path, ps->backend == PROCSET_CGROUP2,
	                        strrchr(cgroup_path, '/') + 1, &(struct cgroup_limits){0}, false,
	                        &ps->lim, err) < 0)
		return -1;
	*ret = TAKE_PTR(ps);
	return 0;
}

int procset_limit(struct procset *ps, const char *name, const struct cgroup_limits *l,
                  struct err *err)
{
	if (!name_valid(name))
		return err_set(err, ERR_FAILED, EINVAL, "invalid process set name \"%s\"", name);
	if (cgroup_limits_place(ps->path, ps->backend == PROCSET_CGROUP2, name, l, true, &ps->lim,
	                        err) < 0)
		return -1;
	return cgroup_limits_write(&ps->lim, l, err);
}

unsigned procset_join_fds(const struct procset *ps, int fds[CGROUP_LIMITS_N])
{
	return cgroup_limits_join_fds(&ps->lim, fds);
}

int procset_enter_limits(struct procset *ps, struct err *err)
{
	int r;

	if (procset_join_fds(ps, (int[CGROUP_LIMITS_N]){0}) == 0)
		return 0;
	/* Kept out of the kernel's choice when the boot runs out of memory: its own is killed. */
	r = proc_oom_score_protect(ps->oom_before, sizeof(ps->oom_before));
	if (r < 0)
		log_debug("cannot protect this process from the out-of-memory killer: %s",
		          strerror(-r));
	if (cgroup_limits_enter(&ps->lim, err) < 0) {
		procset_leave_limits(ps);
		return -1;
	}
	return 0;
}

void procset_leave_limits(struct procset *ps)
{
	int r;

	cgroup_limits_leave(&ps->lim);
	r = proc_oom_score_restore(ps->oom_before);
	if (r < 0)
		log_debug("cannot restore oom_score_adj %s: %s", ps->oom_before, strerror(-r));
	ps->oom_before[0] = '\0';
}

bool procset_inside_limits(const struct procset *ps)
{
	for (int c = 0; c < CGROUP_LIMITS_N; c++)
		if (ps->lim.inside[c])
			return true;
	return false;
}

void procset_limit_hits(const struct procset *ps, struct cgroup_limits_hits *ret)
{
	cgroup_limits_read(&ps->lim, ret);
}

void procset_remove_limits(struct procset *ps)
{
	cgroup_limits_remove(&ps->lim);
}

const char *procset_cgroup_path(const struct procset *ps)
{
	return ps->path;
}

enum procset_backend procset_backend_of(const struct procset *ps)
{
	return ps->backend;
}

int procset_procs_fd(const struct procset *ps)
{
	return ps->procs_fd;
}

static int pid_list_put(struct pid_start **v, size_t *n, pid_t pid, uint64_t start)
{
	struct pid_start *nv;

	for (size_t i = 0; i < *n; i++)
		if ((*v)[i].pid == pid) {
			(*v)[i].start = start;
			return 0;
		}
	nv = realloc(*v, (*n + 1) * sizeof(**v));
	if (!nv)
		return -ENOMEM;
	nv[*n] = (struct pid_start){pid, start};
	*v = nv;
	(*n)++;
	return 0;
}

int procset_add_group(struct procset *ps, pid_t pgid, uint64_t start_time)
{
	if (pgid <= 1 || pgid == getpgrp())
		return -EINVAL;
	return pid_list_put(&ps->groups, &ps->n_groups, pgid, start_time);
}

int procset_add_root(struct procset *ps, pid_t pid, uint64_t start_time)
{
	if (pid <= 0)
		return -EINVAL;
	return pid_list_put(&ps->roots, &ps->n_roots, pid, start_time);
}

/* ---- membership ---- */

struct member_list {
	struct proc_stat *v;
	size_t n, cap;
};

static int members_add(struct member_list *m, const struct proc_stat *st)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].pid == st->pid)
			return 0;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 32;
		struct proc_stat *nv = realloc(m->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		m->v = nv;
		m->cap = cap;
	}
	m->v[m->n++] = *st;
	return 0;
}

static bool is_zombie(const struct proc_stat *st)
{
	return st->state == 'Z' || st->state == 'X' || st->state == 'x';
}

/* A cgroup.procs file holds a pid a line: 64 MiB is millions of them. */
#define PROCS_FILE_MAX (64u << 20)

/* cgroup.procs of dirfd and of every nested cgroup. */
static int cgroup_members(int dirfd, int depth, struct member_list *m)
{
	_cleanup_free_ char *procs = NULL;
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	struct err err;
	int r, sub;

	if (file_read_capped(dirfd, "cgroup.procs", PROCS_FILE_MAX, READ_NOFOLLOW, &procs, NULL,
	                     &err) < 0)
		return err.code ? -err.code : -EIO;
	for (char *p = procs; *p;) {
		char *end;
		long pid = strtol(p, &end, 10);
		struct proc_stat st;

		if (end == p)
			break;
		p = end;
		while (*p == '\n')
			p++;
		if (pid <= 1 || proc_stat_read((pid_t)pid, &st) < 0 || is_zombie(&st))
			continue;
		r = members_add(m, &st);
		if (r < 0)
			return r;
	}
	if (depth >= NEST_MAX)
		return 0;
	sub = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (sub < 0)
		return -errno;
	d = fdopendir(sub);
	if (!d) {
		close(sub);
		return -errno;
	}
	while ((de = readdir(d))) {
		_cleanup_close_ int child = -1;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		child = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (child < 0)
			continue; /* removed meanwhile */
		r = cgroup_members(child, depth + 1, m);
		if (r < 0 && r != -ENOENT)
			return r;
	}
	return 0;
}

/* Every process on the machine (this pid namespace), zombies included. */
static int proc_table(struct member_list *t)
{
	_cleanup_closedir_ DIR *d = opendir("/proc");
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct proc_stat st;
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		if (proc_stat_read((pid_t)pid, &st) < 0)
			continue;
		if (t->n == t->cap) {
			size_t cap = t->cap ? t->cap * 2 : 256;
			struct proc_stat *nv = realloc(t->v, cap * sizeof(*nv));

			if (!nv)
				return -ENOMEM;
			t->v = nv;
			t->cap = cap;
		}
		t->v[t->n++] = st;
	}
	return 0;
}

static const struct proc_stat *table_find(const struct member_list *t, pid_t pid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->v[i].pid == pid)
			return &t->v[i];
	return NULL;
}

/* A recorded group counts unless its leader runs with another start time (a recycled pid). */
static bool group_valid(const struct member_list *t, const struct pid_start *g)
{
	const struct proc_stat *leader = table_find(t, g->pid);

	return !leader || !g->start || leader->start_time == g->start;
}

static bool root_valid(const struct member_list *t, const struct pid_start *r)
{
	const struct proc_stat *st = table_find(t, r->pid);

	return st && !is_zombie(st) && (!r->start || st->start_time == r->start);
}

/*
 * Members of recorded groups, descendants of cgroup members and of group members, and (without
 * a cgroup) descendants of roots, added to m.
 */
static int walk_members(const struct procset *ps, struct member_list *m)
{
	_cleanup_free_ bool *in = NULL;
	_cleanup_free_ bool *root = NULL;
	struct member_list t = {0};
	bool changed = true;
	int r;

	r = proc_table(&t);
	if (r < 0)
		goto out;
	in = calloc(t.n ? t.n : 1, sizeof(bool));
	root = calloc(t.n ? t.n : 1, sizeof(bool));
	if (!in || !root) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < t.n; i++) {
		const struct proc_stat *st = &t.v[i];

		for (size_t j = 0; j < m->n && !in[i]; j++)
			in[i] = m->v[j].pid == st->pid && m->v[j].start_time == st->start_time;
		for (size_t j = 0; j < ps->n_groups && !in[i]; j++)
			in[i] = st->pgrp == ps->groups[j].pid && group_valid(&t, &ps->groups[j]);
		if (ps->backend != PROCSET_NO_CGROUP)
			continue;
		for (size_t j = 0; j < ps->n_roots && !root[i]; j++)
			root[i] = st->pid == ps->roots[j].pid && root_valid(&t, &ps->roots[j]);
	}
	while (changed) {
		changed = false;
		for (size_t i = 0; i < t.n; i++) {
			if (in[i])
				continue;
			for (size_t j = 0; j < t.n; j++)
				if (t.v[j].pid == t.v[i].ppid && (in[j] || root[j])) {
					in[i] = changed = true;
					break;
				}
		}
	}
	for (size_t i = 0; i < t.n; i++) {
		if (!in[i] || is_zombie(&t.v[i]) || t.v[i].pid <= 1)
			continue;
		r = members_add(m, &t.v[i]);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	free(t.v);
	return r;
}

static int collect(const struct procset *ps, struct member_list *m, struct err *err)
{
	int r;

	if (ps->backend != PROCSET_NO_CGROUP) {
		_cleanup_close_ int dfd = open(ps->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd < 0 && errno != ENOENT)
			return err_errno(err, "open cgroup %s", ps->path);
		if (dfd >= 0) {
			r = cgroup_members(dfd, 0, m);
			if (r < 0 && r != -ENOENT) {
				errno = -r;
				return err_errno(err, "list the processes of cgroup %s", ps->path);
			}
		}
	}
	/*
	 * A cgroup2 set is its cgroup: it holds its members' descendants, and only root can move
	 * a process out (the move needs write access to the common ancestor's cgroup.procs),
	 * while root can leave a process group as easily, so the recorded groups add nothing
	 * there and /proc is not walked (every process's stat read, each time the set is looked
	 * at). In cgroup v1 a process may move to any cgroup whose tasks file it can write: the
	 * groups are walked too. Without a cgroup the groups and the roots are the set.
	 */
	if ((ps->n_groups && ps->backend != PROCSET_CGROUP2) ||
	    (ps->backend == PROCSET_NO_CGROUP && ps->n_roots)) {
		r = walk_members(ps, m);
		if (r < 0) {
			errno = -r;
			return err_errno(err, "list processes");
		}
	}
	return 0;
}

int procset_pids(const struct procset *ps, pid_t **ret, size_t *ret_n, struct err *err)
{
	struct member_list m = {0};
	pid_t *v;

	if (collect(ps, &m, err) < 0) {
		free(m.v);
		return err_ret(err);
	}
	v = calloc(m.n ? m.n : 1, sizeof(pid_t));
	if (!v) {
		free(m.v);
		return err_oom(err);
	}
	for (size_t i = 0; i < m.n; i++)
		v[i] = m.v[i].pid;
	free(m.v);
	*ret = v;
	*ret_n = m.n;
	return 0;
}

bool procset_contains(const struct procset *ps, pid_t pid)
{
	_cleanup_free_ pid_t *v = NULL;
	struct err e;
	size_t n = 0;

	if (procset_pids(ps, &v, &n, &e) < 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (v[i] == pid)
			return true;
	return false;
}

/* ---- stopping ---- */

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000};

	nanosleep(&ts, NULL);
}

#define ANCESTORS_MAX 64

/*
 * Who a stop never signals, by identity (pid and start time), never by process group: a
 * process may join any group of its session, so a group says nothing about who it is.
 */
struct spared {
	pid_t exclude;
	struct pid_start ancestors[ANCESTORS_MAX]; /* us, our parent, its parent, ... up to pid 1 */
	size_t n;
};

static void spared_init(struct spared *sp, pid_t exclude)
{
	struct proc_stat st;
	pid_t pid = getpid();

	sp->exclude = exclude;
	sp->n = 0;
	while (pid > 1 && sp->n < ANCESTORS_MAX && proc_stat_read(pid, &st) == 0) {
		sp->ancestors[sp->n++] = (struct pid_start){.pid = pid, .start = st.start_time};
		pid = st.ppid;
	}
}

/* Never pid 0 or 1, us or the jobs that run us (our ancestors), or exclude. */
static bool protected_pid(const struct spared *sp, const struct proc_stat *st)
{
	if (st->pid <= 1 || st->pid == getpid() || st->pid == sp->exclude)
		return true;
	for (size_t i = 0; i < sp->n; i++)
		if (sp->ancestors[i].pid == st->pid && sp->ancestors[i].start == st->start_time)
			return true;
	return false;
}

static bool signalled(const struct pid_start *v, size_t n, const struct proc_stat *st)
{
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == st->pid && v[i].start == st->start_time)
			return true;
	return false;
}

/* cgroup v2 kills the whole subtree at once, forks in flight included. */
static void cgroup_kill(const struct procset *ps)
{
	_cleanup_free_ char *p = NULL;
	_cleanup_close_ int fd = -1;

	if (asprintf(&p, "%s/cgroup.kill", ps->path) < 0)
		return;
	fd = open(p, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0 && write(fd, "1", 1) < 0)
		log_debug("write %s: %m", p);
}

static int survivors_error(struct err *err, const struct member_list *m, const struct spared *sp)
{
	char list[600] = "";
	size_t n = 0, len = 0;

	for (size_t i = 0; i < m->n; i++) {
		if (protected_pid(sp, &m->v[i]))
			continue;
		if (n++ < 10 && len < sizeof(list) - 100)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%d (%s)",
			                        len ? ", " : "", (int)m->v[i].pid, m->v[i].comm);
	}
	return err_set(err, ERR_FAILED, EBUSY, "%zu process%s could not be stopped: %s%s", n,
	               n == 1 ? "" : "es", list, n > 10 ? ", ..." : "");
}

int procset_stop(struct procset *ps, unsigned grace_ms, pid_t exclude, struct err *err)
{
	_cleanup_free_ struct pid_start *termed = NULL;
	size_t n_termed = 0;
	uint64_t start = clock_now_ms(), term_until = start + grace_ms, kill_until = 0;
	unsigned nap = 1;
	bool killing = false, relooked = false, spared_ready = false;
	struct spared sp;
	/*
	 * A cgroup2's cgroup.events turns readable (POLLPRI) when "populated" changes: the naps
	 * between looks end as the last member exits, not up to a nap later.
	 */
	_cleanup_close_ int events_fd = -1;

	if (ps->backend == PROCSET_CGROUP2) {
		_cleanup_free_ char *events = NULL;

		if (asprintf(&events, "%s/cgroup.events", ps->path) < 0)
			events = NULL;
		else
			events_fd = open(events, O_RDONLY | O_CLOEXEC);
	}
	for (;;) {
		struct member_list m = {0};
		size_t targets = 0;
		bool may_kill_cgroup = ps->backend == PROCSET_CGROUP2;
		uint64_t now;

		if (collect(ps, &m, err) < 0) {
			free(m.v);
			return err_wrap(err, "stop the processes of the boot");
		}
		/* Who is spared (our ancestors' /proc read), once there is anyone to judge. */
		if (m.n && !spared_ready) {
			spared_init(&sp, exclude);
			spared_ready = true;
		}
		for (size_t i = 0; i < m.n; i++) {
			const struct proc_stat *st = &m.v[i];

			if (protected_pid(&sp, st)) {
				/* cgroup.kill would hit it too: only we or our callers turn it off.
				 */
				may_kill_cgroup = false;
				continue;
			}
			targets++;
		}
		now = clock_now_ms();
		if (targets == 0) {
			free(m.v);
			return 0;
		}
		if (!killing && now >= term_until) {
			killing = true;
			kill_until = now + KILL_WAIT_MS;
			nap = 1;
		}
		if (killing && now >= kill_until) {
			int r = survivors_error(err, &m, &sp);
			free(m.v);
			return r;
		}
		if (killing && may_kill_cgroup)
			cgroup_kill(ps);
		for (size_t i = 0; i < m.n; i++) {
			const struct proc_stat *st = &m.v[i];

			if (protected_pid(&sp, st))
				continue;
			if (killing) {
				(void)proc_signal(st->pid, st->start_time, SIGKILL);
				continue;
			}
			if (signalled(termed, n_termed, st))
				continue;
			if (proc_signal(st->pid, st->start_time, SIGTERM) == 0)
				(void)proc_signal(st->pid, st->start_time, SIGCONT);
			if (pid_list_put(&termed, &n_termed, st->pid, st->start_time) < 0) {
				free(m.v);
				return err_oom(err);
			}
		}
		free(m.v);
		now = clock_now_ms();
		uint64_t until = killing ? kill_until : term_until;
		unsigned wait = until > now && until - now < nap ? (unsigned)(until - now) : nap;
		if (events_fd >= 0) {
			struct pollfd pfd = {.fd = events_fd, .events = POLLPRI};
			char buf[64] = "";
			ssize_t n;

			/* Read first: poll wakes for changes after the last read. Emptied
			 * already: look again at once (once a stop, so it cannot spin). */
			n = pread(events_fd, buf, sizeof(buf) - 1, 0);
			if (n > 0 && strstr(buf, "populated 0") && !relooked) {
				relooked = true;
				continue;
			}
			if (poll(&pfd, 1, (int)wait) < 0 && errno != EINTR)
				sleep_ms(wait);
		} else {
			sleep_ms(wait);
		}
		if (nap < 20)
			nap *= 2;
	}
}

/* ---- removal ---- */

static int rmdir_tree(const char *path, int depth)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;

	if (depth < NEST_MAX && (d = opendir(path))) {
		while ((de = readdir(d))) {
			_cleanup_free_ char *sub = NULL;

			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			if (asprintf(&sub, "%s/%s", path, de->d_name) < 0)
				return -ENOMEM;
			rmdir_tree(sub, depth + 1);
		}
	}
	return rmdir(path) < 0 && errno != ENOENT ? -errno : 0;
}

static int rmdir_tree_top(const char *path)
{
	return rmdir_tree(path, 0);
}

void procset_destroy(struct procset *ps)
{
	if (!ps)
		return;
	cgroup_limits_remove(&ps->lim);
	if (ps->backend == PROCSET_NO_CGROUP || !*ps->path)
		return;
	if (ps->procs_fd >= 0) {
		close(ps->procs_fd);
		ps->procs_fd = -1;
	}
	int r = cgroup_place_remove_wait(ps->path, rmdir_tree_top);

	if (r < 0)
		log_debug("remove cgroup %s: %s", ps->path, strerror(-r));
}
