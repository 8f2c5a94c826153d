/* SPDX-License-Identifier: Apache-2.0 */
#include "strv.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

size_t strv_length(char *const *v)
{
	size_t n = 0;

	if (!v)
		return 0;
	while (v[n])
		n++;
	return n;
}

void strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

int strv_consume(char ***v, char *s)
{
	size_t n = strv_length(*v);
	char **nv;

	nv = realloc(*v, (n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	nv[n] = s;
	nv[n + 1] = NULL;
	*v = nv;
	return 0;
}

int strv_push(char ***v, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return -ENOMEM;
	if (strv_consume(v, c) < 0) {
		free(c);
		return -ENOMEM;
	}
	return 0;
}

bool strv_contains(char *const *v, const char *s)
{
	for (size_t i = 0; v && v[i]; i++)
		if (strcmp(v[i], s) == 0)
			return true;
	return false;
}

char **strv_copy(char *const *v)
{
	size_t n = strv_length(v);
	char **c = calloc(n + 1, sizeof(char *));

	if (!c)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		c[i] = strdup(v[i]);
		if (!c[i]) {
			strv_free(c);
			return NULL;
		}
	}
	return c;
}

size_t strv_env_name_len(const char *entry)
{
	const char *eq = strchr(entry, '=');

	return eq ? (size_t)(eq - entry) : strlen(entry);
}

static char **env_find(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (size_t i = 0; env && env[i]; i++)
		if (strv_env_name_len(env[i]) == len && strncmp(env[i], name, len) == 0)
			return (char **)&env[i];
	return NULL;
}

const char *strv_env_get(char *const *env, const char *name)
{
	char **p = env_find(env, name);

	if (!p)
		return NULL;
	return *p + strlen(name) + 1;
}

int strv_env_set(char ***env, const char *name, const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);
	char *entry = malloc(nl + vl + 2);
	char **p;

	if (!entry)
		return -ENOMEM;
	memcpy(entry, name, nl);
	entry[nl] = '=';
	memcpy(entry + nl + 1, value, vl + 1);
	p = env_find(*env, name);
	if (p) {
		free(*p);
		*p = entry;
		return 0;
	}
	if (strv_consume(env, entry) < 0) {
		free(entry);
		return -ENOMEM;
	}
	return 0;
}

void strv_env_unset(char **env, const char *name)
{
	char **p = env_find(env, name);

	if (!p)
		return;
	free(*p);
	do {
		p[0] = p[1];
		p++;
	} while (*p);
}

bool strv_env_name_valid(const char *name)
{
	return name && strv_env_name_valid_n(name, strlen(name));
}

bool strv_env_name_valid_n(const char *name, size_t len)
{
	if (len == 0 ||
	    !(*name == '_' || (*name >= 'A' && *name <= 'Z') || (*name >= 'a' && *name <= 'z')))
		return false;
	for (size_t i = 1; i < len; i++)
		if (!(name[i] == '_' || (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9')))
			return false;
	return true;
}
