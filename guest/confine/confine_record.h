/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The guest's record of its last verification (docs/isolation.md): root's, 0600, in
 * /run/sandbox-agent (gone at the next boot). A coding session reads it before it starts.
 */
#ifndef SA_CONFINE_RECORD_H
#define SA_CONFINE_RECORD_H

#include <json-c/json.h>
#include <stdbool.h>

#include "err.h"

#define CONFINE_RECORD_PATH "/run/sandbox-agent/confinement.json"
#define CONFINE_RECORD_MAX (64 * 1024)

/* doc written atomically at path (its directory made 0700), root's, 0600. */
int confine_record_write(const char *path, json_object *doc, struct err *err);

/*
 * The record at path: 1 and *ret_confined (and *ret_verified_at, seconds since the epoch) when
 * there is one, 0 when there is none, or an error when it cannot be read or parsed.
 */
int confine_record_read(const char *path, bool *ret_confined, int64_t *ret_verified_at,
                        struct err *err);

#endif
