/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Moving one commit between repositories as a pack stream (docs/checkout.md): the host, which
 * fetched with the token, builds a pack of everything reachable from the commit with libgit2's
 * packbuilder and streams it through a callback (onto the channel); the guest feeds the bytes
 * to libgit2's indexer, which writes objects/pack/pack-*.{pack,idx} into its repository and
 * checks that every object the pack refers to is there, then verifies the commit and its whole
 * tree arrived. The stream is a plain git pack (version 2): no framing, no credentials.
 */
#ifndef SA_GIT_PACK_H
#define SA_GIT_PACK_H

#include <git2.h>
#include <stddef.h>

#include "err.h"

/* Receives the pack's bytes in order; non-zero stops the pack (git_pack_write fails). */
typedef int (*git_pack_sink_fn)(void *userdata, const void *buf, size_t len);

struct git_pack_stats {
	size_t objects; /* objects in the pack */
	size_t bytes;   /* bytes of the pack stream */
};

/*
 * Write a pack of tip (a commit, or an annotated tag and the commit it points to) and every
 * object reachable from it, leaving out what is reachable from the n_have commits in have (the
 * receiver's current commit on a re-sync; commits repo does not know are ignored). The pack is
 * self-contained (never thin): every delta's base is in it. ret_stats may be NULL.
 */
int git_pack_write(git_repository *repo, const git_oid *tip, const git_oid *have, size_t n_have,
                   git_pack_sink_fn sink, void *userdata, struct git_pack_stats *ret_stats,
                   struct err *err);

struct git_pack_receiver;

/* Start receiving a pack stream into repo (bare or not). */
int git_pack_receiver_new(git_repository *repo, struct git_pack_receiver **ret, struct err *err);
/* Feed the next bytes of the stream, in any chunking. */
int git_pack_receiver_append(struct git_pack_receiver *r, const void *buf, size_t len,
                             struct err *err);
/*
 * The stream has ended: finish the pack and its index (a truncated or corrupt stream fails
 * here), make it visible to repo, and verify tip, the commit it peels to, and every tree and
 * blob of that commit are in repo. When local_ref is set ("refs/remotes/origin/main",
 * "refs/tags/v1"), it is created (or moved) to point at tip. *ret_commit gets the commit;
 * ret_commit and ret_stats may be NULL.
 */
int git_pack_receiver_finish(struct git_pack_receiver *r, const git_oid *tip, const char *local_ref,
                             git_oid *ret_commit, struct git_pack_stats *ret_stats,
                             struct err *err);
/* Abandon (or release after finish); a pack not finished leaves no file behind. */
void git_pack_receiver_free(struct git_pack_receiver *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct git_pack_receiver *, git_pack_receiver_free)
#define _cleanup_git_pack_receiver_ _cleanup_(git_pack_receiver_freep)

/*
 * Check that commit and every tree and blob reachable from its root tree are in repo (gitlinks,
 * which name commits of other repositories, are skipped). ENOENT names the first one missing.
 */
int git_pack_verify_commit(git_repository *repo, const git_oid *commit, struct err *err);

#endif
