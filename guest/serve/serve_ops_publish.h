/* SPDX-License-Identifier: Apache-2.0 */
/* The publish operation (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_PUBLISH_H
#define SA_SERVE_OPS_PUBLISH_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_publish_commit(struct conn *c, struct stream *st, const struct msg *m);

#endif
