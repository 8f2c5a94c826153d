/* SPDX-License-Identifier: Apache-2.0 */
#include "dir_discard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "cleanup.h"
#include "fs_safe.h"
#include "log.h"

#define BOX_TREE "tree" /* the tree's name in its box */
#define BOX_ID_BYTES (DIR_DISCARD_ID_LEN / 2)
#define SWEEP_MAX 16  /* boxes one sweep hands to its thread */
#define WAIT_NAP_MS 5 /* dir_discard_wait's look, while a box is held */
/* The walk recurses once per level, up to fs_safe's 512: not musl's 128 KiB default stack. */
#define THREAD_STACK ((size_t)1024 * 1024)

struct discard {
	int parent_fd;
	int box_fd; /* holds the flock() until the box is gone */
	dir_discard_hook_fn hook;
	void *hook_userdata;
	char name[]; /* the box's, in parent_fd */
};

bool dir_discard_now(int parent_fd, const char *name)
{
	struct err e;

	if (fs_safe_tree_remove_at(parent_fd, name, &e) < 0) {
		log_debug("removing %s: %s (left for the next recovery)", name, e.msg);
		return true;
	}
	return false;
}

/* ".app.checkout-trash.<16 hex digits>" for base "app": false when it would be too long. */
static bool box_name(const char *base, char *buf, size_t len)
{
	unsigned char id[BOX_ID_BYTES];
	char hex[2 * BOX_ID_BYTES + 1];
	int n;

	randombytes_buf(id, sizeof(id));
	sodium_bin2hex(hex, sizeof(hex), id, sizeof(id));
	n = snprintf(buf, len, ".%s" DIR_DISCARD_INFIX "%s", base, hex);
	return n > 0 && (size_t)n < len && n <= NAME_MAX;
}

/* Exactly a box's name for base: a sibling of another name is never taken for one. */
static bool is_box_name(const char *base, const char *name)
{
	size_t b = strlen(base), i = strlen(DIR_DISCARD_INFIX);

	if (name[0] != '.' || strncmp(name + 1, base, b) != 0 ||
	    strncmp(name + 1 + b, DIR_DISCARD_INFIX, i) != 0)
		return false;
	name += 1 + b + i;
	if (strlen(name) != 2 * BOX_ID_BYTES)
		return false;
	return strspn(name, "0123456789abcdef") == 2 * BOX_ID_BYTES;
}

/*
 * Remove what the box holds, then the box; the lock goes with the descriptor. A box that cannot
 * be emptied (a tree nested deeper than fs_safe goes, a file the app still writes) is renamed
 * <name>.left: no later sweep walks it again, and the log says it stays.
 */
static bool discard_run(struct discard *d)
{
	bool left = false;
	struct err e;

	if (d->hook)
		d->hook(d->hook_userdata, "discarding");
	if (fs_safe_tree_remove_at(d->box_fd, BOX_TREE, &e) < 0) {
		char aside[NAME_MAX + 1];

		snprintf(aside, sizeof(aside), "%s" DIR_DISCARD_LEFT_SUFFIX, d->name);
		if (fs_safe_rename_at(d->parent_fd, d->name, d->parent_fd, aside,
		                      RENAME_NOREPLACE) < 0)
			snprintf(aside, sizeof(aside), "%s", d->name);
		log_warn("an old tree could not be removed (%s): it stays in %s", e.msg, aside);
		left = true;
	} else if (unlinkat(d->parent_fd, d->name, AT_REMOVEDIR) < 0 && errno != ENOENT) {
		log_debug("removing %s: %m (left for the next recovery)", d->name);
		left = true;
	}
	close(d->box_fd);
	close(d->parent_fd);
	free(d);
	return left;
}

/* fn(userdata) on a detached thread: false when none starts (fn is then not called). */
static bool thread_start(void *(*fn)(void *), void *userdata)
{
	pthread_attr_t attr;
	sigset_t all, old;
	pthread_t t;
	int r;

	r = pthread_attr_init(&attr);
	if (r == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_attr_setstacksize(&attr, THREAD_STACK);
		/* It takes no signal: they stay the caller's (signalfd, the default actions). */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		r = pthread_create(&t, &attr, fn, userdata);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		pthread_attr_destroy(&attr);
	}
	if (r != 0)
		log_debug("no thread to remove an old tree on: %s", strerror(r));
	return r == 0;
}

/*
 * The removal of the box box_fd (locked), named name below parent_fd; takes box_fd. NULL when
 * there is no memory or descriptor for it: the box is then left, unlocked, to the next sweep
 * (never removed here, which could take long).
 */
static struct discard *discard_new(int parent_fd, int box_fd, const char *name,
                                   dir_discard_hook_fn hook, void *hook_userdata)
{
	size_t n = strlen(name);
	struct discard *d = malloc(sizeof(*d) + n + 1);

	if (d)
		d->parent_fd = fcntl(parent_fd, F_DUPFD_CLOEXEC, 3);
	if (!d || d->parent_fd < 0) {
		log_debug("no room to remove %s now: left to the next recovery", name);
		free(d);
		close(box_fd);
		return NULL;
	}
	d->box_fd = box_fd;
	d->hook = hook;
	d->hook_userdata = hook_userdata;
	memcpy(d->name, name, n + 1);
	return d;
}

