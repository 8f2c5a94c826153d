/* SPDX-License-Identifier: Apache-2.0 */
/* Runner processes: spawned per boot, stop or fetch; their messages relayed to followers. */
#ifndef SA_SERVE_JOBS_H
#define SA_SERVE_JOBS_H

#include <json-c/json.h>
#include <stdbool.h>
#include "err.h"
#include "serve_types.h"

int serve_jobs_spawn(struct serve *srv, enum job_kind kind, json_object *request, bool with_secrets,
                     const char *app_dir, const char *state_dir, struct job **ret, struct err *err);
int serve_jobs_follow(struct job *j, uint64_t conn_id, uint32_t stream);
void serve_jobs_unfollow_conn(struct serve *srv, uint64_t conn_id);
void serve_jobs_readable(struct serve *srv, struct job *j);
void serve_jobs_reap(struct serve *srv);
struct job *serve_jobs_find(struct serve *srv, enum job_kind kind, const char *state_dir);
/* Kill the runners whose deadline passed; their followers get a timeout error. */
void serve_jobs_expire(struct serve *srv);
/* The earliest deadline of a job still running (frame_io_now_ms() units), or -1. */
int64_t serve_jobs_next_deadline(const struct serve *srv);
void serve_jobs_free(struct serve *srv);

#endif
