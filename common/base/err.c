/* SPDX-License-Identifier: Apache-2.0 */
#include "err.h"

#include <errno.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_ret(const struct err *err)
{
	return err->code > 0 ? -err->code : -1;
}

int err_set(struct err *err, int cls, int code, const char *fmt, ...)
{
	va_list ap;

	err->cls = cls;
	err->code = code < 0 ? -code : code;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return err_ret(err);
}

int err_errno(struct err *err, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;
	size_t n;

	err->cls = ERR_FAILED;
	err->code = saved;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	n = strlen(err->msg);
	if (saved && n < sizeof(err->msg))
		snprintf(err->msg + n, sizeof(err->msg) - n, ": %s", strerror(saved));
	errno = saved;
	return err_ret(err);
}

int err_wrap(struct err *err, const char *fmt, ...)
{
	char prefix[ERR_MSG_MAX];
	char old[ERR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(prefix, sizeof(prefix), fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof(old));
	snprintf(err->msg, sizeof(err->msg), "%s: %s", prefix, old);
	if (err->cls == ERR_NONE)
		err->cls = ERR_FAILED;
	return err_ret(err);
}

int err_reword(struct err *err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	if (err->cls == ERR_NONE)
		err->cls = ERR_FAILED;
	return err_ret(err);
}

void err_clear(struct err *err)
{
	err->cls = ERR_NONE;
	err->code = 0;
	err->msg[0] = '\0';
}

int err_vset(struct err *err, int cls, int code, const char *fmt, va_list ap)
{
	err->cls = cls;
	err->code = code;
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	return err_ret(err);
}

int err_oom(struct err *err)
{
	return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
}

int err_oom_at(struct err *err, const char *fmt, ...)
{
	char what[ERR_MSG_MAX - 16];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	return err_set(err, ERR_FAILED, ENOMEM, "out of memory %s", what);
}
