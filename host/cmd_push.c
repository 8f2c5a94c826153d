/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl push DIR [--app-dir /workspace/app] [--include-git]: send a directory tree to the
 * agent, which stages it beside the app directory and swaps it in with one rename
 * (docs/protocol.md §7.3).
 *
 * What goes: directories, regular files and symbolic links, in a pre-order walk sorted by name
 * (a parent before its children), with permission bits only (setuid, setgid and sticky are
 * dropped). What does not: `.git` (a directory, or the file a worktree or submodule has) at
 * any depth unless --include-git, since the checkout's git metadata can hold credentials and
 * the app does not need it; sockets, FIFOs and devices (listed under "skipped"). Refused
 * before anything is sent: a symbolic link whose target is absolute or climbs out of the tree,
 * and names that are not UTF-8 (the protocol's paths are JSON strings). Links are never
 * followed.
 *
 * The walk before connecting reads directories only: the kind of each entry comes from
 * readdir (d_type; lstat only where the filesystem does not say), so a tree of many small
 * files costs no path lookup per file before the first byte goes. A file's mode and size are
 * read from the descriptor it is sent from; one that is no longer a regular file then, or
 * holds fewer or more bytes than that size, fails the push rather than sending something
 * else. A file is opened from its directory, and that directory from the root one component
 * at a time, each with O_NOFOLLOW: a directory replaced by a link after the walk is not
 * followed out of the tree.
 */
#include "cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dir_cache.h"

#define USAGE "push DIR [--app-dir DIR] [--include-git]"
#define CHUNK (64 * 1024)
#define PROGRESS_EVERY_MS 100
#define CHECK_AGENT_EVERY_MS 20

enum kind { K_DIR, K_FILE, K_LINK };

struct entry {
	char *path;
	enum kind kind;
	mode_t mode; /* a directory's; a file's is read when it is sent */
	char *target;
};

struct tree {
	struct entry *v;
	size_t n, cap;
	struct json_object *skipped; /* paths left out */
	bool include_git;
};

static void tree_dispose(struct tree *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->v[i].path);
		free(t->v[i].target);
	}
	free(t->v);
	json_object_put(t->skipped);
}

static bool utf8_valid(const char *s)
{
	return output_utf8_valid(s, strlen(s));
}

/* "rel/name", or name at the top (rel NULL); NULL when out of memory. */
static char *path_join(const char *rel, const char *name)
{
	size_t a = rel ? strlen(rel) : 0, b = strlen(name);
	char *p = malloc(a + (rel ? 1 : 0) + b + 1);

	if (!p)
		return NULL;
	if (rel) {
		memcpy(p, rel, a);
		p[a++] = '/';
	}
	memcpy(p + a, name, b + 1);
	return p;
}

/* Takes e's strings, also on failure; a missing one (strdup failed) is out of memory. */
static int add(struct tree *t, struct entry e, struct err *err)
{
	if (!e.path || (e.kind == K_LINK && !e.target)) {
		free(e.path);
		free(e.target);
		return err_oom(err);
	}
	if (t->n == t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 256;
		struct entry *v = reallocarray(t->v, cap, sizeof(*v));
		if (!v) {
			free(e.path);
			free(e.target);
			return err_oom(err);
		}
		t->v = v;
		t->cap = cap;
	}
	t->v[t->n++] = e;
	return 0;
}

/*
 * A link's target, resolved lexically from the link's directory (depth components below the
 * root), must stay inside the tree: no absolute target, no ".." past the root.
 */
