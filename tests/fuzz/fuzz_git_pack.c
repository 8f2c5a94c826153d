/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The pack receiver's scan (common/git/git_pack.c) over bytes a hostile guest sends when it
 * publishes: the pack's header, every object's type-and-size header, delta base references and
 * zlib data, fed in two pieces split where the first byte says. Limits are small (1 MiB, 1000
 * objects, 1 MiB per object) so nothing the input declares can make the target slow. Checked:
 * a refusal is final (the next append fails too) and the error message is a bounded string.
 * The scratch repository lives in /tmp for the run and is removed at exit.
 */
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "git_fetch.h"
#include "git_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static git_repository *repo;
static char dir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

static void cleanup(void)
{
	git_repository_free(repo);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct git_pack_limits lim = {1 << 20, 1000, 1 << 20};
	struct git_pack_receiver *r = NULL;
	size_t split;
	struct err e;
	int rc;

	if (!repo) {
		snprintf(dir, sizeof(dir), "/tmp/fuzz_git_pack.XXXXXX");
		if (!mkdtemp(dir) || git_fetch_global_init(NULL, &e) < 0 ||
		    git_repository_init(&repo, dir, 1) < 0)
			abort();
		atexit(cleanup);
	}
	/*
	 * Both ways libgit2 is asked to index: as the guest's stage does (nothing consulted but
	 * the pack) and as sandbox-ctl's publish does (the repository's objects consulted); the
	 * input's length picks.
	 */
	if (git_pack_receiver_new(repo, size & 1 ? 0 : GIT_PACK_INTO_EMPTY, &r, &e) < 0)
		abort();
	git_pack_receiver_set_limits(r, &lim);
	split = size ? data[0] % (size + 1) : 0;
	err_clear(&e);
	rc = git_pack_receiver_append(r, data, split, &e);
	if (rc == 0)
		rc = git_pack_receiver_append(r, data + split, size - split, &e);
	if (rc < 0) {
		if (strnlen(e.msg, ERR_MSG_MAX) == ERR_MSG_MAX || e.cls == ERR_NONE)
			abort();
		/* Refused for good. */
		if (git_pack_receiver_append(r, "PACK", 4, &e) >= 0)
			abort();
	}
	git_pack_receiver_free(r);
	return 0;
}
