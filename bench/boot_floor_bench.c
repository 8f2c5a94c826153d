/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The kernel's part of a boot's path, measured alone: a bare program (none of the project's
 * code) asks the kernel, in a boot's order, what `sandbox-app-boot` must ask of it on the path
 * from its start to ready, outside the app's own commands, and times each request on its own
 * clock:
 *   lock      the boot lock: open, flock, the pid written
 *   save      a state.json save: 2.4 KB written to a new file, renamed over the old one (twice
 *             on the path: preflight and ready; the others are made beside the app's commands)
 *   spawn     a command's start as the run user, as the engine's proc_spawn() does it: clone
 *             with CLONE_VM | CLONE_VFORK, the user switched in the child, `sh -c true` exec'd;
 *             timed from the clone to the child's execve (the exec is the command's time, as
 *             the engine counts it: proc_spawn_at()); three on the path
 *             of tests/data/pyapp's boot: its setup step, the manifest, and the server (by the
 *             supervisor). What the command then runs is the app's and is not timed.
 *   runtime   runtime.json put in place: renamed (its write runs beside the server's start;
 *             neither is synced, since a power loss ends the app it describes)
 * Not included, so the sum is a floor: the cgroups of the boot's process set and limits
 * (`bench/cgroup_join_bench` measures joining them), the page faults of any program's start and
 * heap, and reading /proc. Each request comes after a pause of 5 ms, as a boot's come between
 * its commands. Prints the medians of RUNS rounds and their sum. Needs root.
 *
 * Usage: boot_floor_bench [DIR (/tmp)] [RUNS (15)] [UID (65534)]
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RUNS 200
#define STATE_BYTES 2400
#define SPAWNS 3
#define SAVES 2
#define CHILD_STACK (64 * 1024)

