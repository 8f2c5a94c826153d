/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Limits: sizes as people write them, the three sources resolved (the smallest wins, defaults
 * otherwise), sandbox.yml's and the spec's `limits`, and (as root, where a memory controller
 * exists) a real process set whose member is killed for memory and counted.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "boot_spec.h"
#include "cgroup_limits.h"
#include "cgroup_place.h"
#include "cleanup.h"
#include "limits_config.h"
#include "proc.h"
#include "procstatus.h"
#include "procset.h"
#include "sandbox_config.h"
#include "strv.h"

static uint64_t size_of(const char *text)
{
	struct err e;
	uint64_t v = 0;

	ck_assert_msg(cgroup_limits_parse_size(text, &v, &e) == 0, "%s: %s", text, e.msg);
	return v;
}

static void size_refused(const char *text)
{
	struct err e;
	uint64_t v = 0;

	ck_assert_msg(cgroup_limits_parse_size(text, &v, &e) < 0, "%s was accepted", text);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "is not a size"));
}

START_TEST(test_parse_size)
{
	ck_assert_uint_eq(size_of("4096"), 4096);
	ck_assert_uint_eq(size_of("2GiB"), 2ULL << 30);
	ck_assert_uint_eq(size_of("2G"), 2ULL << 30);
	ck_assert_uint_eq(size_of("2gb"), 2ULL << 30);
	ck_assert_uint_eq(size_of("512 MiB"), 512ULL << 20);
	ck_assert_uint_eq(size_of("512m"), 512ULL << 20);
	ck_assert_uint_eq(size_of("64k"), 64ULL << 10);
	ck_assert_uint_eq(size_of("1.5GiB"), 3ULL << 29);
	ck_assert_uint_eq(size_of("0.5K"), 512);
	ck_assert_uint_eq(size_of("1TiB"), 1ULL << 40);
	ck_assert_uint_eq(size_of("10B"), 10);
	size_refused("");
	size_refused("GiB");
	size_refused("-1G");
	size_refused("2GB!");
	size_refused("2 G B");
	size_refused("0");
	size_refused("0GiB");
	size_refused("1.5"); /* a fraction of a byte */
	size_refused("1.G");
	size_refused("2PiB");
	size_refused("99999999999999999999");
	size_refused("5000000TiB");
	size_refused("2Gibibytes");
}
END_TEST

START_TEST(test_format_size)
{
	char b[32];

	cgroup_limits_format_size(2ULL << 30, b, sizeof(b));
	ck_assert_str_eq(b, "2 GiB");
	cgroup_limits_format_size(64ULL << 20, b, sizeof(b));
	ck_assert_str_eq(b, "64 MiB");
	cgroup_limits_format_size(3ULL << 29, b, sizeof(b));
	ck_assert_str_eq(b, "1.5 GiB");
	cgroup_limits_format_size(1, b, sizeof(b));
	ck_assert_str_eq(b, "1 byte");
	cgroup_limits_format_size(1000, b, sizeof(b));
	ck_assert_str_eq(b, "1000 bytes");
	cgroup_limits_format_size(1536, b, sizeof(b));
	ck_assert_str_eq(b, "1.5 KiB");
}
END_TEST

START_TEST(test_config_values)
{
	struct limits_request r = {0};
	struct err e;

	ck_assert_int_eq(limits_config_set(&r, "memory", "2GiB", &e), 0);
	ck_assert_uint_eq(r.memory, 2ULL << 30);
	ck_assert_int_eq(limits_config_set(&r, "pids", "512", &e), 0);
	ck_assert_uint_eq(r.pids, 512);
	ck_assert_int_eq(limits_config_set(&r, "cpu_weight", "50", &e), 0);
	ck_assert_uint_eq(r.cpu_weight, 50);
	ck_assert_int_eq(limits_config_set(&r, "disk", "10G", &e), 0);
	ck_assert_uint_eq(r.disk, 10ULL << 30);
	ck_assert_int_lt(limits_config_set(&r, "memory", "1MiB", &e), 0); /* below 8 MiB */
	ck_assert_ptr_nonnull(strstr(e.msg, "`memory` must be a size of at least 8 MiB"));
	ck_assert_int_lt(limits_config_set(&r, "pids", "7", &e), 0);
	ck_assert_int_lt(limits_config_set(&r, "pids", "12x", &e), 0);
	ck_assert_int_lt(limits_config_set(&r, "pids", "-5", &e), 0);
	ck_assert_int_lt(limits_config_set(&r, "cpu_weight", "0", &e), 0);
	ck_assert_int_lt(limits_config_set(&r, "cpu_weight", "10001", &e), 0);
	ck_assert_int_eq(limits_config_set(&r, "swap", "1G", &e), -ENOENT);
	ck_assert_str_eq(limits_config_env_name("memory"), "SANDBOX_AGENT_LIMIT_MEMORY");
	ck_assert_ptr_null(limits_config_env_name("swap"));
}
END_TEST

