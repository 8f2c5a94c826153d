/* SPDX-License-Identifier: Apache-2.0 */
/* The query operations (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_QUERY_H
#define SA_SERVE_OPS_QUERY_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_query_status(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_query_runtime(struct conn *c, struct stream *st, const struct msg *m);

#endif
