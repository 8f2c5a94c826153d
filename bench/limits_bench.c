/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a boot's limits cost the engine: making the process set and setting its three limits
 * (cgroup v2, or v1 beside it), one read of the kernel's counters (done at most every 200 ms
 * while a step runs), and one walk of a directory for the disk budget (done once per boot,
 * then only when the filesystem's counters say the budget may be passed). Means over RUNS.
 * Needs root. Usage: limits_bench [DIR-to-walk (default /usr/share)] [RUNS (default 20)]
 */
#include <stdio.h>
#include <stdlib.h>

#include "boot_disk.h"
#include "clock.h"
#include "procset.h"

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "/usr/share";
	int runs = argc > 2 ? atoi(argv[2]) : 20;
	uint64_t t_create = 0, t_limit = 0, t_read = 0, t_walk = 0, bytes = 0;

	if (runs < 1)
		runs = 1;
	for (int i = 0; i < runs; i++) {
		struct cgroup_limits l = {
		    .memory_max = 4ULL << 30, .pids_max = 4096, .cpu_weight = 100};
		struct cgroup_limits_hits h;
		struct procset *ps;
		struct err e;
		uint64_t t0 = clock_now_us(), t1, t2, t3;

		if (procset_create("bench-limits", &ps, &e) < 0) {
			fprintf(stderr, "limits_bench: %s\n", e.msg);
			return 1;
		}
		t1 = clock_now_us();
		if (procset_limit(ps, "bench-limits", &l, &e) < 0) {
			fprintf(stderr, "limits_bench: %s\n", e.msg);
			procset_destroy(ps);
			procset_free(ps);
			return 1;
		}
		t2 = clock_now_us();
		procset_limit_hits(ps, &h);
		t3 = clock_now_us();
		procset_destroy(ps);
		procset_free(ps);
		t_create += t1 - t0;
		t_limit += t2 - t1;
		t_read += t3 - t2;
	}
	for (int i = 0; i < 3; i++) {
		struct err e;
		uint64_t t0 = clock_now_us();

		if (boot_disk_usage(dir, &bytes, &e) < 0) {
			fprintf(stderr, "limits_bench: %s\n", e.msg);
			return 1;
		}
		t_walk += clock_now_us() - t0;
	}
	printf("limits benchmark, means over %d runs\n", runs);
	printf("  process set made             %8.0f us\n", (double)t_create / runs);
	printf("  memory, pids, cpu set        %8.0f us\n", (double)t_limit / runs);
	printf("  counters read once           %8.0f us\n", (double)t_read / runs);
	printf("  walk of %s (%.0f MiB)  %8.1f ms (mean of 3)\n", dir, (double)bytes / (1 << 20),
	       (double)t_walk / 3000);
	return 0;
}
