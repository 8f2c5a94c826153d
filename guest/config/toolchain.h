/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Selecting the Ruby, Node and Bun versions a boot asks for, through the image's version
 * managers: the spec's `toolchain` names them, else the checkout does (`.ruby-version`,
 * `.node-version`, `.nvmrc`, `.tool-versions`). A manager is a directory of installed versions:
 *   ruby  $RBENV_ROOT/versions/<v>   (rbenv; default /usr/local/rbenv, then ~/.rbenv)
 *   node  $NODENV_ROOT/versions/<v>  (nodenv; default /usr/local/nodenv)
 *   bun   $BUN_VERSIONS_ROOT/<v>     (default /usr/local/bun/versions)
 * A version matches exactly or as a prefix at a dot ("22" picks the highest 22.x.y). When the
 * manager is absent the system's version is used and nothing is selected; when it is present
 * and the version is missing the boot is refused, naming the version and what is installed.
 * A selected version puts its bin/ first in PATH and sets RBENV_VERSION / NODENV_VERSION.
 */
#ifndef SA_TOOLCHAIN_H
#define SA_TOOLCHAIN_H

#include "boot_spec.h"
#include "err.h"

struct toolchain_choice {
	char *ruby; /* selected version, or NULL */
	char *node;
	char *bun;
};

/*
 * Decide what to select for app_dir (spec may be NULL) and change *env accordingly.
 * caller_env supplies RBENV_ROOT, NODENV_ROOT and BUN_VERSIONS_ROOT.
 */
int toolchain_select(const char *app_dir, const struct boot_toolchain *spec,
                     char *const *caller_env, const char *home, char ***env,
                     struct toolchain_choice *ret, struct err *err);
void toolchain_choice_dispose(struct toolchain_choice *c);

/* The version a checkout names for lang ("ruby", "node", "bun"), or NULL. */
char *toolchain_checkout_version(const char *app_dir, const char *lang);
/* Pick the installed version matching want from versions_dir; NULL if none. */
char *toolchain_match(const char *versions_dir, const char *want);

#endif