static bool target_inside(const char *target, int depth)
{
	const char *p = target;

	if (target[0] == '/' || target[0] == '\0')
		return false;
	while (*p) {
		size_t n = strcspn(p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			if (--depth < 0)
				return false;
		} else if (n > 0 && !(n == 1 && p[0] == '.')) {
			depth++;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	return true;
}

struct name {
	char *name;
	unsigned char type; /* d_type: DT_DIR, DT_REG, DT_LNK, ..., DT_UNKNOWN */
};

static int compare_names(const void *a, const void *b)
{
	return strcmp(((const struct name *)a)->name, ((const struct name *)b)->name);
}

static void names_free(struct name *names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(names[i].name);
	free(names);
}

/* The names in a directory with their kinds as readdir gives them, sorted. */
static int list_dir(int dirfd, struct name **ret, size_t *ret_n, const char *shown, struct err *err)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct name *names = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	int fd = dup(dirfd);

	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return err_errno(err, "cannot read the directory %s", shown);
	}
	while ((errno = 0, de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		if (n == cap) {
			struct name *v = reallocarray(names, cap = cap ? cap * 2 : 32, sizeof(*v));
			if (!v)
				goto out_nomem;
			names = v;
		}
		if (!(names[n].name = strdup(de->d_name)))
			goto out_nomem;
		names[n++].type = de->d_type;
	}
	if (errno) {
		int e = errno;
		names_free(names, n);
		errno = e;
		return err_errno(err, "cannot read the directory %s", shown);
	}
	if (n)
		qsort(names, n, sizeof(*names), compare_names);
	*ret = names;
	*ret_n = n;
	return 0;

out_nomem:
	names_free(names, n);
	return err_oom(err);
}

/* What d_type could not tell (DT_UNKNOWN), from lstat. */
static int kind_of(int dirfd, const char *name, unsigned char *type)
{
	struct stat st;

	if (*type != DT_UNKNOWN)
		return 0;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	*type = S_ISDIR(st.st_mode)   ? DT_DIR
	        : S_ISREG(st.st_mode) ? DT_REG
	        : S_ISLNK(st.st_mode) ? DT_LNK
	                              : DT_FIFO; /* anything else is left out */
	return 0;
}

static int walk(struct tree *t, int dirfd, const char *rel, int depth, const char *root,
                struct err *err)
{
	struct name *names = NULL;
	size_t n = 0;
	int r;

	r = list_dir(dirfd, &names, &n, rel ? rel : root, err);
	if (r < 0)
		return r;
	for (size_t i = 0; i < n && r == 0; i++) {
		const char *name = names[i].name;
		struct entry e = {0};
		if (!t->include_git && strcmp(name, ".git") == 0)
			continue;
		if (!(e.path = path_join(rel, name))) {
			r = err_oom(err);
			break;
		}
		if ((r = kind_of(dirfd, name, &names[i].type)) < 0) {
			errno = -r;
			r = err_errno(err, "cannot stat %s/%s", root, e.path);
			free(e.path);
			break;
		}
		if (!utf8_valid(e.path)) {
			r = err_set(err, ERR_REFUSED, EILSEQ,
			            "cannot push %s/%s: the name is not UTF-8", root, e.path);
			free(e.path);
			break;
		}
		if (names[i].type == DT_DIR) {
			int sub =
			    openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			struct stat st;
			e.kind = K_DIR;
			if (sub < 0 || fstat(sub, &st) < 0) {
				r = err_errno(err, "cannot open %s/%s", root, e.path);
				if (sub >= 0)
					close(sub);
				free(e.path);
				break;
			}
			e.mode = st.st_mode & 0777;
			/* The entry's own path moves with the vector: recurse with a copy. */
			_cleanup_free_ char *sub_rel = strdup(e.path);
			r = add(t, e, err);
			if (r == 0 && !sub_rel)
				r = err_oom(err);
			if (r == 0)
				r = walk(t, sub, sub_rel, depth + 1, root, err);
			close(sub);
		} else if (names[i].type == DT_REG) {
			e.kind = K_FILE;
			r = add(t, e, err);
		} else if (names[i].type == DT_LNK) {
			char buf[PATH_MAX];
			ssize_t len = readlinkat(dirfd, name, buf, sizeof(buf) - 1);
			e.kind = K_LINK;
			if (len < 0) {
				r = err_errno(err, "cannot read the link %s/%s", root, e.path);
				free(e.path);
				break;
			}
			buf[len] = '\0';
			if (!target_inside(buf, depth) || !utf8_valid(buf)) {
				r = err_set(
				    err, ERR_REFUSED, EXDEV,
				    "cannot push %s/%s: the link's target %s %s", root, e.path, buf,
				    utf8_valid(buf) ? "leaves the tree (the agent refuses links "
				                      "that leave the app directory)"
				                    : "is not UTF-8");
				free(e.path);
				break;
			}
			e.target = strdup(buf);
			r = add(t, e, err);
		} else {
			json_object_array_add(t->skipped, json_object_new_string(e.path));
			free(e.path);
		}
	}
	names_free(names, n);
	return r;
}

struct push {
	struct ctl *ctl;
	struct session *s;
	uint32_t stream;
	const struct tree *t;
	int root_fd;
	struct dir_cache dirs; /* the directory of the last file sent, opened link-free */
	size_t sent_entries;
	uint64_t sent_bytes;
	int64_t last_progress;
	int64_t last_check;
};

/*
 * Between messages, every CHECK_AGENT_EVERY_MS: an early error from the agent ends the push.
 * Messages go out batched (a tree of small files is mostly small messages): what waits is
 * written first, so that the agent sees what it may be refusing.
 */
#define CHECK_AGENT_MAX_MSGS 64

static int check_agent(struct push *p)
{
	int64_t now = frame_io_now_ms();
	int r;

	if (now - p->last_check < CHECK_AGENT_EVERY_MS)
		return 0;
	p->last_check = now;
	r = connect_session_flush(p->s, &p->ctl->err);
	if (r != 0)
		return r;
	/*
	 * At most CHECK_AGENT_MAX_MSGS a look: a guest that keeps sending (pings, another
	 * stream) cannot hold the push here: the next look reads on.
	 */
	for (int i = 0;
	     i < CHECK_AGENT_MAX_MSGS && connect_session_wait(p->s, -1, frame_io_deadline(0)) == 1;
	     i++) {
		struct msg m;
		r = connect_session_recv(p->s, &m, frame_io_deadline(0), &p->ctl->err);
		if (r == -ETIMEDOUT)
			return 0;
		if (r != 1)
			return r;
		if (m.stream == p->stream && (m.type == MSG_ERROR || (m.flags & MSG_F_END))) {
			r = connect_session_unexpected(&m, &p->ctl->err);
			msg_dispose(&m);
			return r;
		}
		msg_dispose(&m);
	}
	return 0;
}

static void progress(struct push *p, bool force)
{
	int64_t now = frame_io_now_ms();

	if (!force && now - p->last_progress < PROGRESS_EVERY_MS)
		return;
	p->last_progress = now;
	if (p->ctl->out.tty)
		output_live(&p->ctl->out, "push: %zu/%zu entries, %.1f MiB", p->sent_entries,
		            p->t->n, (double)p->sent_bytes / 1048576.0);
}

static struct json_object *entry_json(const struct entry *e, mode_t mode, off_t size)
{
	static const char *const kinds[] = {"dir", "file", "symlink"};
	struct json_object *j = json_object_new_object();

	if (!j)
		return NULL;
	json_object_object_add(j, "path", json_object_new_string(e->path));
	json_object_object_add(j, "kind", json_object_new_string(kinds[e->kind]));
	json_object_object_add(j, "mode", json_object_new_int((int)mode));
	if (e->kind == K_FILE)
		json_object_object_add(j, "size", json_object_new_int64((int64_t)size));
	if (e->kind == K_LINK)
		json_object_object_add(j, "target", json_object_new_string(e->target));
	return j;
}

static int changed(struct push *p, const char *path, const char *how)
{
	err_set(&p->ctl->err, ERR_FAILED, EAGAIN, "%s changed while it was pushed (%s): push again",
	        path, how);
	return CTL_EXIT_FAILED;
}

/*
 * A file another process holds a lease on (a file server's): the open waits for the lease to be
 * broken, as a plain open would, but only once the file is known to be a regular one, reopened
 * through its own descriptor so that nothing put in its place meanwhile is opened instead.
 */
static int open_leased(int dfd, const char *leaf)
{
	_cleanup_close_ int path_fd = openat(dfd, leaf, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	char proc[64];
	struct stat st;

	if (path_fd < 0 || fstat(path_fd, &st) < 0)
		return -1;
	if (!S_ISREG(st.st_mode)) {
		errno = ENXIO;
		return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", path_fd);
	return open(proc, O_RDONLY | O_NOCTTY | O_CLOEXEC);
}

/*
 * A file's entry with the mode and size of the descriptor it is read from, then its bytes, each
 * chunk read straight into the frame that carries it (connect_session_data_room()).
 */
static int send_file(struct push *p, const struct entry *e)
{
	_cleanup_close_ int fd = -1;
	_cleanup_json_ struct json_object *ej = NULL;
	struct err *err = &p->ctl->err;
	const char *leaf = NULL;
	struct stat st;
	off_t left;
	int dfd = -1, r;

	/* Its directory, opened without following a link: a directory replaced by one since the
	 * walk is not followed out of the tree. */
	r = dir_cache_parent(&p->dirs, e->path, &dfd, &leaf, err);
	if (r == -ELOOP || r == -ENOTDIR || r == -ENOENT)
		return changed(p, e->path, "a directory on its path is gone or no longer one");
	if (r < 0) {
		err_wrap(err, "cannot read %s", e->path);
		return CTL_EXIT_FAILED;
	}
	/* O_NONBLOCK: a FIFO put in the file's place since the walk must not hold us. */
	fd = openat(dfd, leaf, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0 && errno == EWOULDBLOCK)
		fd = open_leased(dfd, leaf);
	if (fd < 0 && (errno == ELOOP || errno == ENOENT || errno == ENXIO))
		return changed(p, e->path, "it is gone, or a link or a socket now");
	if (fd < 0 || fstat(fd, &st) < 0) {
		err_errno(err, "cannot read %s", e->path);
		return CTL_EXIT_FAILED;
	}
	if (!S_ISREG(st.st_mode))
		return changed(p, e->path, "a regular file when the tree was walked, no longer");
	ej = entry_json(e, st.st_mode & 0777, st.st_size);
	if (!ej) {
		err_oom(err);
		return CTL_EXIT_FAILED;
	}
	r = connect_session_send_batched(p->s, MSG_TREE_PUSH_ENTRY, p->stream, ej, NULL, 0, err);
	if (r != 0)
		return r;
	/*
	 * A read that can reach the end asks for one byte more than is left (the buffer has room
	 * for it): a file that grew meanwhile fails the push, and one that ended early too. The
	 * file has ended when a read that asked for more than was left got exactly that, or got
	 * nothing with nothing left.
	 */
	for (left = st.st_size;;) {
		size_t want = left > CHUNK ? CHUNK : (size_t)left + 1;
		uint8_t *buf = connect_session_data_room(p->s, want, err);
		ssize_t n;

		if (!buf) {
			err_wrap(err, "cannot send %s", e->path);
			return CTL_EXIT_FAILED;
		}
		n = read(fd, buf, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err_errno(err, "cannot read %s", e->path);
			return CTL_EXIT_FAILED;
		}
		if (n > left || (n == 0 && left > 0)) {
			char how[96];
			snprintf(how, sizeof(how), "%lld bytes when it was opened, %s now",
			         (long long)st.st_size, n ? "more" : "fewer");
			return changed(p, e->path, how);
		}
		if (n == 0)
			break;
		r = connect_session_send_room_batched(p->s, MSG_TREE_PUSH_DATA, p->stream,
		                                      (size_t)n, err);
		if (r != 0)
			return r;
		left -= n;
		p->sent_bytes += (uint64_t)n;
		progress(p, false);
		if (left == 0 && (size_t)n < want)
			break;
	}
	return 0;
}

static int send_tree(struct push *p, const char *app_dir, struct json_object **ret_reply)
{
	struct err *err = &p->ctl->err;
	_cleanup_json_ struct json_object *begin = json_object_new_object();
	_cleanup_json_ struct json_object *end = json_object_new_object();
	int64_t deadline;
	int r;

	if (!begin || !end) {
		err_oom(err);
		return CTL_EXIT_FAILED;
	}
	p->stream = connect_session_new_stream(p->s);
	json_object_object_add(begin, "app_dir", json_object_new_string(app_dir));
	/* The bytes are counted as the files are read (begin's totals are optional). */
	json_object_object_add(begin, "entries", json_object_new_int64((int64_t)p->t->n));
	r = connect_session_send(p->s, MSG_TREE_PUSH_BEGIN, 0, p->stream, begin, NULL, 0, err);
	for (size_t i = 0; r == 0 && i < p->t->n; i++) {
		const struct entry *e = &p->t->v[i];
		r = check_agent(p);
		if (r == 0 && e->kind == K_FILE) {
			r = send_file(p, e);
		} else if (r == 0) {
			_cleanup_json_ struct json_object *ej =
			    entry_json(e, e->kind == K_DIR ? e->mode : 0777, 0);
			r = ej ? connect_session_send_batched(p->s, MSG_TREE_PUSH_ENTRY, p->stream,
			                                      ej, NULL, 0, err)
			       : (err_oom(err), CTL_EXIT_FAILED);
		}
		p->sent_entries++;
		progress(p, false);
	}
	if (r != 0)
		return r;
	progress(p, true);
	json_object_object_add(end, "entries", json_object_new_int64((int64_t)p->t->n));
	json_object_object_add(end, "bytes", json_object_new_int64((int64_t)p->sent_bytes));
	r = connect_session_send(p->s, MSG_TREE_PUSH_END, MSG_F_END, p->stream, end, NULL, 0, err);
	if (r != 0)
		return r;
	output_live(&p->ctl->out, "push: %zu entries sent, waiting for the agent to swap them in",
	            p->t->n);
	deadline = frame_io_deadline(p->s->timeout_ms);
	for (;;) {
		struct msg m;
		r = connect_session_recv(p->s, &m, deadline, err);
		if (r == -ETIMEDOUT) {
			err_set(err, ERR_FAILED, ETIMEDOUT,
			        "the agent did not confirm the push within %d s (--timeout)",
			        p->s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r != 1)
			return r;
		if (m.stream == p->stream && m.type == MSG_OK) {
			*ret_reply = m.json ? json_object_get(m.json) : json_object_new_object();
			msg_dispose(&m);
			return 0;
		}
		if (m.stream == p->stream && (m.type == MSG_ERROR || (m.flags & MSG_F_END))) {
			r = connect_session_unexpected(&m, err);
			msg_dispose(&m);
			return r;
		}
		msg_dispose(&m);
	}
}

/*
 * Refuse before sending anything while a boot of the app runs: the agent would refuse the
 * swap (EBUSY) only after the whole tree has travelled.
 */
static int check_no_boot(struct ctl *ctl, struct session *s, const char *app_dir)
{
	_cleanup_json_ struct json_object *req = json_object_new_object();
	_cleanup_json_ struct json_object *reply = NULL;
	struct json_object *state;
	int r;

	if (!connect_session_has_capability(s, "status"))
		return 0;
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	r = connect_session_request(s, MSG_STATUS, req, NULL, 0, &reply, &ctl->err);
	if (r != 0)
		return r;
	/* "status"; agents before the vocabulary was made one said "state". */
	if ((json_object_object_get_ex(reply, "status", &state) ||
	     json_object_object_get_ex(reply, "state", &state)) &&
	    json_object_is_type(state, json_type_string) &&
	    strcmp(json_object_get_string(state), "booting") == 0) {
		err_set(&ctl->err, ERR_REFUSED, EBUSY,
		        "a boot of %s is in progress: push when it has finished (sandbox-ctl "
		        "status); nothing was sent",
		        app_dir);
		return CTL_EXIT_REFUSED;
	}
	return 0;
}

int cmd_push(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"app-dir", required_argument, NULL, 'a'},
	    {"include-git", no_argument, NULL, 'g'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_close_ int root_fd = -1;
	const char *app_dir = CTL_DEFAULT_APP_DIR, *dir;
	struct json_object *reply = NULL;
	struct tree t = {0};
	struct push p = {0};
	int64_t start;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 'a')
			app_dir = optarg;
		else if (c == 'g')
			t.include_git = true;
		else
			return cmd_bad_option(ctl, USAGE, c, argv);
	}
	if (argc - optind != 1)
		return cmd_usage(ctl, USAGE, "name one directory to push");
	dir = argv[optind];
	if (app_dir[0] != '/')
		return cmd_usage(ctl, USAGE, "--app-dir must be an absolute path in the guest");
	root_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root_fd < 0) {
		err_errno(&ctl->err, "cannot push %s", dir);
		ctl->err.cls = ERR_REFUSED;
		return CTL_EXIT_REFUSED;
	}
	t.skipped = json_object_new_array();
	r = walk(&t, root_fd, NULL, 0, dir, &ctl->err);
	if (r < 0) {
		tree_dispose(&t);
		return output_exit_of(&ctl->err);
	}
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r == 0 && !connect_session_has_capability(s, "tree.push")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not take trees");
		r = CTL_EXIT_REFUSED;
	}
	if (r == 0)
		r = check_no_boot(ctl, s, app_dir);
	if (r != 0) {
		tree_dispose(&t);
		return r;
	}
	output_note(&ctl->out, "pushing %s to %s: %zu entries", dir, app_dir, t.n);
	p = (struct push){.ctl = ctl, .s = s, .t = &t, .root_fd = root_fd};
	dir_cache_init(&p.dirs, root_fd, false, (uid_t)-1, (gid_t)-1);
	start = frame_io_now_ms();
	r = send_tree(&p, app_dir, &reply);
	dir_cache_dispose(&p.dirs);
	output_live_done(&ctl->out);
	if (r != 0) {
		err_wrap(&ctl->err, "cannot push %s to %s", dir, app_dir);
		tree_dispose(&t);
		return r;
	}
	/* The agent's reply, and what was left out and how long it took. */
	json_object_object_add(reply, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(reply, "skipped", json_object_get(t.skipped));
	json_object_object_add(reply, "seconds",
	                       json_object_new_double((double)(frame_io_now_ms() - start) / 1000));
	ctl->result = reply;
	tree_dispose(&t);
	return CTL_EXIT_OK;
}
