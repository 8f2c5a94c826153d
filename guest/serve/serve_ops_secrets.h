/* SPDX-License-Identifier: Apache-2.0 */
/* The secrets operations (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_SECRETS_H
#define SA_SERVE_OPS_SECRETS_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_secrets_put(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_secrets_drop(struct conn *c, struct stream *st, const struct msg *m);

#endif
