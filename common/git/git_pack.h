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
#include <stdint.h>

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

/*
 * What a received pack may hold (the peer that sends it may be hostile: a guest publishing).
 * Each is checked as the bytes arrive, before libgit2 resolves anything: the stream's bytes,
 * the object count its header declares, and the size of every object as its header (or, for
 * a delta, the delta's own header: the size of the object it resolves to) declares it; an
 * object whose data inflates past its declared size is refused too. 0 in a field: its default.
 */
struct git_pack_limits {
	uint64_t max_bytes;       /* of the whole stream */
	uint64_t max_objects;     /* declared in the pack's header */
	uint64_t max_object_size; /* of one object, deltas resolved */
};
/* The defaults: a sanity cap for packs from a trusted sender (the host's checkout). */
#define GIT_PACK_MAX_BYTES (4ULL << 30)         /* 4 GiB */
#define GIT_PACK_MAX_OBJECTS 10000000ULL        /* ten million */
#define GIT_PACK_MAX_OBJECT_SIZE (512ULL << 20) /* 512 MiB */

enum git_pack_receive_flags {
	/*
	 * repo holds no objects yet (a checkout's stage): every object the pack's objects name
	 * must be in the pack itself. libgit2 then does not ask the repository for each of them,
	 * which rescans its pack directory at every miss (six system calls an object name).
	 */
	GIT_PACK_INTO_EMPTY = 1 << 0,
};

/*
 * Start receiving a pack stream into repo (bare or not), with the default limits. flags:
 * enum git_pack_receive_flags.
 */
int git_pack_receiver_new(git_repository *repo, unsigned flags, struct git_pack_receiver **ret,
                          struct err *err);
/* Replace the limits (before the first byte). */
void git_pack_receiver_set_limits(struct git_pack_receiver *r, const struct git_pack_limits *l);
/*
 * Feed the next bytes of the stream, in any chunking. A stream past a limit is refused
 * (ERR_REFUSED, EFBIG) with the limit named; a malformed one (EPROTO). After a refusal every
 * further append fails the same way.
 */
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
