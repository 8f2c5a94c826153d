/* SPDX-License-Identifier: Apache-2.0 */
/*
 * `sandbox-agent init`: a small PID 1 for images and microVMs without systemd (docs/init.md).
 * One loop over a signalfd: SIGCHLD reaps every child (waitpid(-1, WNOHANG) until none is
 * left, so orphans the kernel hands to PID 1 or to this subreaper never stay zombies), SIGINT
 * and SIGHUP go to the daemon, SIGTERM / SIGUSR2 / SIGPWR stop it (TERM, the grace, KILL).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cleanup.h"
#include "clock.h"
#include "init.h"
#include "log.h"
#include "sigfd.h"

/* Whether PATH is a mount point: its device differs from its parent's. */
static int path_is_mounted(const char *path, bool *ret, struct err *err)
{
	char parent[4096];
	struct stat st, pst;

	if (snprintf(parent, sizeof(parent), "%s/..", path) >= (int)sizeof(parent))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "%s: path too long", path);
	if (stat(path, &st) < 0 || stat(parent, &pst) < 0)
		return err_errno(err, "stat %s", path);
	*ret = st.st_dev != pst.st_dev || st.st_ino == pst.st_ino;
	return 0;
}

static int mount_once(const char *root, const char *dir, const char *fstype, const char *data,
                      unsigned long flags, struct err *err)
{
	char path[4096];
	bool mounted = false;

	if (snprintf(path, sizeof(path), "%s%s", root, dir) >= (int)sizeof(path))
		return err_set(err, ERR_REFUSED, ENAMETOOLONG, "%s%s: path too long", root, dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return err_errno(err, "mkdir %s", path);
	if (path_is_mounted(path, &mounted, err) < 0)
		return -1;
	if (mounted) {
		log_debug("init: %s is mounted already", path);
		return 0;
	}
	if (mount(fstype, path, fstype, flags, data) < 0)
		return err_errno(err, "mount %s on %s", fstype, path);
	log_debug("init: mounted %s on %s", fstype, path);
	return 0;
}

int init_mount_basics(const char *root, struct err *err)
{
	const unsigned long nosuid_nodev_noexec = MS_NOSUID | MS_NODEV | MS_NOEXEC;
	char path[4096];
	struct stat st;

	if (mount_once(root, "/proc", "proc", NULL, nosuid_nodev_noexec, err) < 0 ||
	    mount_once(root, "/sys", "sysfs", NULL, nosuid_nodev_noexec, err) < 0 ||
	    mount_once(root, "/dev", "devtmpfs", "mode=0755", MS_NOSUID, err) < 0 ||
	    mount_once(root, "/run", "tmpfs", "mode=0755", MS_NOSUID | MS_NODEV, err) < 0)
		return -1;
	/* cgroup v2 for the per-boot cgroups (guest/procset.c); a kernel without it is no error. */
	snprintf(path, sizeof(path), "%s/sys/fs/cgroup", root);
	if (stat(path, &st) == 0 &&
	    mount_once(root, "/sys/fs/cgroup", "cgroup2", NULL, nosuid_nodev_noexec, err) < 0) {
		log_debug("init: %s (carrying on)", err->msg);
		err_clear(err);
	}
	snprintf(path, sizeof(path), "%s/run/sandbox-agent", root);
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return err_errno(err, "mkdir %s", path);
	if (chmod(path, 0700) < 0)
		return err_errno(err, "chmod %s", path);
	return 0;
}

/*
 * The kernel starts with fs.protected_hardlinks and protected_symlinks off (systemd turns them
 * on at boot; without it nobody does). Off, the app's user could hard-link a file of root's into
 * a tree the agent later gives to that user, or plant a link in a sticky directory that a
 * root process follows. Turned on here, as systemd does, with protected_fifos and
 * protected_regular; a value already higher stays. Where /proc/sys is read-only (a container:
 * the host's values apply) it is no error.
 */
void init_protect_links(const char *root)
{
	static const char *const names[] = {"protected_hardlinks", "protected_symlinks",
	                                    "protected_fifos", "protected_regular"};

	for (size_t i = 0; i < ELEMENTSOF(names); i++) {
		char path[4096], v[16] = "";
		_cleanup_close_ int fd = -1;
		ssize_t n;

		snprintf(path, sizeof(path), "%s/proc/sys/fs/%s", root, names[i]);
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0 && (errno == EROFS || errno == EACCES || errno == EPERM)) {
			log_debug("init: %s: %s (left as it is)", path, strerror(errno));
			continue;
		}
		if (fd < 0) {
			/* No /proc (--no-mount, and the initramfs mounted none): say so. */
			log_warn("init: cannot turn fs.%s on: %s: %s", names[i], path,
			         strerror(errno));
			continue;
		}
		n = read(fd, v, sizeof(v) - 1);
		if (n > 0 && v[0] != '0')
			continue;
		if (pwrite(fd, "1\n", 2, 0) != 2)
			log_warn("init: cannot turn fs.%s on: %s", names[i], strerror(errno));
		else
			log_debug("init: fs.%s = 1", names[i]);
	}
}

