/* SPDX-License-Identifier: Apache-2.0 */
#include "json_get.h"

const char *json_get_string(json_object *o, const char *key)
{
	json_object *v;

	if (!o || !json_object_object_get_ex(o, key, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}
