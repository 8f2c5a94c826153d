/* SPDX-License-Identifier: Apache-2.0 */
#include "pins.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>

#include "file.h"

bool pins_name_valid(const char *instance)
{
	size_t len = strlen(instance);

	if (len == 0 || len > PINS_NAME_MAX || instance[0] == '#')
		return false;
	for (const char *p = instance; *p; p++)
		if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
			return false;
	return true;
}

/* If line pins instance, parse its key into pk and return 1; 0 for other lines. */
static int line_match(const char *line, size_t len, const char *instance,
                      uint8_t pk[KEYS_PUBLIC_LEN])
{
	size_t name_len = strlen(instance);
	char buf[1024];
	struct err e;

	if (len <= name_len || memcmp(line, instance, name_len) != 0 ||
	    (line[name_len] != ' ' && line[name_len] != '\t'))
		return 0;
	if (len >= sizeof(buf))
		return 0;
	memcpy(buf, line + name_len, len - name_len);
	buf[len - name_len] = '\0';
	return keys_parse_public(buf, pk, NULL, &e) == 0 ? 1 : 0;
}

static int read_pins(const char *path, char **ret_buf, size_t *ret_len, struct err *err)
{
	int r = file_read_capped(AT_FDCWD, path, PINS_FILE_MAX, READ_NOFOLLOW | READ_MISSING_OK,
	                         ret_buf, ret_len, err);
	if (r < 0)
		return err_wrap(err, "cannot read the pinned guest keys");
	return 0;
}

/* Find the instance's first valid pin line in buf: 1 with pk, 0 when none. */
static int find_pin(const char *buf, size_t len, const char *instance, uint8_t pk[KEYS_PUBLIC_LEN])
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t line_len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (line_match(p, line_len, instance, pk))
			return 1;
		p += line_len + 1;
	}
	return 0;
}

int pins_lookup(const char *path, const char *instance, uint8_t ret_pk[KEYS_PUBLIC_LEN],
                struct err *err)
{
	_cleanup_free_ char *buf = NULL;
	uint8_t pk[KEYS_PUBLIC_LEN];
	size_t len = 0;
	int r;

	if (!pins_name_valid(instance))
		return err_set(err, ERR_REFUSED, EINVAL, "invalid instance name for a key pin");
	r = read_pins(path, &buf, &len, err);
	if (r < 0)
		return r;
	if (!buf || !find_pin(buf, len, instance, pk))
		return 0;
	memcpy(ret_pk, pk, sizeof(pk));
	return 1;
}

static int lock_pins(const char *path, struct err *err)
{
	_cleanup_free_ char *lock_path = NULL;
	int fd;

	if (asprintf(&lock_path, "%s.lock", path) < 0)
		return err_oom(err);
	fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return err_errno(err, "cannot open %s", lock_path);
	while (flock(fd, LOCK_EX) < 0) {
		if (errno != EINTR) {
			err_errno(err, "cannot lock %s", lock_path);
			close(fd);
			return err_ret(err);
		}
	}
	return fd;
}

/*
 * Rewrite the file: every line kept except the instance's pins; the new line (if any) takes the
 * place of the first of them, or goes at the end.
 */
static int rewrite(const char *path, const char *buf, size_t len, const char *instance,
                   const char *new_line, struct err *err)
{
	_cleanup_free_ char *out = NULL;
	size_t out_len = 0, cap = len + (new_line ? strlen(new_line) : 0) + 2;
	const char *p = buf, *end = buf + len;
	bool placed = false;
	uint8_t pk[KEYS_PUBLIC_LEN];

	out = malloc(cap);
	if (!out)
		return err_oom(err);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t line_len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		if (line_match(p, line_len, instance, pk)) {
			if (new_line && !placed) {
				size_t n = strlen(new_line);
				memcpy(out + out_len, new_line, n);
				out_len += n;
				out[out_len++] = '\n';
				placed = true;
			}
		} else {
			memcpy(out + out_len, p, line_len);
			out_len += line_len;
			out[out_len++] = '\n';
		}
		p += line_len + 1;
	}
	if (new_line && !placed) {
		size_t n = strlen(new_line);
		memcpy(out + out_len, new_line, n);
		out_len += n;
		out[out_len++] = '\n';
	}
	return file_write_atomic(path, out, out_len, 0644, (uid_t)-1, (gid_t)-1, err);
}

int pins_verify(const char *path, const char *instance, const uint8_t pk[KEYS_PUBLIC_LEN],
                int flags, struct err *err)
{
	_cleanup_close_ int lock_fd = -1;
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ char *key_text = NULL;
	_cleanup_free_ char *line = NULL;
	char fp_new[KEYS_FINGERPRINT_MAX], fp_old[KEYS_FINGERPRINT_MAX];
	uint8_t pinned[KEYS_PUBLIC_LEN];
	size_t len = 0;
	int found, r;

	if (!pins_name_valid(instance))
		return err_set(err, ERR_REFUSED, EINVAL, "invalid instance name for a key pin");
	lock_fd = lock_pins(path, err);
	if (lock_fd < 0)
		return lock_fd;
	r = read_pins(path, &buf, &len, err);
	if (r < 0)
		return r;
	found = buf ? find_pin(buf, len, instance, pinned) : 0;
	if (found && memcmp(pinned, pk, KEYS_PUBLIC_LEN) == 0)
		return PINS_MATCH;
	keys_fingerprint(pk, fp_new);
	if (found && !(flags & PINS_REPLACE)) {
		keys_fingerprint(pinned, fp_old);
		return err_set(err, ERR_REFUSED, EKEYREJECTED,
		               "the key of %s changed: pinned %s, offered %s; if the instance was "
		               "rebuilt, accept the new key explicitly",
		               instance, fp_old, fp_new);
	}
	if (!found && !(flags & PINS_ACCEPT_NEW))
		return err_set(err, ERR_REFUSED, EKEYREJECTED,
		               "no key is pinned for %s (offered %s)", instance, fp_new);
	key_text = keys_format_public(pk, NULL);
	if (!key_text || asprintf(&line, "%s %s", instance, key_text) < 0)
		return err_oom(err);
	r = rewrite(path, buf ? buf : "", len, instance, line, err);
	if (r < 0)
		return err_wrap(err, "cannot pin the key of %s", instance);
	return found ? PINS_REPLACED : PINS_ADDED;
}

int pins_remove(const char *path, const char *instance, struct err *err)
{
	_cleanup_close_ int lock_fd = -1;
	_cleanup_free_ char *buf = NULL;
	uint8_t pinned[KEYS_PUBLIC_LEN];
	size_t len = 0;
	int r;

	if (!pins_name_valid(instance))
		return err_set(err, ERR_REFUSED, EINVAL, "invalid instance name for a key pin");
	lock_fd = lock_pins(path, err);
	if (lock_fd < 0)
		return lock_fd;
	r = read_pins(path, &buf, &len, err);
	if (r < 0)
		return r;
	if (!buf || !find_pin(buf, len, instance, pinned))
		return 0;
	r = rewrite(path, buf, len, instance, NULL, err);
	if (r < 0)
		return err_wrap(err, "cannot remove the pin of %s", instance);
	return 1;
}
