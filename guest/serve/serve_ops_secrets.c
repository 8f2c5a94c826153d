/* SPDX-License-Identifier: Apache-2.0 */
/*
 * secrets.put and secrets.drop (docs/protocol.md "Secrets"). The value arrives in the data
 * part of the message and goes straight into the store's locked memory; the channel wipes the
 * frame's plaintext before it reads the next one. Only names are ever logged.
 */
#include "serve_ops_secrets.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "secrets_store.h"
#include "serve_stream.h"

int serve_ops_secrets_put(struct conn *c, struct stream *st, const struct msg *m)
{
	const char *name, *scope_name;
	json_object *o;
	struct err err;
	bool replaced = false;
	int scope;

	err_clear(&err);
	name = serve_stream_field_string(m, "name", true, &err);
	if (!name)
		return serve_stream_error(c, st, &err);
	scope_name = serve_stream_field_string(m, "scope", true, &err);
	if (!scope_name)
		return serve_stream_error(c, st, &err);
	scope = secrets_store_scope_from_string(scope_name);
	if (scope < 0) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "secrets.put %s: the scope must be fetch, boot or session, not \"%.40s\"",
		        name, scope_name);
		return serve_stream_error(c, st, &err);
	}
	if (secrets_store_put(c->srv->secrets, name, (enum secret_scope)scope, m->data, m->data_len,
	                      &replaced, &err) < 0)
		return serve_stream_error(c, st, &err);
	log_info("connection %" PRIu64 ": secret %s (%s) %s", c->id, name, scope_name,
	         replaced ? "replaced" : "stored");
	o = json_object_new_object();
	json_object_object_add(o, "name", json_object_new_string(name));
	json_object_object_add(o, "scope", json_object_new_string(scope_name));
	json_object_object_add(o, "replaced", json_object_new_boolean(replaced));
	return serve_stream_ok(c, st, o);
}

int serve_ops_secrets_drop(struct conn *c, struct stream *st, const struct msg *m)
{
	json_object *names = NULL, *o;
	const char *scope_name;
	struct err err;
	size_t dropped = 0;

	err_clear(&err);
	scope_name = serve_stream_field_string(m, "scope", false, &err);
	if (!scope_name && err.cls)
		return serve_stream_error(c, st, &err);
	if (m->json)
		json_object_object_get_ex(m->json, "names", &names);
	if (names && !json_object_is_type(names, json_type_array)) {
		err_set(&err, ERR_REFUSED, EINVAL, "secrets.drop: \"names\" must be an array");
		return serve_stream_error(c, st, &err);
	}
	if (!scope_name && !names) {
		err_set(&err, ERR_REFUSED, EINVAL, "secrets.drop: give \"names\" or \"scope\"");
		return serve_stream_error(c, st, &err);
	}
	if (scope_name) {
		int scope = strcmp(scope_name, "all") == 0
		                ? SECRET_SCOPE_ANY
		                : secrets_store_scope_from_string(scope_name);
		if (scope < 0) {
			err_set(&err, ERR_REFUSED, EINVAL,
			        "secrets.drop: the scope must be fetch, boot, session or all");
			return serve_stream_error(c, st, &err);
		}
		dropped += secrets_store_drop_scope(c->srv->secrets, (enum secret_scope)scope);
	}
	for (size_t i = 0; names && i < json_object_array_length(names); i++) {
		json_object *n = json_object_array_get_idx(names, i);
		if (json_object_is_type(n, json_type_string))
			dropped +=
			    (size_t)secrets_store_drop(c->srv->secrets, json_object_get_string(n));
	}
	log_info("connection %" PRIu64 ": %zu secret(s) dropped", c->id, dropped);
	o = json_object_new_object();
	json_object_object_add(o, "dropped", json_object_new_int64((int64_t)dropped));
	return serve_stream_ok(c, st, o);
}
