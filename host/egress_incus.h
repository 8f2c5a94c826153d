/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress policy applied to an Incus instance through the incus client (never by hand-made
 * REST calls): the network ACL created or replaced, then attached to the instance's NIC.
 */
#ifndef SA_HOST_EGRESS_INCUS_H
#define SA_HOST_EGRESS_INCUS_H

#include <json-c/json.h>

#include "err.h"

/*
 * `INCUS network acl create NAME` when it is missing, `INCUS network acl edit NAME` with the
 * ACL document on stdin, then the attachment keys: with network NULL on the instance's NIC,
 * `INCUS config device set INSTANCE DEVICE K=V...` (`device override` when the NIC comes from
 * a profile); with a network, on that whole network, `INCUS network set NETWORK K=V...`. The
 * client's own error message is part of a failure's. Each call is capped at 30 seconds.
 */
int egress_incus_apply(const char *incus, const char *instance, const char *device,
                       const char *network, const char *acl_name, json_object *acl,
                       json_object *keys, struct err *err);

#endif
