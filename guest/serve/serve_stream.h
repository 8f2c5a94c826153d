/* SPDX-License-Identifier: Apache-2.0 */
/* Replies and streams: what the operations and the jobs send to a connection. */
#ifndef SA_SERVE_STREAM_H
#define SA_SERVE_STREAM_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include "err.h"
#include "msg.h"
#include "serve_types.h"

/* The connection is dead (why is logged); the loop frees it. */
void serve_stream_kill_conn(struct conn *c, const char *why);
struct conn *serve_stream_conn_find(struct serve *srv, uint64_t id);
/* Send one message; json is consumed (may be NULL). A failure kills the connection. */
int serve_stream_send(struct conn *c, uint16_t type, uint16_t flags, uint32_t stream,
                      json_object *json, const void *data, size_t len);
/* The final reply of a stream (END): ok with json, or an error. */
int serve_stream_ok(struct conn *c, struct stream *st, json_object *json);
int serve_stream_error(struct conn *c, struct stream *st, const struct err *e);
/* Our half ended (by a message sent elsewhere with END): free the stream once both are. */
void serve_stream_finish(struct conn *c, struct stream *st);
struct stream *serve_stream_find(struct conn *c, uint32_t id);

/* A required string field; refuses (error reply) when missing. */
const char *serve_stream_field_string(const struct msg *m, const char *key, bool required,
                                      struct err *err);

/* Free one stream (its operation's data too). */
void serve_stream_free(struct stream *st);
/* Forget a stream once our half is done. */
void serve_stream_release(struct conn *c, struct stream *st);

#endif
