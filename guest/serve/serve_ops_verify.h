/* SPDX-License-Identifier: Apache-2.0 */
/* verify (docs/protocol.md "verify"): the guest's half of `sandbox-ctl verify`. */
#ifndef SA_SERVE_OPS_VERIFY_H
#define SA_SERVE_OPS_VERIFY_H

#include "msg.h"
#include "serve_types.h"

int serve_ops_verify(struct conn *c, struct stream *st, const struct msg *m);

#endif
