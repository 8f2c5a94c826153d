/* SPDX-License-Identifier: Apache-2.0 */
/* The boot operations (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_BOOT_H
#define SA_SERVE_OPS_BOOT_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_boot_start(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_boot_stop(struct conn *c, struct stream *st, const struct msg *m);

#endif
