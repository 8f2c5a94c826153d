/* SPDX-License-Identifier: Apache-2.0 */
#include "authkeys.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "strv.h"

struct keyset {
	struct authkey *v;
	size_t n, cap;
};

struct authkeys {
	char *file;
	char *dir;
	struct keyset loaded;
	struct keyset added;
};

static void keyset_dispose(struct keyset *ks)
{
	for (size_t i = 0; i < ks->n; i++) {
		free(ks->v[i].comment);
		free(ks->v[i].source);
	}
	free(ks->v);
	memset(ks, 0, sizeof(*ks));
}

static int keyset_push(struct keyset *ks, size_t total, const uint8_t pk[KEYS_PUBLIC_LEN],
                       const char *comment, const char *source, struct err *err)
{
	struct authkey *k;

	if (total >= AUTHKEYS_MAX)
		return err_set(err, ERR_REFUSED, E2BIG, "more than %d authorized keys",
		               AUTHKEYS_MAX);
	if (ks->n == ks->cap) {
		size_t cap = ks->cap ? ks->cap * 2 : 8;
		struct authkey *v = reallocarray(ks->v, cap, sizeof(*v));
		if (!v)
			return err_oom(err);
		ks->v = v;
		ks->cap = cap;
	}
	k = &ks->v[ks->n];
	memcpy(k->pk, pk, KEYS_PUBLIC_LEN);
	k->comment = strdup(comment ? comment : "");
	k->source = strdup(source);
	if (!k->comment || !k->source) {
		free(k->comment);
		free(k->source);
		return err_oom(err);
	}
	ks->n++;
	return 0;
}

int authkeys_new(const char *file, const char *dir, struct authkeys **ret, struct err *err)
{
	struct authkeys *ak = calloc(1, sizeof(*ak));

	if (!ak)
		return err_oom(err);
	if ((file && !(ak->file = strdup(file))) || (dir && !(ak->dir = strdup(dir)))) {
		authkeys_free(ak);
		return err_oom(err);
	}
	*ret = ak;
	return 0;
}

void authkeys_free(struct authkeys *ak)
{
	if (!ak)
		return;
	keyset_dispose(&ak->loaded);
	keyset_dispose(&ak->added);
	free(ak->file);
	free(ak->dir);
	free(ak);
}

bool authkeys_has_sources(const struct authkeys *ak)
{
	return ak->file || ak->dir;
}

size_t authkeys_count(const struct authkeys *ak)
{
	return ak->loaded.n + ak->added.n;
}

const struct authkey *authkeys_find(const struct authkeys *ak, const uint8_t pk[KEYS_PUBLIC_LEN])
{
	for (size_t i = 0; i < ak->loaded.n; i++)
		if (memcmp(ak->loaded.v[i].pk, pk, KEYS_PUBLIC_LEN) == 0)
			return &ak->loaded.v[i];
	for (size_t i = 0; i < ak->added.n; i++)
		if (memcmp(ak->added.v[i].pk, pk, KEYS_PUBLIC_LEN) == 0)
			return &ak->added.v[i];
	return NULL;
}

int authkeys_add(struct authkeys *ak, const uint8_t pk[KEYS_PUBLIC_LEN], const char *comment,
                 struct err *err)
{
	return keyset_push(&ak->added, authkeys_count(ak), pk, comment, "added", err);
}

/* Owned by root or by us, not writable by group or others. */
static bool trusted_mode(const struct stat *st)
{
	return (st->st_uid == 0 || st->st_uid == geteuid()) && !(st->st_mode & 022);
}

/* Parse every line of an open file into ks. */
static int read_lines(FILE *f, const char *path, const struct authkeys *ak, struct keyset *ks,
                      struct err *err)
{
	_cleanup_free_ char *line = NULL;
	size_t line_cap = 0, total = 0;
	unsigned lineno = 0;
	ssize_t n;

