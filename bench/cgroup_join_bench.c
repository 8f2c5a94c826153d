/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What joining a boot's limits costs in the kernel alone: a bare program (none of the
 * project's code) makes a cgroup in the v1 memory, pids and cpu hierarchies where it sits, as
 * the engine does, writes "0" to each one's cgroup.procs or tasks file, leaves them the same
 * way and removes them. Each run starts after a pause longer than a grace period, as a boot
 * does. Prints the median and the largest time of each write, and how often the writer was
 * put to sleep (a wait: the RCU grace period of cgroup.procs) or preempted (moving to another
 * cpu cgroup reschedules the running task). Needs root. Usage: cgroup_join_bench [RUNS (15)]
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define N_HIER 3
#define MAX_RUNS 200

static const char *const hier[N_HIER] = {"memory", "pids", "cpu"};

struct sample {
	double ms;
	long slept, preempted;
};

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/*
 * Where this process sits in hierarchy h (/proc/self/cgroup: "id:controllers:path", the
 * controllers a comma list, e.g. "cpu,cpuacct" co-mounted), as a directory; 0 or -1.
 */
static int own_dir(const char *h, char *buf, size_t len)
{
	char line[1024];
	FILE *f = fopen("/proc/self/cgroup", "re");
	int r = -1;

	if (!f)
		return -1;
	while (r < 0 && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *path, *save = NULL;

		if (!ctl || !(path = strchr(++ctl, ':')))
			continue;
		*path++ = '\0';
		path[strcspn(path, "\n")] = '\0';
		for (char *c = strtok_r(ctl, ",", &save); c; c = strtok_r(NULL, ",", &save))
			if (strcmp(c, h) == 0) {
				snprintf(buf, len, "/sys/fs/cgroup/%s%s", h, path);
				r = 0;
			}
	}
	fclose(f);
	return r;
}

/* Write "0\n" to dir/file, timed. */
static int timed_write(const char *dir, const char *file, struct sample *s)
{
	char path[4200];
	struct rusage a, b;
	double t0;
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "cgroup_join_bench: open %s: %s\n", path, strerror(errno));
		return -1;
	}
	getrusage(RUSAGE_THREAD, &a);
	t0 = now_ms();
	r = (int)write(fd, "0\n", 2);
	s->ms = now_ms() - t0;
	getrusage(RUSAGE_THREAD, &b);
	close(fd);
	s->slept = b.ru_nvcsw - a.ru_nvcsw;
	s->preempted = b.ru_nivcsw - a.ru_nivcsw;
	if (r != 2) {
		fprintf(stderr, "cgroup_join_bench: write %s: %s\n", path, strerror(errno));
		return -1;
	}
	return 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, struct sample *s, int n)
{
	double v[MAX_RUNS];
	long slept = 0, preempted = 0;

	for (int i = 0; i < n; i++) {
		v[i] = s[i].ms;
		slept += s[i].slept > 0;
		preempted += s[i].preempted > 0;
	}
	qsort(v, (size_t)n, sizeof(v[0]), cmp_double);
	printf("  %-22s median %7.3f ms  max %7.3f ms  slept %ld/%d  preempted %ld/%d\n", what,
	       v[(n - 1) / 2], v[n - 1], slept, n, preempted, n);
}

int main(int argc, char **argv)
{
	static const char *const files[2] = {"cgroup.procs", "tasks"};
	static struct sample join[2][N_HIER][MAX_RUNS], leave[2][N_HIER][MAX_RUNS];
	char own[N_HIER][4096], dir[N_HIER][4200];
	int runs = argc > 1 ? atoi(argv[1]) : 15;

	if (runs < 1 || runs > MAX_RUNS)
		runs = 15;
	for (int h = 0; h < N_HIER; h++) {
		if (own_dir(hier[h], own[h], sizeof(own[h])) < 0) {
			fprintf(stderr, "cgroup_join_bench: no v1 %s hierarchy here\n", hier[h]);
			return 77;
		}
		snprintf(dir[h], sizeof(dir[h]), "%s/cgroup-join-bench-%d", own[h], (int)getpid());
	}
	for (int i = 0; i < runs; i++)
		for (int f = 0; f < 2; f++) {
			int bad = 0;

			for (int h = 0; h < N_HIER; h++)
				if (mkdir(dir[h], 0755) < 0 && errno != EEXIST) {
					fprintf(stderr, "cgroup_join_bench: mkdir %s: %s\n", dir[h],
					        strerror(errno));
					return 1;
				}
			/* Longer than a grace period: the kernel's state is as a boot finds it. */
			usleep(100 * 1000);
			for (int h = 0; h < N_HIER && !bad; h++)
				bad = timed_write(dir[h], files[f], &join[f][h][i]) < 0;
			usleep(100 * 1000);
			for (int h = 0; h < N_HIER && !bad; h++)
				bad = timed_write(own[h], files[f], &leave[f][h][i]) < 0;
			for (int h = 0; h < N_HIER; h++)
				rmdir(dir[h]);
			if (bad)
				return 1;
		}
	printf("cgroup v1 join benchmark, a bare program, %d runs, each after a 100 ms pause\n",
	       runs);
	for (int f = 0; f < 2; f++) {
		char what[64];

		printf(" through %s\n", files[f]);
		for (int h = 0; h < N_HIER; h++) {
			snprintf(what, sizeof(what), "join %s", hier[h]);
			report(what, join[f][h], runs);
		}
		for (int h = 0; h < N_HIER; h++) {
			snprintf(what, sizeof(what), "leave %s", hier[h]);
			report(what, leave[f][h], runs);
		}
	}
	return 0;
}
