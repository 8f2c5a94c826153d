/* SPDX-License-Identifier: Apache-2.0 */
#include "serve_target.h"

#include <errno.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include "boot_plan.h"
#include "boot_state.h"
#include "file.h"
#include "log.h"
#include "proc.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"

int serve_target_open(struct serve *srv, const struct msg *m, const char *then,
                      struct serve_target *t, struct err *err)
{
	const char *app_dir = serve_stream_field_string(m, "app_dir", true, err);

	t->lock_fd = -1;
	if (!app_dir || serve_apps_normalize(app_dir, &t->app_dir, err) < 0 ||
	    serve_apps_state_dir(srv, t->app_dir, &t->state_dir, err) < 0)
		return err_ret(err);
	if (serve_jobs_find(srv, JOB_BOOT, t->state_dir) ||
	    serve_jobs_find(srv, JOB_CHECKOUT, t->state_dir) ||
	    serve_jobs_find(srv, JOB_PUBLISH, t->state_dir))
		return err_set(err, ERR_REFUSED, EBUSY,
		               "a boot, checkout or publish of %s is in progress: %s when it has "
		               "finished",
		               t->app_dir, then);
	return 0;
}

int serve_target_lock(struct serve_target *t, struct err *err)
{
	if (file_mkdir_p(t->state_dir, 0700, err) < 0)
		return err_ret(err);
	return boot_state_lock_acquire(t->state_dir, &t->lock_fd, err);
}

void serve_target_unlock(struct serve_target *t)
{
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	t->lock_fd = -1;
}

void serve_target_dispose(struct serve_target *t)
{
	serve_target_unlock(t);
	free(t->app_dir);
	free(t->state_dir);
	t->app_dir = t->state_dir = NULL;
}

void serve_target_owner(const struct serve *srv, uid_t *ret_uid, gid_t *ret_gid)
{
	const char *user = srv->cfg->user;
	struct passwd *pw = getpwnam(user ? user : BOOT_DEFAULT_USER);

	*ret_uid = pw ? pw->pw_uid : (uid_t)-1;
	*ret_gid = pw ? pw->pw_gid : (gid_t)-1;
}

bool serve_target_server_running(const struct serve_target *t)
{
	struct boot_state s;
	struct err err;
	bool running;

	if (boot_state_load(t->state_dir, &s, &err) != 0)
		return false;
	running = s.server_pid > 1 && proc_is(s.server_pid, s.server_start);
	boot_state_dispose(&s);
	return running;
}

int serve_target_refuse(struct conn *c, struct stream *st, struct serve_target *t, const char *what,
                        struct err *err)
{
	log_info("connection %" PRIu64 ": %s into %s refused: %s", c->id, what,
	         t && t->app_dir ? t->app_dir : "?", err->msg);
	if (t)
		serve_target_unlock(t);
	return serve_stream_error(c, st, err);
}
