/* SPDX-License-Identifier: Apache-2.0 */
/* The checkout operations (docs/protocol.md): started on a new stream by serve_ops_find(). */
#ifndef SA_SERVE_OPS_CHECKOUT_H
#define SA_SERVE_OPS_CHECKOUT_H

#include <json-c/json.h>
#include "err.h"
#include "secrets_store.h"
#include "msg.h"
#include "serve_types.h"

int serve_ops_checkout_pack(struct conn *c, struct stream *st, const struct msg *m);
int serve_ops_checkout_fetch(struct conn *c, struct stream *st, const struct msg *m);

/* In the runner: the fetch, checkout and swap of a checkout.fetch. */
int serve_ops_checkout_fetch_run(json_object *req, struct secrets_store *secrets,
                                 json_object **ret_reply, struct err *err);

#endif
