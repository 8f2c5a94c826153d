/* SPDX-License-Identifier: Apache-2.0 */
/* One connection: the guest side of the handshake, then messages dispatched by stream. */
#ifndef SA_SERVE_CONN_H
#define SA_SERVE_CONN_H

#include <stdbool.h>
#include "frame_io.h"
#include "serve_types.h"

struct conn *serve_conn_new(struct serve *srv, int fd, int wfd, bool owns_fds, const char *peer,
                            struct listener *l, struct frame_io *io);
/*
 * Make room for one more connection from a socket listener: at SERVE_HANDSHAKES_MAX
 * unauthenticated connections, or at the cap of all (SERVE_CONNS_MAX, lowered by the
 * descriptor limit), the unauthenticated one that got least far (then the oldest) is closed.
 * A candidate with no frame yet is read first (never waiting), so a host whose hello is
 * already in its socket is spared.
 * False when there is still no room (every connection is an authenticated session).
 */
bool serve_conn_admit(struct serve *srv);
void serve_conn_ready(struct conn *c);
/* Run the streams' pumps; 1 when one of them has more to do at once. */
int serve_conn_pump(struct conn *c);
/* Bytes buffered past poll()'s sight, or a pump with more to do: poll without waiting. */
bool serve_conn_has_pending(const struct conn *c);
/* A stream waits for files to grow (logs follow): poll with SERVE_FOLLOW_MS at most. */
bool serve_conn_wants_timer(const struct conn *c);
void serve_conn_free(struct conn *c);

#endif
