/* SPDX-License-Identifier: Apache-2.0 */
/* The table of the daemon's operations: message type -> the function that starts it. */
#ifndef SA_SERVE_OPS_H
#define SA_SERVE_OPS_H

#include <stdint.h>

#include "msg.h"
#include "serve_types.h"

/* Starts an operation on a new stream st opened by message m. */
typedef int (*serve_ops_start_fn)(struct conn *c, struct stream *st, const struct msg *m);

/* The operation a message type opens, or NULL when this agent has none. */
serve_ops_start_fn serve_ops_find(uint16_t type);

#endif
