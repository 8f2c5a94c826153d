/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A small host side for the daemon's tests, on common/channel.h: connect over a unix socket or
 * any pair of descriptors, send requests on new streams, collect what comes back per stream.
 * The real host is sandbox-ctl (host/); this is just enough to drive `sandbox-agent serve`.
 */
#ifndef SA_TEST_SERVE_CLIENT_H
#define SA_TEST_SERVE_CLIENT_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "channel.h"
#include "frame_io.h"
#include "keys.h"
#include "msg.h"

#define CLIENT_TIMEOUT_MS 60000

struct got {
	uint16_t type;
	uint16_t flags;
	uint32_t stream;
	json_object *json;
	uint8_t *data;
	size_t len;
};

struct client {
	int fd;
	int wfd;
	struct frame_io *io;
	struct channel *ch;
	uint32_t next_stream;
	struct got *inbox;
	size_t n;
	struct err err;
};

/* The handshake over fd (and wfd for writing). Returns 0, or -1 with c->err set. */

/* Send on stream (NEW_STREAM: the next odd id) and return the stream's id (0 on failure). */
#define NEW_STREAM UINT32_MAX

/* Read one message into the inbox: 1, 0 at the end of the session, -1 on error. */

/* Wait for the message with END on stream; returns its index in the inbox, or -1. */

/* Wait for any message on stream of type (after index from); index or -1. */

/* One request on a new stream (END), its final reply. */

/* A JSON object from key/value pairs of strings: jobj("app_dir", dir, NULL). */

/* Push the directory src as the tree of app_dir; the final reply. */
struct push_count {
	int64_t entries;
	int64_t bytes;
};

void got_dispose(struct got *g);
void client_free(struct client *c);
int client_start(struct client *c, int fd, int wfd, const struct keypair *key);
int unix_connect(const char *path);
int client_connect(struct client *c, const char *path, const struct keypair *key);
uint32_t client_send(struct client *c, uint16_t type, uint16_t flags, uint32_t stream,
                     json_object *json, const void *data, size_t len);
int client_pull(struct client *c, int timeout_ms);
ssize_t client_wait_end(struct client *c, uint32_t stream, int timeout_ms);
ssize_t client_wait_type(struct client *c, uint32_t stream, uint16_t type, size_t from,
                         int timeout_ms);
struct got *client_request(struct client *c, uint16_t type, json_object *json, const void *data,
                           size_t len);
const char *got_string(const struct got *g, const char *key);
int64_t got_int(const struct got *g, const char *key);
json_object *jobj(const char *key, ...);
int push_dir(struct client *c, uint32_t st, const char *src, const char *rel, struct push_count *n);
struct got *client_push_tree(struct client *c, const char *app_dir, const char *src);

#endif