static void handled_signals(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	sigaddset(set, SIGTERM);
	sigaddset(set, SIGINT);
	sigaddset(set, SIGHUP);
	sigaddset(set, SIGUSR2);
	sigaddset(set, SIGPWR);
}

static int daemon_start(const char *path, char **argv, pid_t *ret, struct err *err)
{
	sigset_t none;
	pid_t pid = fork();

	if (pid < 0)
		return err_errno(err, "fork");
	if (pid == 0) {
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		setsid();
		execv(path ? path : argv[0], argv);
		_exit(127);
	}
	log_debug("init: started %s as %d", argv[0], (int)pid);
	*ret = pid;
	return 0;
}

/* Reap every child that has ended; note the daemon's end in *daemon and *status. */
static void reap_all(pid_t *daemon, int *status)
{
	int st;
	pid_t pid;

	while ((pid = waitpid(-1, &st, WNOHANG)) > 0) {
		if (pid != *daemon) {
			log_debug("init: reaped %d", (int)pid);
			continue;
		}
		*status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		*daemon = 0;
	}
}

/* Wait up to MS for SIGCHLD on FD, reaping, until no child is left; true when none is. */
static bool reap_until_none(int fd, int ms)
{
	int64_t deadline = (int64_t)clock_now_ms() + ms;
	struct signalfd_siginfo si;
	pid_t none = -1;
	int st = 0;

	for (;;) {
		reap_all(&none, &st);
		if (waitpid(-1, &st, WNOHANG) < 0 && errno == ECHILD)
			return true;
		int64_t left = deadline - (int64_t)clock_now_ms();
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (left <= 0)
			return false;
		if (poll(&p, 1, (int)left) > 0)
			(void)!read(fd, &si, sizeof(si));
	}
}

/* PID 1's end: every other process gets TERM, the grace, KILL; then sync and power off. */
static int power_off(int fd, int grace_ms, struct err *err)
{
	kill(-1, SIGTERM);
	if (!reap_until_none(fd, grace_ms)) {
		kill(-1, SIGKILL);
		reap_until_none(fd, 2000);
	}
	sync();
	if (reboot(RB_POWER_OFF) < 0)
		return err_errno(err, "reboot(RB_POWER_OFF)");
	return 0;
}

