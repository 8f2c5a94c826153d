/* SPDX-License-Identifier: Apache-2.0 */
/* The tree operation (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_TREE_H
#define SA_SERVE_OPS_TREE_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_tree_push(struct conn *c, struct stream *st, const struct msg *m);

#endif
