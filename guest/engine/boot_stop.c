/* SPDX-License-Identifier: Apache-2.0 */
#include "boot_stop.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boot_egress.h"
#include "boot_engine.h"
#include "boot_state.h"
#include "boot_services.h"
#include "workspace_discard.h"

/* Only a workspace a boot has used is ever removed: its state directory has a session id. */
static int check_discardable(const struct boot_stop_request *rq, struct err *err)
{
	char probe[PATH_MAX + 16];
	struct stat st;

	snprintf(probe, sizeof(probe), "%s/session_id", rq->state_dir);
	if (lstat(rq->state_dir, &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    access(probe, F_OK) < 0)
		return err_set(err, ERR_REFUSED, ENOENT,
		               "Sandbox discard refused: %s holds no boot's state (no %s); nothing "
		               "was removed",
		               rq->what, probe);
	return 0;
}

/* The state names the app asked for (or no app at all). */
static int check_same_app(const struct boot_stop_request *rq, struct err *err)
{
	_cleanup_free_ char *want = NULL, *have = NULL;
	struct boot_state st;
	int r;

	if (!rq->app_dir || boot_state_load(rq->state_dir, &st, err) != 0) {
		err_clear(err);
		return 0;
	}
	want = realpath(rq->app_dir, NULL);
	have = st.app_dir ? realpath(st.app_dir, NULL) : NULL;
	r = 0;
	if (st.app_dir && strcmp(have ? have : st.app_dir, want ? want : rq->app_dir) != 0)
		r = err_set(
		    err, ERR_REFUSED, EBUSY,
		    "Sandbox %s refused: the workspace of %s holds the boot of another app, "
		    "%s; nothing was stopped",
		    rq->discard ? "discard" : "stop", rq->app_dir, st.app_dir);
	boot_state_dispose(&st);
	return r;
}

static int discard(const struct boot_stop_request *rq, struct err *ret_warning, struct err *err)
{
	struct boot_options o = *rq->options;
	struct boot_plan plan = {0};
	struct err plan_err;
	int r;

	o.dry_run = true;
	o.for_cleanup = true;
	if (boot_plan_build(&o, &plan, &plan_err) < 0) {
		/* The configuration no longer loads: remove the workspace all the same. */
		if (!rq->fallback_workspace)
			return 0;
		if (workspace_discard(rq->fallback_workspace, err) < 0)
			return err_wrap(err, "Sandbox discard failed");
		return 0;
	}
	if (boot_services_drop_databases(&plan, &plan_err) < 0)
		*ret_warning = plan_err;
	boot_egress_remove(&plan);
	r = workspace_discard(plan.workspace, err);
	boot_plan_dispose(&plan);
	if (r < 0)
		return err_wrap(err, "Sandbox discard failed");
	return 0;
}

int boot_stop_run(const struct boot_stop_request *rq, struct err *ret_warning, struct err *err)
{
	unsigned grace = rq->grace_ms ? rq->grace_ms : BOOT_DEFAULT_GRACE_MS;

	err_clear(ret_warning);
	if (check_same_app(rq, err) < 0)
		return err_ret(err);
	if (rq->discard && check_discardable(rq, err) < 0)
		return err_ret(err);
	if (boot_engine_stop(rq->state_dir, grace, err) < 0)
		return err_wrap(err, "Sandbox stop failed");
	if (!rq->discard)
		return 0;
	return discard(rq, ret_warning, err);
}