	while ((n = getline(&line, &line_cap, f)) >= 0) {
		_cleanup_free_ char *comment = NULL;
		uint8_t pk[KEYS_PUBLIC_LEN];
		char source[512];
		const char *p = line;
		struct err e;
		int r;

		lineno++;
		total += (size_t)n;
		if (total > AUTHKEYS_FILE_MAX)
			return err_set(err, ERR_REFUSED, EFBIG, "%s is larger than %d bytes", path,
			               AUTHKEYS_FILE_MAX);
		p += strspn(p, " \t");
		if (*p == '\0' || *p == '\n' || *p == '\r' || *p == '#')
			continue;
		if (keys_parse_public(p, pk, &comment, &e) < 0) {
			log_debug("%s:%u: ignored: %s", path, lineno, e.msg);
			continue;
		}
		snprintf(source, sizeof(source), "%s:%u", path, lineno);
		r = keyset_push(ks, ks->n + ak->added.n, pk, comment, source, err);
		if (r < 0)
			return r;
	}
	if (ferror(f))
		return err_errno(err, "cannot read %s", path);
	return 0;
}

/* Read one key file (relative to dirfd); 0 also when it was missing or ignored. */
static int read_file(int dirfd, const char *name, const char *path, const struct authkeys *ak,
                     struct keyset *ks, struct err *err)
{
	_cleanup_close_ int fd = -1;
	_cleanup_fclose_ FILE *f = NULL;
	struct stat st;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		if (errno == ELOOP) {
			log_debug("%s: ignored: a symbolic link", path);
			return 0;
		}
		return err_errno(err, "cannot open %s", path);
	}
	if (fstat(fd, &st) < 0)
		return err_errno(err, "cannot stat %s", path);
	if (!S_ISREG(st.st_mode)) {
		log_debug("%s: ignored: not a regular file", path);
		return 0;
	}
	if (!trusted_mode(&st)) {
		log_debug("%s: ignored: writable by others or owned by another user", path);
		return 0;
	}
	f = fdopen(fd, "re");
	if (!f)
		return err_errno(err, "cannot read %s", path);
	TAKE_FD(fd);
	return read_lines(f, path, ak, ks, err);
}

static int pub_filter(const struct dirent *de)
{
	size_t len = strlen(de->d_name);

	return de->d_name[0] != '.' && len > 4 && strcmp(de->d_name + len - 4, ".pub") == 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The names in dfd that pub_filter() accepts, sorted (scandirat() without relying on it:
 * musl has none). Returns the count or a negative errno.
 */
static int dir_list_sorted(int dfd, char ***ret)
{
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	_cleanup_strv_ char **names = NULL;
	struct dirent *de;
	DIR *d;

	if (fd < 0)
		return -errno;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (pub_filter(de) && strv_push(&names, de->d_name) < 0) {
			closedir(d);
			return -ENOMEM;
		}
	closedir(d);
	if (names)
		qsort(names, strv_length(names), sizeof(char *), name_cmp);
	*ret = TAKE_PTR(names);
	return (int)strv_length(*ret);
}

static int read_dir(const char *dir, const struct authkeys *ak, struct keyset *ks, struct err *err)
{
	_cleanup_close_ int dfd = -1;
	_cleanup_strv_ char **names = NULL;
	struct stat st;
	int n, r = 0;

	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return err_errno(err, "cannot open the key directory %s", dir);
	}
	if (fstat(dfd, &st) < 0)
		return err_errno(err, "cannot stat %s", dir);
	if (!trusted_mode(&st)) {
		log_debug("%s: ignored: writable by others or owned by another user", dir);
		return 0;
	}
	n = dir_list_sorted(dfd, &names);
	if (n < 0) {
		errno = -n;
		return err_errno(err, "cannot list %s", dir);
	}
	for (int i = 0; i < n && r == 0; i++) {
		_cleanup_free_ char *path = NULL;
		if (asprintf(&path, "%s/%s", dir, names[i]) < 0)
			r = err_oom(err);
		else
			r = read_file(dfd, names[i], path, ak, ks, err);
	}
	return r;
}

int authkeys_reload(struct authkeys *ak, struct err *err)
{
	struct keyset ks = {0};
	int r = 0;

	if (ak->file)
		r = read_file(AT_FDCWD, ak->file, ak->file, ak, &ks, err);
	if (r == 0 && ak->dir)
		r = read_dir(ak->dir, ak, &ks, err);
	keyset_dispose(&ak->loaded);
	if (r < 0) {
		/* Fail closed: no key read from a source that could not be read. */
		keyset_dispose(&ks);
		return err_wrap(err, "cannot load the authorized keys");
	}
	ak->loaded = ks;
	return 0;
}