START_TEST(test_resolve_smallest_then_defaults)
{
	struct limits_request spec = {.memory = 1ULL << 30, .pids = 100};
	struct limits_request file = {.memory = 512ULL << 20, .pids = 200, .cpu_weight = 20};
	char *env[] = {"SANDBOX_AGENT_LIMIT_MEMORY=768MiB", "SANDBOX_AGENT_LIMIT_PIDS=50", NULL};
	char *bad[] = {"SANDBOX_AGENT_LIMIT_DISK=lots", NULL};
	struct boot_limits l;
	struct err e;

	ck_assert_int_eq(limits_config_resolve(&spec, &file, env, &l, &e), 0);
	ck_assert_uint_eq(l.cg.memory_max, 512ULL << 20);
	ck_assert_uint_eq(l.cg.pids_max, 50);
	ck_assert_uint_eq(l.cg.cpu_weight, 20);
	ck_assert_uint_eq(l.disk, LIMITS_DEFAULT_DISK);
	ck_assert(l.asked & (1u << CGROUP_LIMITS_MEMORY));
	ck_assert(!(l.asked & LIMITS_ASKED_DISK));

	ck_assert_int_eq(limits_config_resolve(NULL, NULL, NULL, &l, &e), 0);
	ck_assert_uint_eq(l.cg.memory_max, LIMITS_DEFAULT_MEMORY);
	ck_assert_uint_eq(l.cg.pids_max, LIMITS_DEFAULT_PIDS);
	ck_assert_uint_eq(l.cg.cpu_weight, LIMITS_DEFAULT_CPU_WEIGHT);
	ck_assert_uint_eq(l.asked, 0);

	ck_assert_int_lt(limits_config_resolve(NULL, NULL, bad, &l, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "SANDBOX_AGENT_LIMIT_DISK"));
}
END_TEST

START_TEST(test_sandbox_yml_limits)
{
	const char *doc = "limits:\n  memory: 2GiB\n  pids: 512\n  cpu_weight: 100\n  disk: 10GiB\n"
	                  "  memroy: 1\n";
	_cleanup_strv_ char **notes = NULL;
	struct sandbox_config c;
	struct err e;

	ck_assert_int_eq(sandbox_config_parse_noted(doc, strlen(doc), &notes, &c, &e), 0);
	ck_assert_uint_eq(c.limits.memory, 2ULL << 30);
	ck_assert_uint_eq(c.limits.pids, 512);
	ck_assert_uint_eq(c.limits.cpu_weight, 100);
	ck_assert_uint_eq(c.limits.disk, 10ULL << 30);
	ck_assert_ptr_nonnull(notes);
	ck_assert_str_eq(notes[0], ".activeagents/sandbox.yml:6:3: warning: unknown limit `memroy` "
	                           "is ignored; did you mean `memory`?");
	sandbox_config_dispose(&c);

	doc = "limits: 2GiB\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "`limits` must map memory, pids, cpu_weight and disk"));
	doc = "limits:\n  pids: lots\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "`pids` must be a number of processes"));
	ck_assert_ptr_nonnull(strstr(e.msg, "line 2"));
	doc = "limits:\n  memory: [1]\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "`limits.memory` must be a value, not a list"));
	doc = "limits:\n  pids: 64\n  pids: 65\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "twice"));
}
END_TEST

