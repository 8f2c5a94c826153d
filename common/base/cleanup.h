/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scope-bound cleanup, after systemd's src/basic/macro.h: a variable declared with one of
 * these attributes is released when it goes out of scope, so error paths need no goto ladder.
 * TAKE_PTR and TAKE_FD hand ownership on and leave the variable empty.
 */
#ifndef SA_CLEANUP_H
#define SA_CLEANUP_H

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _unused_ __attribute__((unused))

#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                    \
	static inline void func##p(type *p)                                                        \
	{                                                                                          \
		if (*p)                                                                            \
			func(*p);                                                                  \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

/* close() that keeps errno, for cleanup paths. */
static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}

static inline void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)

#define TAKE_PTR(p)                                                                                \
	({                                                                                         \
		__typeof__(p) _taken = (p);                                                        \
		(p) = NULL;                                                                        \
		_taken;                                                                            \
	})

#define TAKE_FD(fd)                                                                                \
	({                                                                                         \
		int _taken = (fd);                                                                 \
		(fd) = -1;                                                                         \
		_taken;                                                                            \
	})

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#endif
