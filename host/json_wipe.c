/* SPDX-License-Identifier: Apache-2.0 */
#include "json_wipe.h"

#include <sodium.h>

void json_wipe_strings(json_object *o)
{
	if (json_object_is_type(o, json_type_string)) {
		sodium_memzero((char *)json_object_get_string(o),
		               (size_t)json_object_get_string_len(o));
	} else if (json_object_is_type(o, json_type_object)) {
		json_object_object_foreach(o, key, val)
		{
			(void)key;
			json_wipe_strings(val);
		}
	} else if (json_object_is_type(o, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(o); i++)
			json_wipe_strings(json_object_array_get_idx(o, i));
	}
}