struct child_args {
	uid_t uid;
	gid_t gid;
	double exec_at; /* written by the child (shared memory) just before its execve */
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void pause_ms(int ms)
{
	struct timespec t = {.tv_sec = 0, .tv_nsec = (long)ms * 1000000L};

	while (nanosleep(&t, &t) < 0 && errno == EINTR)
		;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* "ext4", "tmpfs", or the filesystem's magic number. */
static const char *fs_name(const char *dir, char *buf, size_t len)
{
	struct statfs sf;

	if (statfs(dir, &sf) < 0)
		return "unknown";
	switch ((unsigned long)sf.f_type) {
	case 0xEF53UL:
		return "ext4";
	case 0x01021994UL:
		return "tmpfs";
	case 0x58465342UL:
		return "xfs";
	case 0x9123683EUL:
		return "btrfs";
	default:
		snprintf(buf, len, "0x%lx", (unsigned long)sf.f_type);
		return buf;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

static void write_file(const char *path, size_t len, int do_fsync)
{
	static char buf[STATE_BYTES];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		die(path);
	memset(buf, 'x', sizeof(buf));
	if (write(fd, buf, len) != (ssize_t)len || (do_fsync && fsync(fd) < 0))
		die(path);
	close(fd);
}

/* The child of a vfork-style clone: system calls only, until the exec. */
static int child_main(void *arg)
{
	const struct child_args *a = arg;
	char *const argv[] = {"sh", "-c", "true", NULL};
	char *const envp[] = {"PATH=/usr/bin:/bin", NULL};

	if (setgroups(0, NULL) < 0 || setresgid(a->gid, a->gid, a->gid) < 0 ||
	    setresuid(a->uid, a->uid, a->uid) < 0)
		_exit(126);
	((struct child_args *)arg)->exec_at = now_ms();
	execve("/bin/sh", argv, envp);
	_exit(127);
}

static double spawn_once(struct child_args *a, char *stack)
{
	double t0 = now_ms(), t;
	int status;
	pid_t pid = clone(child_main, stack + CHILD_STACK, CLONE_VM | CLONE_VFORK | SIGCHLD, a);

	t = a->exec_at - t0; /* the exec is the command's, as the engine counts it */
	if (pid < 0)
		die("clone");
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "the command failed (status %d)\n", status);
		exit(1);
	}
	return t;
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/tmp";
	int runs = argc > 2 ? atoi(argv[2]) : 15;
	struct child_args ca = {.uid = argc > 3 ? (uid_t)atoi(argv[3]) : 65534};
	static double lock_v[MAX_RUNS], save_v[MAX_RUNS], spawn_v[MAX_RUNS], runtime_v[MAX_RUNS];
	char base[4096], lock[4200], state[4200], tmp[4200], rt[4200], rt_tmp[4200];
	char *stack, fsbuf[32];
	double sum;

	if (runs < 1 || runs > MAX_RUNS) {
		fprintf(stderr, "RUNS must be 1..%d\n", MAX_RUNS);
		return 2;
	}
	if (geteuid() != 0) {
		fprintf(stderr, "needs root (the spawns switch to uid %u)\n", (unsigned)ca.uid);
		return 2;
	}
	ca.gid = (gid_t)ca.uid;
	snprintf(base, sizeof(base), "%s/boot-floor.XXXXXX", dir);
	if (!mkdtemp(base))
		die(base);
	snprintf(lock, sizeof(lock), "%s/lock", base);
	snprintf(state, sizeof(state), "%s/state.json", base);
	snprintf(tmp, sizeof(tmp), "%s/state.json.tmp", base);
	snprintf(rt, sizeof(rt), "%s/runtime.json", base);
	snprintf(rt_tmp, sizeof(rt_tmp), "%s/runtime.json.tmp", base);
	stack = mmap(NULL, CHILD_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (stack == MAP_FAILED)
		die("mmap");
	write_file(state, STATE_BYTES, 0);
	write_file(rt, 72, 1);

	for (int r = 0; r < runs; r++) {
		double t0, t = 0;
		int fd;
		char pid[16];

		pause_ms(20);
		t0 = now_ms();
		fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0)
			die(lock);
		snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
		if (pwrite(fd, pid, strlen(pid), 0) < 0)
			die(lock);
		lock_v[r] = now_ms() - t0;

		for (int i = 0; i < SAVES; i++) {
			pause_ms(5);
			t0 = now_ms();
			write_file(tmp, STATE_BYTES, 0);
			if (rename(tmp, state) < 0)
				die(state);
			t += now_ms() - t0;
		}
		save_v[r] = t;

		t = 0;
		for (int i = 0; i < SPAWNS; i++) {
			pause_ms(5);
			t += spawn_once(&ca, stack);
		}
		spawn_v[r] = t;

		pause_ms(5);
		unlink(rt); /* the engine removes it when a boot begins: a rename onto no file */
		write_file(rt_tmp, 72, 0);
		t0 = now_ms();
		if (rename(rt_tmp, rt) < 0)
			die(rt);
		runtime_v[r] = now_ms() - t0;
		close(fd);
	}
	unlink(lock);
	unlink(state);
	unlink(rt);
	rmdir(base);

	double l = median(lock_v, runs), s = median(save_v, runs), p = median(spawn_v, runs),
	       rtm = median(runtime_v, runs);
	sum = l + s + p + rtm;
	const char *fs = fs_name(dir, fsbuf, sizeof(fsbuf));
	printf("the kernel's part of a boot's path, a bare program, %d rounds, medians (%s, %s)\n",
	       runs, dir, fs);
	printf("  the boot lock                          %6.2f ms\n", l);
	printf("  %d state.json saves (write, rename)     %6.2f ms\n", SAVES, s);
	printf("  %d spawns as uid %-5u (clone to exec)  %6.2f ms\n", SPAWNS, (unsigned)ca.uid, p);
	printf("  runtime.json (rename)                  %6.2f ms\n", rtm);
	printf("  sum                                    %6.2f ms\n", sum);
	printf("figure: the kernel's part of a boot's path, measured alone by a bare program, "
	       "files on %s (the lock, %d state.json saves, %d spawns from clone to exec, "
	       "runtime.json's rename; not the cgroups, nor page faults; median "
	       "of %d) | %.1f ms (spawns %.1f, saves %.1f, runtime.json %.1f, lock %.2f) | \n",
	       fs, SAVES, SPAWNS, runs, sum, p, s, rtm, l);
	return 0;
}