START_TEST(test_spec_limits)
{
	const char *head = "{\"version\":1,\"app_dir\":\"/w/app\",\"manifest_path\":\"/w/m.json\","
	                   "\"port\":3000,\"timeout\":60,\"manifest\":{\"command\":\"m\"},"
	                   "\"start\":{\"command\":\"s\"},";
	char doc[1024];
	struct boot_spec s;
	struct err e;

	snprintf(doc, sizeof(doc),
	         "%s\"limits\":{\"memory\":\"2GiB\",\"pids\":512,\"disk\":"
	         "1073741824}}",
	         head);
	ck_assert_msg(boot_spec_parse(doc, strlen(doc), &s, &e) == 0, "%s", e.msg);
	ck_assert_uint_eq(s.limits.memory, 2ULL << 30);
	ck_assert_uint_eq(s.limits.pids, 512);
	ck_assert_uint_eq(s.limits.disk, 1ULL << 30);
	boot_spec_dispose(&s);
	snprintf(doc, sizeof(doc), "%s\"limits\":{\"pids\":true}}", head);
	ck_assert_int_lt(boot_spec_parse(doc, strlen(doc), &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "limits.pids"));
	snprintf(doc, sizeof(doc), "%s\"limits\":[]}", head);
	ck_assert_int_lt(boot_spec_parse(doc, strlen(doc), &s, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "limits"));
}
END_TEST

/* As root with a memory controller: a member allocating past 32 MiB is killed and counted. */
START_TEST(test_real_oom_counted)
{
	_cleanup_procset_ struct procset *ps = NULL;
	struct cgroup_limits l = {.memory_max = 32ULL << 20, .pids_max = 64};
	struct cgroup_limits_hits h;
	int join[CGROUP_LIMITS_N], status = 0;
	char name[64];
	struct err e;
	pid_t pid;

	if (geteuid() != 0) {
		fprintf(stderr, "test_real_oom_counted: not root, skipped\n");
		return;
	}
	snprintf(name, sizeof(name), "test-limits-%d", (int)getpid());
	ck_assert_int_eq(procset_create(name, &ps, &e), 0);
	if (procset_limit(ps, name, &l, &e) < 0) {
		fprintf(stderr, "test_real_oom_counted: %s, skipped\n", e.msg);
		procset_destroy(ps);
		return;
	}
	procset_limit_hits(ps, &h);
	ck_assert_uint_eq(h.oom_kills, 0);
	ck_assert_uint_eq(h.now.memory_max, 32ULL << 20);
	ck_assert_uint_eq(h.now.pids_max, 64);
	{
		struct proc_spec sp = {
		    .command = "exec python3 -c 'b = bytearray(128 << 20)'",
		    .output_fd = -1,
		    .procs_fd = procset_procs_fd(ps),
		    .join_fds = join,
		    .n_join_fds = procset_join_fds(ps, join),
		    .keep_fd = -1,
		};
		ck_assert_int_eq(proc_spawn(&sp, &pid, &e), 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	procset_limit_hits(ps, &h);
	ck_assert_uint_ge(h.oom_kills, 1);
	ck_assert_int_eq(procset_stop(ps, 100, getpid(), &e), 0);
	procset_destroy(ps);
}
END_TEST

/*
 * As root with v1 limits (the test machines): a process that enters the limits' cgroups is
 * found inside them by a set reopened there (as the supervisor is), has nothing left to join,
 * its spawns are born inside with oom_score_adj 0, and once it has left them they are removed.
 */
static int entered_child(struct procset *ps, const char *name)
{
	_cleanup_procset_ struct procset *again = NULL;
	struct cgroup_limits_hits h;
	int join[CGROUP_LIMITS_N], status = 0;
	char line[512], *cg = NULL;
	struct err e;
	pid_t pid;
	FILE *f;

	if (procset_enter_limits(ps, &e) < 0 || !procset_inside_limits(ps) ||
	    procset_join_fds(ps, join) != 0)
		return 10;
	if (procset_open(procset_cgroup_path(ps), &again, &e) < 0 || !procset_inside_limits(again))
		return 11;
	procset_limit_hits(again, &h);
	if (h.now.memory_max != 64ULL << 20)
		return 12;
	{
		_cleanup_free_ char *cmd = NULL;
		if (asprintf(&cmd,
		             "grep -q '^0$' /proc/self/oom_score_adj && "
		             "grep -q ':memory:.*/%s$' /proc/self/cgroup && "
		             "grep -q ':pids:.*/%s$' /proc/self/cgroup",
		             name, name) < 0)
			return 16;
		struct proc_spec sp = {
		    .command = cmd,
		    .output_fd = -1,
		    .procs_fd = procset_procs_fd(again),
		    .keep_fd = -1,
		};
		if (proc_spawn(&sp, &pid, &e) < 0 || waitpid(pid, &status, 0) != pid ||
		    !WIFEXITED(status) || WEXITSTATUS(status) != 0)
			return 13;
	}
	procset_leave_limits(ps);
	if (procset_inside_limits(ps) || !(f = fopen("/proc/self/cgroup", "re")))
		return 14;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, name))
			cg = line;
	fclose(f);
	return cg ? 15 : 0;
}

