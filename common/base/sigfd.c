/* SPDX-License-Identifier: Apache-2.0 */
#include "sigfd.h"

#include <stdarg.h>
#include <sys/signalfd.h>

void sigfd_set(sigset_t *set, ...)
{
	va_list ap;
	int sig;

	sigemptyset(set);
	va_start(ap, set);
	while ((sig = va_arg(ap, int)) != 0)
		sigaddset(set, sig);
	va_end(ap);
}

int sigfd_open(const sigset_t *set, sigset_t *ret_old, struct err *err)
{
	int fd;

	if (sigprocmask(SIG_BLOCK, set, ret_old) < 0)
		return err_errno(err, "sigprocmask");
	fd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return err_errno(err, "signalfd");
	return fd;
}
