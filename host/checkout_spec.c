/* SPDX-License-Identifier: Apache-2.0 */
#include "checkout_spec.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <sodium.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/printbuf.h>

#include "forge_http.h"
#include "git_fetch.h"
#include "json_wipe.h"
#include "keys.h"

void checkout_spec_dispose(struct checkout_spec *sp)
{
	if (sp->obj) {
		json_wipe_strings(sp->obj);
		json_object_put(sp->obj);
	}
	if (sp->buf)
		sodium_free(sp->buf);
	*sp = (struct checkout_spec){0};
}

static int read_fd(int fd, size_t max, const char *what, char *buf, size_t *len, struct err *err)
{
	for (;;) {
		ssize_t n = read(fd, buf + *len, max + 1 - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(err, "cannot read the %s", what);
		if (n == 0)
			break;
		*len += (size_t)n;
		if (*len > max)
			return err_set(err, ERR_REFUSED, EFBIG, "the %s is over %zu bytes", what,
			               max);
	}
	buf[*len] = '\0';
	return 0;
}

int checkout_spec_read_private(const char *path, size_t max, const char *what, char **ret_buf,
                               size_t *ret_len, struct err *err)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t len = 0;
	char *buf;

	*ret_buf = NULL;
	*ret_len = 0;
	if (keys_sodium_init(err) < 0)
		return err_ret(err);
	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
		if (fd < 0)
			return err_errno(err, "cannot open the %s %s", what, path);
		if (fstat(fd, &st) < 0)
			return err_errno(err, "cannot stat %s", path);
		if (!S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != geteuid())
			return err_set(err, ERR_REFUSED, EPERM,
			               "%s holds a secret (the %s): it must be a regular file of "
			               "yours that only you can read (chmod 600 %s)",
			               path, what, path);
		if ((size_t)st.st_size > max)
			return err_set(err, ERR_REFUSED, EFBIG, "the %s %s is over %zu bytes", what,
			               path, max);
	}
	buf = sodium_malloc(max + 1);
	if (!buf)
		return err_set(err, ERR_FAILED, ENOMEM, "cannot allocate guarded memory");
	if (read_fd(fd >= 0 ? fd : STDIN_FILENO, max, what, buf, &len, err) < 0) {
		sodium_free(buf);
		return err_ret(err);
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

static const char *spec_string(json_object *o, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}

int checkout_spec_read(const char *path, struct checkout_spec *sp, struct err *err)
{
	if (checkout_spec_read_private(path, CHECKOUT_SPEC_MAX, "checkout spec", &sp->buf, &sp->len,
	                               err) < 0)
		return err_ret(err);
	return checkout_spec_parse(sp, err);
}

int checkout_spec_parse(struct checkout_spec *sp, struct err *err)
{
	struct json_tokener *tok;
	json_object *v;
	int r;

	tok = json_tokener_new_ex(4);
	if (!tok)
		return err_oom(err);
	sp->obj = json_tokener_parse_ex(tok, sp->buf, (int)sp->len);
	if (tok->pb && tok->pb->buf)
		sodium_memzero(tok->pb->buf, (size_t)tok->pb->size);
	r = json_tokener_get_error(tok) == json_tokener_success;
	/* One object and nothing after it but blanks (sp->buf is NUL-terminated). */
	if (r) {
		size_t end = json_tokener_get_parse_end(tok);
		r = end + strspn(sp->buf + end, " \t\r\n") == sp->len;
	}
	json_tokener_free(tok);
	if (!r || !sp->obj || !json_object_is_type(sp->obj, json_type_object))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "the checkout spec is not one JSON object {repository, ref, "
		               "clone_url, username, token}");
	sp->clone_url = spec_string(sp->obj, "clone_url");
	sp->ref = spec_string(sp->obj, "ref");
	sp->username = spec_string(sp->obj, "username");
	sp->repository = spec_string(sp->obj, "repository");
	sp->api_url = spec_string(sp->obj, "api_url");
	if (!sp->clone_url)
		return err_set(err, ERR_REFUSED, EINVAL, "the checkout spec has no clone_url");
	if (json_object_object_get_ex(sp->obj, "token", &v) &&
	    !json_object_is_type(v, json_type_null)) {
		if (!json_object_is_type(v, json_type_string))
			return err_set(err, ERR_REFUSED, EINVAL,
			               "the checkout spec's token is not a string");
		sp->token = json_object_get_string(v);
		sp->token_len = (size_t)json_object_get_string_len(v);
	}
	/* A token only over https (or http to loopback). */
	return git_fetch_url_check(sp->clone_url, sp->token_len > 0, err);
}

int checkout_spec_check(const struct checkout_spec *sp, struct err *err)
{
	/* A ref libgit2 can name. */
	if (sp->ref && sp->ref[0] && git_fetch_ref_check(sp->ref, err) < 0)
		return err->cls == ERR_REFUSED ? err_wrap(err, "the checkout spec's ref")
		                               : err_ret(err);
	/* Checked with libcurl's URL parser: loading libcurl may fail, which is not the spec's. */
	if (sp->api_url && forge_http_api_url_check(sp->api_url, err) < 0)
		return err->cls == ERR_REFUSED ? err_wrap(err, "the checkout spec's api_url")
		                               : err_ret(err);
	return 0;
}

int checkout_spec_load(const char *path, struct checkout_spec *sp, struct err *err)
{
	if (checkout_spec_read(path, sp, err) < 0)
		return err_ret(err);
	return checkout_spec_check(sp, err);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

void checkout_spec_tmp_remove(const char *dir)
{
	nftw(dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