int init_run(const struct init_opts *opts, int *ret_status, struct err *err)
{
	sigset_t set, old;
	_cleanup_close_ int fd = -1;
	pid_t daemon = 0;
	int status = 0;
	bool stopping = false, killed = false;
	int64_t deadline = 0;

	handled_signals(&set);
	fd = sigfd_open(&set, &old, err);
	if (fd < 0)
		return fd;
	if (!opts->pid1 && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0)
		return err_errno(err, "prctl(PR_SET_CHILD_SUBREAPER)");
	if (daemon_start(opts->daemon_path, opts->daemon_argv, &daemon, err) < 0)
		return -1;

	while (daemon > 0) {
		struct signalfd_siginfo si;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		int timeout = -1, r;

		if (stopping && !killed) {
			int64_t left = deadline - (int64_t)clock_now_ms();
			timeout = left > 0 ? (int)left : 0;
		}
		r = poll(&p, 1, timeout);
		if (r < 0 && errno != EINTR)
			return err_errno(err, "poll");
		if (r == 0) {
			log_debug("init: the daemon outlived the grace; KILL");
			kill(daemon, SIGKILL);
			killed = true;
			continue;
		}
		if (r < 0 || read(fd, &si, sizeof(si)) != (ssize_t)sizeof(si))
			continue;
		switch (si.ssi_signo) {
		case SIGCHLD:
			reap_all(&daemon, &status);
			break;
		case SIGINT:
		case SIGHUP:
			kill(daemon, (int)si.ssi_signo);
			break;
		default: /* SIGTERM, SIGUSR2, SIGPWR */
			if (stopping)
				break;
			log_debug("init: signal %u: stopping the daemon", si.ssi_signo);
			stopping = true;
			deadline = (int64_t)clock_now_ms() + opts->grace_ms;
			kill(daemon, SIGTERM);
			break;
		}
	}
	log_debug("init: the daemon ended (%d)", status);
	*ret_status = status;
	if (opts->pid1)
		return power_off(fd, opts->grace_ms, err);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return 0;
}

static int usage(FILE *f)
{
	fputs("usage: sandbox-agent init [--grace MS] [--no-mount] [-v] [-- SERVE_ARGS...]\n"
	      "  PID 1 without systemd: mounts /proc /sys /dev /run, runs\n"
	      "  `sandbox-agent serve SERVE_ARGS...`, reaps every child, powers off on\n"
	      "  SIGTERM, SIGUSR2 or SIGPWR (see docs/init.md)\n",
	      f);
	return f == stderr ? 2 : 0;
}

int init_cli_main(int argc, char **argv)
{
	struct init_opts opts = {.grace_ms = 10000, .pid1 = getpid() == 1};
	bool do_mount = true;
	struct err err = {0};
	int i, status = 1;

	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			i++;
			break;
		} else if (strcmp(argv[i], "--grace") == 0 && i + 1 < argc) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			if (*end || v < 0 || v > 3600000) {
				fprintf(stderr, "sandbox-agent init: bad --grace '%s'\n", argv[i]);
				return 2;
			}
			opts.grace_ms = (int)v;
		} else if (strcmp(argv[i], "--no-mount") == 0) {
			do_mount = false;
		} else if (strcmp(argv[i], "-v") == 0) {
			log_max_level = LOG_DEBUG;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			return usage(stdout);
		} else {
			fprintf(stderr, "sandbox-agent init: unknown option '%s'\n", argv[i]);
			return usage(stderr);
		}
	}

	/* The kernel starts PID 1 with no PATH; the daemon's children need one. */
	setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", 0);
	if (do_mount && opts.pid1 && init_mount_basics("", &err) < 0)
		fprintf(stderr, "sandbox-agent init: %s (carrying on)\n", err.msg);
	if (opts.pid1)
		init_protect_links("");

	_cleanup_free_ char **dargv = calloc((size_t)(argc - i) + 3, sizeof(char *));
	if (!dargv) {
		fprintf(stderr, "sandbox-agent init: out of memory\n");
		return 1;
	}
	/* This very binary, by its real path: the daemon's comm is then "sandbox-agent", not
	 * "exe" (ps, pidof). /proc is mounted by now. */
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		opts.daemon_path = self;
	} else {
		opts.daemon_path = "/proc/self/exe";
	}
	dargv[0] = (char *)"sandbox-agent";
	dargv[1] = (char *)"serve";
	for (int j = 2; i < argc; i++, j++)
		dargv[j] = argv[i];
	opts.daemon_argv = dargv;

	if (init_run(&opts, &status, &err) < 0) {
		fprintf(stderr, "sandbox-agent init: %s\n", err.msg);
		return 1;
	}
	return status;
}
