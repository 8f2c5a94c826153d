/* SPDX-License-Identifier: Apache-2.0 */
/*
 * NULL-terminated string vectors (char **), the shape execve() takes, and an ordered
 * environment list of "NAME=VALUE" entries built on them. All allocation failures return
 * -ENOMEM and leave the vector as it was.
 */
#ifndef SA_STRV_H
#define SA_STRV_H

#include <stdbool.h>
#include <stddef.h>

#include "cleanup.h"

size_t strv_length(char *const *v);
void strv_free(char **v);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free)
#define _cleanup_strv_ _cleanup_(strv_freep)

/* Append a copy of s. */
int strv_push(char ***v, const char *s);
/* Append s itself (ownership moves to the vector on success). */
int strv_consume(char ***v, char *s);
bool strv_contains(char *const *v, const char *s);
char **strv_copy(char *const *v);

/* Environment lists: entries "NAME=VALUE", names unique, order of first insertion kept. */
const char *strv_env_get(char *const *env, const char *name);
int strv_env_set(char ***env, const char *name, const char *value);
void strv_env_unset(char **env, const char *name);
/* Length of the NAME part of "NAME=VALUE" (the whole string when there is no '='). */
size_t strv_env_name_len(const char *entry);
/* [A-Za-z_][A-Za-z0-9_]* */
bool strv_env_name_valid(const char *name);
/* The same for the first len bytes of name (the NAME of a "NAME=VALUE" entry). */
bool strv_env_name_valid_n(const char *name, size_t len);

#endif
