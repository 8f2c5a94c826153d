/* SPDX-License-Identifier: Apache-2.0 */
/* Compiled once, linked into every unit test (tests/unit/support/test_watchdog.h). */
#include "test_watchdog.h"

char owner_env[64];
bool environ_has(pid_t pid, const char *entry)
{
	char path[64], buf[65536];
	size_t len = 0, want = strlen(entry) + 1;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	while (len < sizeof(buf) - 1 && (n = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)n;
	close(fd);
	for (size_t off = 0; off < len; off += strnlen(buf + off, len - off) + 1)
		if (len - off >= want && !memcmp(buf + off, entry, want))
			return true;
	return false;
}

void _unused_ kill_owned(const char *entry)
{
	for (int round = 0; round < 50; round++) {
		DIR *d = opendir("/proc");
		struct dirent *de;
		bool any = false;

		if (!d)
			return;
		while ((de = readdir(d))) {
			pid_t pid = (pid_t)atoi(de->d_name);

			if (pid > 1 && pid != getpid() && environ_has(pid, entry)) {
				kill(pid, SIGKILL);
				any = true;
			}
		}
		closedir(d);
		if (!any)
			return;
		usleep(20000);
	}
}

void _unused_ test_watchdog_start(void)
{
	int p[2];
	pid_t mid;

	snprintf(owner_env, sizeof(owner_env), "SA_TEST_OWNER=%d", (int)getpid());
	putenv(owner_env); /* inherited by plain fork() + exec() children too */
	ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
	mid = fork();
	ck_assert_int_ge(mid, 0);
	if (mid == 0) {
		char c;

		setsid(); /* out of the group Check kills after the test */
		if (fork() != 0)
			_exit(0);
		proc_close_inherited(p[0]);
		while (read(p[0], &c, 1) < 0 && errno == EINTR)
			;
		kill_owned(owner_env);
		_exit(0);
	}
	close(p[0]);
	ck_assert_int_eq(waitpid(mid, NULL, 0), mid);
	/* p[1] stays open until this test process ends. The watchdog is not our descendant;
	 * what we start from here on is, orphans included. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
}