/*
 * As root with v1 limits: a process set limited to 64 MiB and 64 processes, child(set, name) in
 * a forked process, which must return 0; then the set is stopped, and its cgroups are gone.
 */
static void in_v1_limits(const char *prefix, int (*child)(struct procset *, const char *))
{
	_cleanup_procset_ struct procset *ps = NULL;
	struct cgroup_limits l = {.memory_max = 64ULL << 20, .pids_max = 64};
	int join[CGROUP_LIMITS_N], status = 0;
	char name[64];
	struct err e;
	pid_t pid;

	if (geteuid() != 0) {
		fprintf(stderr, "%s: not root, skipped\n", prefix);
		return;
	}
	snprintf(name, sizeof(name), "%s-%d", prefix, (int)getpid());
	ck_assert_int_eq(procset_create(name, &ps, &e), 0);
	if (procset_limit(ps, name, &l, &e) < 0 || procset_join_fds(ps, join) == 0) {
		fprintf(stderr, "%s: no v1 limits here, skipped\n", prefix);
		procset_destroy(ps);
		return;
	}
	pid = fork();
	if (pid == 0)
		_exit(child(ps, name));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: the child: %d", prefix,
	              WEXITSTATUS(status));
	ck_assert_int_eq(procset_stop(ps, 100, getpid(), &e), 0);
	procset_destroy(ps);
	{
		_cleanup_free_ char *base = NULL, *dir = NULL;
		ck_assert_int_eq(cgroup_place_base("memory", &base), 0);
		ck_assert_int_ge(asprintf(&dir, "%s/%s", base, name), 0);
		ck_assert_msg(access(dir, F_OK) < 0, "%s is left", dir);
	}
}

START_TEST(test_enter_once)
{
	in_v1_limits("test-enter", entered_child);
}
END_TEST

/* Whether thread tid of this process sits in a v1 memory cgroup named name. */
static bool thread_inside(pid_t tid, const char *name)
{
	char path[64], line[512];
	bool found = false;
	size_t n = strlen(name);
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%d/cgroup", (int)tid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		size_t len = strcspn(line, "\n");
		line[len] = '\0';
		if (strstr(line, ":memory:") && len > n && line[len - n - 1] == '/' &&
		    strcmp(line + len - n, name) == 0)
			found = true;
	}
	fclose(f);
	return found;
}

struct parked {
	int fd;
	_Atomic pid_t tid;
};

/* A second thread: says who it is, then waits for a byte. */
static void *parked(void *arg)
{
	struct parked *pk = arg;
	char c;

	pk->tid = (pid_t)syscall(SYS_gettid);
	return read(pk->fd, &c, 1) < 0 ? NULL : arg;
}

