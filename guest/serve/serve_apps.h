/* SPDX-License-Identifier: Apache-2.0 */
/* Which state directory belongs to which app directory (kept across restarts). */
#ifndef SA_SERVE_APPS_H
#define SA_SERVE_APPS_H

#include "err.h"
#include "serve_types.h"

int serve_apps_load(struct serve *srv);
void serve_apps_free(struct serve *srv);
/* Normalise an app directory from a request: absolute, no trailing slash, no "." or "..". */
int serve_apps_normalize(const char *app_dir, char **ret, struct err *err);
/* The state directory of app_dir: the last boot's, else the directory shape's. */
int serve_apps_state_dir(struct serve *srv, const char *app_dir, char **ret, struct err *err);
int serve_apps_set(struct serve *srv, const char *app_dir, const char *state_dir);
void serve_apps_forget(struct serve *srv, const char *app_dir);
/*
 * Another app this daemon booted whose workspace is still there (not discarded), or NULL.
 * Every app of a daemon runs as the same user (docs/design.md, "Two apps in one guest").
 */
const char *serve_apps_other(const struct serve *srv, const char *app_dir);

#endif
