/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Replies and streams: the one way the operations (serve_ops_*.c) and the jobs (serve_jobs.c)
 * send to a connection. A stream ends when both halves did (docs/protocol.md "Streams"); a
 * send that fails marks the connection dead, and the loop (serve.c) frees it.
 */
#include "serve_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "channel.h"
#include "frame_io.h"
#include "log.h"

struct conn *serve_stream_conn_find(struct serve *srv, uint64_t id)
{
	for (struct conn *c = srv->conns; c; c = c->next)
		if (c->id == id && c->state != CONN_DEAD)
			return c;
	return NULL;
}

struct stream *serve_stream_find(struct conn *c, uint32_t id)
{
	for (struct stream *st = c->streams; st; st = st->next)
		if (st->id == id)
			return st;
	return NULL;
}

void serve_stream_free(struct stream *st)
{
	if (st->ops && st->ops->free && st->data)
		st->ops->free(st->data);
	free(st);
}

static void stream_remove(struct conn *c, struct stream *st)
{
	for (struct stream **p = &c->streams; *p; p = &(*p)->next) {
		if (*p == st) {
			*p = st->next;
			c->n_streams--;
			serve_stream_free(st);
			return;
		}
	}
}

/*
 * Once our half is done nothing more happens on a stream: it is forgotten, and what the host
 * still sends on it (the rest of a refused push, a cancel that crossed our last reply) is
 * dropped as belonging to a finished stream.
 */
void serve_stream_release(struct conn *c, struct stream *st)
{
	if (st->done)
		stream_remove(c, st);
}

void serve_stream_kill_conn(struct conn *c, const char *why)
{
	if (c->state == CONN_DEAD)
		return;
	if (c->state == CONN_SESSION)
		log_info("connection %" PRIu64 " (%s, %s) ended: %s", c->id, c->peer,
		         c->fingerprint, why);
	c->state = CONN_DEAD;
}

int serve_stream_send(struct conn *c, uint16_t type, uint16_t flags, uint32_t stream,
                      json_object *json, const void *data, size_t len)
{
	struct msg m = {.type = type,
	                .flags = flags,
	                .stream = stream,
	                .json = json,
	                .data = data,
	                .data_len = len};
	struct err err;
	int r;

	if (c->state != CONN_SESSION) {
		json_object_put(json);
		return -EPIPE;
	}
	r = channel_send(c->ch, &m, SERVE_SEND_TIMEOUT_MS, &err);
	json_object_put(json);
	if (r < 0)
		serve_stream_kill_conn(c, err.msg);
	return r;
}

void serve_stream_finish(struct conn *c, struct stream *st)
{
	st->done = true;
}

int serve_stream_ok(struct conn *c, struct stream *st, json_object *json)
{
	st->done = true;
	return serve_stream_send(c, MSG_OK, MSG_F_END, st->id,
	                         json ? json : json_object_new_object(), NULL, 0);
}

int serve_stream_error(struct conn *c, struct stream *st, const struct err *e)
{
	struct msg m = {0};
	struct err err;
	int r;

	st->done = true;
	if (c->state != CONN_SESSION)
		return -EPIPE;
	log_debug("connection %" PRIu64 " stream %" PRIu32 ": %s", c->id, st->id, e->msg);
	msg_error_from_err(&m, st->id, e, true);
	r = channel_send(c->ch, &m, SERVE_SEND_TIMEOUT_MS, &err);
	msg_dispose(&m);
	if (r < 0)
		serve_stream_kill_conn(c, err.msg);
	return r;
}

const char *serve_stream_field_string(const struct msg *m, const char *key, bool required,
                                      struct err *err)
{
	json_object *v = NULL;
	const char *s;

	if (!m->json || !json_object_object_get_ex(m->json, key, &v) || !v) {
		if (required)
			err_set(err, ERR_REFUSED, EINVAL, "%s: \"%s\" is missing",
			        msg_type_name(m->type) ?: "request", key);
		return NULL;
	}
	if (!json_object_is_type(v, json_type_string)) {
		err_set(err, ERR_REFUSED, EINVAL, "%s: \"%s\" must be a string",
		        msg_type_name(m->type) ?: "request", key);
		return NULL;
	}
	s = json_object_get_string(v);
	if ((size_t)json_object_get_string_len(v) != strlen(s)) {
		err_set(err, ERR_REFUSED, EINVAL, "%s: \"%s\" holds a NUL character",
		        msg_type_name(m->type) ?: "request", key);
		return NULL;
	}
	return s;
}