/* A process of two threads enters the limits: both are inside, and both leave again. */
static int threads_child(struct procset *ps, const char *name)
{
	struct parked pk = {.fd = -1};
	int p[2];
	pthread_t t;
	pid_t tid;
	struct err e;

	if (pipe(p) < 0)
		return 20;
	pk.fd = p[0];
	if (pthread_create(&t, NULL, parked, &pk) != 0)
		return 20;
	for (int i = 0; i < 1000 && !pk.tid; i++)
		usleep(1000);
	tid = pk.tid;
	if (!tid)
		return 21;
	if (procset_enter_limits(ps, &e) < 0)
		return 22;
	if (!thread_inside(getpid(), name) || !thread_inside(tid, name))
		return 23;
	procset_leave_limits(ps);
	if (thread_inside(getpid(), name) || thread_inside(tid, name))
		return 24;
	if (write(p[1], "x", 1) != 1 || pthread_join(t, NULL) != 0)
		return 25;
	return 0;
}

START_TEST(test_enter_threads)
{
	in_v1_limits("test-threads", threads_child);
}
END_TEST

static void *idle_thread(void *arg)
{
	int *fd = arg;
	char c;

	(void)!read(*fd, &c, 1);
	return NULL;
}

/* procstatus_field(), which tells the join file: the thread count and the umask. */
START_TEST(test_procstatus_field)
{
	unsigned long v = 0;
	mode_t old = umask(027);
	pthread_t t;
	int p[2];

	ck_assert_int_eq(procstatus_field("Umask", 8, &v), 0);
	ck_assert_uint_eq(v, 027);
	umask(old);
	ck_assert_int_eq(procstatus_field("Threads", 10, &v), 0);
	ck_assert_uint_eq(v, 1);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, idle_thread, &p[0]), 0);
	ck_assert_int_eq(procstatus_field("Threads", 10, &v), 0);
	ck_assert_uint_eq(v, 2);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	pthread_join(t, NULL);
	close(p[0]);
	close(p[1]);
	/* The first field too, found as any other; and a missing one. */
	ck_assert_int_eq(procstatus_field("Name", 10, &v), 0);
	ck_assert_int_eq(procstatus_field("NoSuchField", 10, &v), -ENOENT);
}
END_TEST

/* A remover that is busy the first `busy` calls, then answers `then`. */
static int remove_calls, remove_busy, remove_then;

static int fake_remove(const char *path)
{
	(void)path;
	return remove_calls++ < remove_busy ? -EBUSY : remove_then;
}

/* cgroup_place_remove_wait(): retries while busy, for a bounded time; other answers end it. */
START_TEST(test_remove_wait)
{
	remove_calls = 0, remove_busy = 3, remove_then = 0;
	ck_assert_int_eq(cgroup_place_remove_wait("x", fake_remove), 0);
	ck_assert_int_eq(remove_calls, 4);
	/* Gone already counts as removed; another error is returned at once. */
	remove_calls = 0, remove_busy = 0, remove_then = -ENOENT;
	ck_assert_int_eq(cgroup_place_remove_wait("x", fake_remove), 0);
	remove_calls = 0, remove_then = -EACCES;
	ck_assert_int_eq(cgroup_place_remove_wait("x", fake_remove), -EACCES);
	ck_assert_int_eq(remove_calls, 1);
	/* Busy for good: it gives up (after about a second) and says so. */
	remove_calls = 0, remove_busy = 1 << 30;
	ck_assert_int_eq(cgroup_place_remove_wait("x", fake_remove), -EBUSY);
	ck_assert_int_gt(remove_calls, 50);
	ck_assert_int_lt(remove_calls, 1000);
}
END_TEST

static Suite *limits_suite(void)
{
	Suite *s = suite_create("cgroup_limits");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_parse_size);
	tcase_add_test(tc, test_format_size);
	tcase_add_test(tc, test_config_values);
	tcase_add_test(tc, test_resolve_smallest_then_defaults);
	tcase_add_test(tc, test_sandbox_yml_limits);
	tcase_add_test(tc, test_spec_limits);
	tcase_add_test(tc, test_real_oom_counted);
	tcase_add_test(tc, test_enter_once);
	tcase_add_test(tc, test_enter_threads);
	tcase_add_test(tc, test_procstatus_field);
	tcase_add_test(tc, test_remove_wait);
	tcase_set_timeout(tc, 30);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(limits_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
