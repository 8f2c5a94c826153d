/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Wiping what json-c holds of a secret-bearing document before it is freed: json-c copies
 * every string to its own heap, which is not guarded memory.
 */
#ifndef SA_JSON_WIPE_H
#define SA_JSON_WIPE_H

#include <json-c/json.h>

/* Zero every string in o, in nested objects and arrays too (o may be NULL). */
void json_wipe_strings(json_object *o);

#endif
