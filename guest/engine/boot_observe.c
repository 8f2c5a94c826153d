/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_observe.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "cleanup.h"
#include "logfile.h"
#include "proc.h"
#include "supervisor.h"

static bool is(const char *a, const char *b)
{
	return a && strcmp(a, b) == 0;
}

/* How a server that was ready ended: the supervisor's record, its time, the log's end. */
static int server_gone(const char *state_dir, struct boot_state *st)
{
	_cleanup_free_ char *sup = NULL, *log = NULL, *tail = NULL, *reason = NULL;
	char how[256], ended[32] = "";
	struct stat sst;
	struct err e;
	int exited = 0;

	if (asprintf(&sup, "%s/supervisor.json", state_dir) < 0 ||
	    asprintf(&log, "%s/logs/server.log", state_dir) < 0)
		return -ENOMEM;
	if (supervisor_read_status(sup, &exited, how, sizeof(how), &e) < 0 || !exited)
		snprintf(how, sizeof(how), "exited (how is not recorded)");
	/* The supervisor writes its record once more when the server ends. */
	if (exited && stat(sup, &sst) == 0) {
		struct tm tm;
		st->server_ended_ms =
		    (int64_t)sst.st_mtim.tv_sec * 1000 + sst.st_mtim.tv_nsec / 1000000;
		if (gmtime_r(&sst.st_mtime, &tm))
			strftime(ended, sizeof(ended), " at %Y-%m-%dT%H:%M:%SZ", &tm);
	}
	if (logfile_tail(log, 20, 500, &tail, &e) == 0 && tail && *tail)
		st->server_log_tail = TAKE_PTR(tail);
	/* The supervisor read the kernel's counter: the boot's memory limit killed it. */
	if (strstr(how, ": out of memory") && boot_state_set(&st->limit_hit, "memory") < 0)
		return -ENOMEM;
	if (boot_state_set(&st->server_exit, how) < 0 ||
	    asprintf(&reason,
	             "the server %s%s after it was ready; the app is not running (see "
	             "logs/server.log)",
	             how, ended) < 0) {
		reason = NULL;
		return -ENOMEM;
	}
	return boot_state_set(&st->reason, reason);
}

/* Mark st failed with that cause (and reason, when given). */
static int set_failed(struct boot_state *st, const char *cause, const char *reason)
{
	if (boot_state_set(&st->status, "failed") < 0 || boot_state_set(&st->cause, cause) < 0)
		return -ENOMEM;
	return reason ? boot_state_set(&st->reason, reason) : 0;
}

int boot_observe(const char *state_dir, bool in_progress, struct boot_state *ret, struct err *err)
{
	struct boot_state st;
	int r = boot_state_load(state_dir, &st, err);

	if (r < 0)
		return r;
	if (r == 1) {
		if (boot_state_set(&st.status, in_progress ? "booting" : "none") < 0)
			return err_oom(err);
		*ret = st;
		return 1;
	}
	if (!st.status && boot_state_set(&st.status, "none") < 0)
		r = -ENOMEM;
	else if (in_progress)
		r = boot_state_set(&st.status, "booting") < 0 ? -ENOMEM
		                                              : boot_state_set(&st.reason, NULL);
	else if (is(st.status, "booting") &&
	         !(st.boot_pid > 1 && proc_is(st.boot_pid, st.boot_start)))
		/* Its process is gone without saying how it ended: it was killed. */
		r = set_failed(&st, "boot_interrupted",
		               "the boot was interrupted: its process is gone");
	else if (is(st.status, "ready") && st.server_pid > 1 &&
	         !proc_is(st.server_pid, st.server_start))
		r = set_failed(&st, "server_exited", NULL) < 0 ? -ENOMEM
		                                               : server_gone(state_dir, &st);
	else if (is(st.status, "failed"))
		r = boot_state_set(&st.cause, "boot_failed");
	if (r < 0) {
		boot_state_dispose(&st);
		return err_oom(err);
	}
	*ret = st;
	return 0;
}

int boot_observe_json(const char *state_dir, char **ret_json, struct err *err)
{
	struct boot_state st;
	int r = boot_observe(state_dir, false, &st, err);

	if (r < 0)
		return r;
	*ret_json = r == 1 ? strdup("{\"status\":\"none\"}") : boot_state_to_json(&st);
	boot_state_dispose(&st);
	return *ret_json ? 0 : err_oom(err);
}
