/* SPDX-License-Identifier: Apache-2.0 */
/* The publish operation (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_PUBLISH_H
#define SA_SERVE_OPS_PUBLISH_H

#include <json-c/json.h>
#include <stddef.h>

#include "err.h"
#include "msg.h"
#include "serve_types.h"

/* The daemon's half: check the request, start the runner, relay what it sends. */
int serve_ops_publish_commit(struct conn *c, struct stream *st, const struct msg *m);

/* Receives the pack in records (publish.data); non-zero stops it. */
typedef int (*serve_ops_publish_sink_fn)(void *userdata, const void *buf, size_t len);

/*
 * The runner's half, as root until it has the boot lock, then as the checkout's owner (the
 * request's uid and gid, never 0): the commit in memory and its pack to sink. *ret_reply:
 * {"commit", "base", "objects", "bytes"}.
 */
int serve_ops_publish_run(json_object *req, serve_ops_publish_sink_fn sink, void *userdata,
                          json_object **ret_reply, struct err *err);

#endif
