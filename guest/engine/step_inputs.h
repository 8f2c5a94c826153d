/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The inputs of an installer step (`npm ci`, `bundle install`, `bin/rails db:prepare`, ...:
 * tree_carry.h's groups), as one digest the boot records in state.json when the step succeeds.
 * The next boot skips the step when the digest is the same again: the same command, the same
 * environment (secret values left out: only their names count), the same inputs byte for byte
 * (lockfiles; for db:prepare the schema, the migrations, the seeds and database.yml), the
 * same built directories present (node_modules carried over by the checkout, or still there),
 * and for db:prepare the very SQLite database it prepared (device, inode, birth time and the
 * schema cookie of its header). Any other step has no digest and always runs.
 */
#ifndef SA_STEP_INPUTS_H
#define SA_STEP_INPUTS_H

#include <stdbool.h>
#include <stddef.h>

#include "boot_plan.h"

#define STEP_INPUTS_HEX_LEN 64

/*
 * The digest of step s's inputs in p->app_dir into hex (STEP_INPUTS_HEX_LEN + 1 bytes), and in
 * what (if not NULL) the lockfiles it read ("package-lock.json, package.json"). Returns 1 with
 * a digest, 0 when the step is not an installer or its inputs cannot be read safely (a link, a
 * file over the cap): then it always runs.
 */
int step_inputs_digest(const struct boot_plan *p, const struct plan_step *s, char *hex, char *what,
                       size_t what_len);

#endif