static void *discard_main(void *userdata)
{
	(void)discard_run(userdata);
	return NULL;
}

bool dir_discard_start(int parent_fd, const char *base, const char *name, bool wait,
                       dir_discard_hook_fn hook, void *hook_userdata)
{
	char box[NAME_MAX + 2];
	struct discard *d;
	int box_fd;

	if (!box_name(base, box, sizeof(box)) || mkdirat(parent_fd, box, 0700) < 0)
		return dir_discard_now(parent_fd, name);
	box_fd = openat(parent_fd, box, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (box_fd < 0 || flock(box_fd, LOCK_EX | LOCK_NB) < 0 ||
	    fs_safe_rename_at(parent_fd, name, box_fd, BOX_TREE, RENAME_NOREPLACE) < 0) {
		if (box_fd >= 0)
			close(box_fd);
		(void)unlinkat(parent_fd, box, AT_REMOVEDIR);
		return dir_discard_now(parent_fd, name);
	}
	/* From here the tree is in the box: whatever fails, a sweep finds it there. */
	d = discard_new(parent_fd, box_fd, box, hook, hook_userdata);
	if (!d)
		return true;
	if (!wait && thread_start(discard_main, d))
		return false;
	return discard_run(d);
}

/*
 * The box name below parent_fd, opened and locked with lock (LOCK_EX, LOCK_SH), or -1: when it
 * is a box whose lock another holds (a discard removes it now), *ret_held says so. Only root's
 * 0700 directories are boxes; a link or a file of that name is removed, never followed.
 */
static int box_open(int parent_fd, const char *name, int lock, bool *ret_held)
{
	_cleanup_close_ int fd =
	    openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;

	*ret_held = false;
	if (fd < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			(void)unlinkat(parent_fd, name, 0);
		return -1;
	}
	if (fstat(fd, &st) < 0 || st.st_uid != geteuid() || (st.st_mode & 07777) != 0700)
		return -1;
	if (flock(fd, lock | LOCK_NB) < 0) {
		*ret_held = errno == EWOULDBLOCK;
		return -1;
	}
	return TAKE_FD(fd);
}

/* Calls fn for each box name of base below parent_fd; fn returns false to stop. */
static void boxes_each(int parent_fd, const char *base, bool (*fn)(int, const char *, void *),
                       void *userdata)
{
	_cleanup_closedir_ DIR *d = NULL;
	struct dirent *de;
	int fd = openat(parent_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (is_box_name(base, de->d_name) && !fn(parent_fd, de->d_name, userdata))
			break;
}

struct sweep {
	const char *what;
	size_t n;
	struct discard *v[SWEEP_MAX];
};

static bool sweep_one(int parent_fd, const char *name, void *userdata)
{
	struct sweep *sw = userdata;
	bool held;
	int fd = box_open(parent_fd, name, LOCK_EX, &held);

	if (fd < 0)
		return true; /* held: a discard is removing it; or not a box */
	log_info("removing an old tree of %s that an earlier removal left (%s)", sw->what, name);
	sw->v[sw->n] = discard_new(parent_fd, fd, name, NULL, NULL);
	if (sw->v[sw->n])
		sw->n++;
	return sw->n < SWEEP_MAX;
}

static void *sweep_main(void *userdata)
{
	struct sweep *sw = userdata;

	for (size_t i = 0; i < sw->n; i++)
		(void)discard_run(sw->v[i]);
	free(sw);
	return NULL;
}

void dir_discard_sweep(int parent_fd, const char *base, const char *what)
{
	struct sweep *sw = calloc(1, sizeof(*sw));

	if (!sw)
		return;
	sw->what = what;
	boxes_each(parent_fd, base, sweep_one, sw);
	if (sw->n == 0 || !thread_start(sweep_main, sw))
		(void)sweep_main(sw);
}

static bool held_one(int parent_fd, const char *name, void *userdata)
{
	bool *held = userdata;
	_cleanup_close_ int fd = box_open(parent_fd, name, LOCK_SH, held);

	return !*held;
}

bool dir_discard_wait(const char *dir, unsigned timeout_ms)
{
	_cleanup_free_ char *c1 = strdup(dir), *c2 = strdup(dir);
	_cleanup_close_ int parent_fd = -1;
	uint64_t until = clock_now_ms() + timeout_ms;
	const char *base;

	if (!c1 || !c2)
		return true; /* no memory to look: nothing is known to be held */
	parent_fd = open(dirname(c1), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent_fd < 0)
		return true;
	base = basename(c2);
	for (;;) {
		bool held = false;

		boxes_each(parent_fd, base, held_one, &held);
		if (!held)
			return true;
		if (clock_now_ms() >= until)
			return false;
		nanosleep(&(struct timespec){.tv_nsec = WAIT_NAP_MS * 1000 * 1000}, NULL);
	}
}
