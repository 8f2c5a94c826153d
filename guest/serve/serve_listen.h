/* SPDX-License-Identifier: Apache-2.0 */
/* Listeners: unix, vsock, the serial port, stdio; peer checks. */
#ifndef SA_SERVE_LISTEN_H
#define SA_SERVE_LISTEN_H

#include <stdbool.h>
#include "err.h"
#include "serve_types.h"

int serve_listen_open(struct serve *srv, struct err *err);
void serve_listen_close(struct serve *srv);
/* The listener's fd is readable (or, serial, due for a retry): accept or start a session. */
void serve_listen_ready(struct serve *srv, struct listener *l);
/* A serial or stdio session ended: the port waits for the next one. */
void serve_listen_session_ended(struct serve *srv, struct listener *l, bool eof);

#endif
