/* SPDX-License-Identifier: Apache-2.0 */
/* Reading a member of a JSON object parsed from a peer, whose types are not to be trusted. */
#ifndef SA_JSON_GET_H
#define SA_JSON_GET_H

#include <json-c/json.h>

/* The string member key of o, or NULL when it is missing or not a string (o may be NULL). */
const char *json_get_string(json_object *o, const char *key);

#endif
