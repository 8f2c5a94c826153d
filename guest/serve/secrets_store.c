/* SPDX-License-Identifier: Apache-2.0 */
#include "secrets_store.h"

#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

struct secret {
	char *name;
	enum secret_scope scope;
	uint8_t *value; /* sodium_malloc, no access at rest */
	size_t len;
};

struct secrets_store {
	struct secret *v;
	size_t n;
};

static const char *const scope_names[] = {
    [SECRET_SCOPE_FETCH] = "fetch",
    [SECRET_SCOPE_BOOT] = "boot",
    [SECRET_SCOPE_SESSION] = "session",
};

int secrets_store_scope_from_string(const char *s)
{
	if (!s)
		return -1;
	for (size_t i = 1; i < ELEMENTSOF(scope_names); i++)
		if (strcmp(s, scope_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *secrets_store_scope_name(enum secret_scope scope)
{
	if ((size_t)scope >= ELEMENTSOF(scope_names) || !scope_names[scope])
		return "any";
	return scope_names[scope];
}

bool secrets_store_name_valid(const char *name)
{
	size_t i;

	if (!name || !name[0] || (name[0] >= '0' && name[0] <= '9'))
		return false;
	for (i = 0; name[i]; i++) {
		char c = name[i];
		if (!(c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		      (c >= '0' && c <= '9')))
			return false;
	}
	return i <= SECRETS_NAME_MAX;
}

int secrets_store_new(struct secrets_store **ret, struct err *err)
{
	struct secrets_store *s;

	if (sodium_init() < 0)
		return err_set(err, ERR_FAILED, EIO, "cannot initialise libsodium");
	s = calloc(1, sizeof(*s));
	if (!s)
		return err_oom(err);
	*ret = s;
	return 0;
}

static void secret_dispose(struct secret *e)
{
	free(e->name);
	sodium_free(e->value); /* wipes it, whatever its protection */
	memset(e, 0, sizeof(*e));
}

static void remove_at(struct secrets_store *s, size_t i)
{
	secret_dispose(&s->v[i]);
	memmove(&s->v[i], &s->v[i + 1], (s->n - i - 1) * sizeof(*s->v));
	s->n--;
}

void secrets_store_free(struct secrets_store *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++)
		secret_dispose(&s->v[i]);
	free(s->v);
	free(s);
}

static ssize_t find(const struct secrets_store *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].name, name) == 0)
			return (ssize_t)i;
	return -1;
}

int secrets_store_put(struct secrets_store *s, const char *name, enum secret_scope scope,
                      const void *value, size_t len, bool *ret_replaced, struct err *err)
{
	struct secret e = {0};
	ssize_t old;

	if (!secrets_store_name_valid(name))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "a secret's name must match [A-Za-z_][A-Za-z0-9_]* (at most %d "
		               "characters)",
		               SECRETS_NAME_MAX);
	if (scope < SECRET_SCOPE_FETCH || scope > SECRET_SCOPE_SESSION)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "secret %s: the scope must be fetch, boot or session", name);
	if (len == 0)
		return err_set(err, ERR_REFUSED, EINVAL, "secret %s has no value", name);
	if (len > SECRETS_VALUE_MAX)
		return err_set(err, ERR_REFUSED, E2BIG,
		               "secret %s is %zu bytes; at most %d are allowed", name, len,
		               SECRETS_VALUE_MAX);
	if (memchr(value, '\0', len))
		return err_set(err, ERR_REFUSED, EINVAL,
		               "secret %s holds a NUL byte; values reach environments as strings",
		               name);
	old = find(s, name);
	if (old < 0 && s->n >= SECRETS_MAX)
		return err_set(err, ERR_REFUSED, ENOSPC,
		               "the agent holds %d secrets already; drop some first", SECRETS_MAX);
	e.name = strdup(name);
	e.value = sodium_malloc(len);
	if (!e.name || !e.value) {
		secret_dispose(&e);
		return err_oom_at(err, "for secret %s", name);
	}
	memcpy(e.value, value, len);
	sodium_mprotect_noaccess(e.value);
	e.len = len;
	e.scope = scope;
	if (old >= 0) {
		secret_dispose(&s->v[old]);
		s->v[old] = e;
	} else {
		struct secret *v = reallocarray(s->v, s->n + 1, sizeof(*v));
		if (!v) {
			secret_dispose(&e);
			return err_oom_at(err, "for secret %s", name);
		}
		s->v = v;
		s->v[s->n++] = e;
	}
	if (ret_replaced)
		*ret_replaced = old >= 0;
	return 0;
}

int secrets_store_drop(struct secrets_store *s, const char *name)
{
	ssize_t i = name ? find(s, name) : -1;

	if (i < 0)
		return 0;
	remove_at(s, (size_t)i);
	return 1;
}

size_t secrets_store_drop_scope(struct secrets_store *s, enum secret_scope scope)
{
	size_t dropped = 0;

	for (size_t i = 0; i < s->n;) {
		if (scope == SECRET_SCOPE_ANY || s->v[i].scope == scope) {
			remove_at(s, i);
			dropped++;
		} else {
			i++;
		}
	}
	return dropped;
}

size_t secrets_store_count(const struct secrets_store *s, enum secret_scope scope)
{
	size_t n = 0;

	for (size_t i = 0; i < s->n; i++)
		if (scope == SECRET_SCOPE_ANY || s->v[i].scope == scope)
			n++;
	return n;
}

int secrets_store_scope_of(const struct secrets_store *s, const char *name)
{
	ssize_t i = find(s, name);

	return i < 0 ? -1 : (int)s->v[i].scope;
}

int secrets_store_visit(const struct secrets_store *s, enum secret_scope scope, secrets_visit_fn fn,
                        void *userdata)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct secret *e = &s->v[i];
		int r;

		if (scope != SECRET_SCOPE_ANY && e->scope != scope)
			continue;
		sodium_mprotect_readonly(e->value);
		r = fn(userdata, e->name, e->scope, e->value, e->len);
		sodium_mprotect_noaccess(e->value);
		if (r < 0)
			return r;
	}
	return 0;
}
