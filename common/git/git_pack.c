/* SPDX-License-Identifier: Apache-2.0 */
#include "git_pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "git_fetch.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(git_packbuilder *, git_packbuilder_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(git_revwalk *, git_revwalk_free)
#define _cleanup_git_packbuilder_ _cleanup_(git_packbuilder_freep)
#define _cleanup_git_revwalk_ _cleanup_(git_revwalk_freep)

struct sink_ctx {
	git_pack_sink_fn sink;
	void *userdata;
	size_t bytes;
	bool stopped;
};

static int on_pack_data(void *buf, size_t size, void *payload)
{
	struct sink_ctx *c = payload;

	if (c->sink(c->userdata, buf, size) != 0) {
		c->stopped = true;
		return -1;
	}
	c->bytes += size;
	return 0;
}

/* Insert tip; an annotated tag (or a chain of them) goes in as objects, its commit walked. */
static int peel_tip(git_repository *repo, git_packbuilder *pb, const git_oid *tip,
                    git_oid *ret_commit, struct err *err)
{
	_cleanup_git_object_ git_object *obj = NULL;
	int rc;

	rc = git_object_lookup(&obj, repo, tip, GIT_OBJECT_ANY);
	if (rc < 0)
		return git_fetch_err(err, rc, "looking up the object to pack");
	while (git_object_type(obj) == GIT_OBJECT_TAG) {
		git_object *target = NULL;

		rc = git_packbuilder_insert(pb, git_object_id(obj), NULL);
		if (rc < 0)
			return git_fetch_err(err, rc, "adding a tag to the pack");
		rc = git_tag_target(&target, (git_tag *)obj);
		if (rc < 0)
			return git_fetch_err(err, rc, "reading the tag's target");
		git_object_free(obj);
		obj = target;
	}
	if (git_object_type(obj) != GIT_OBJECT_COMMIT)
		return err_set(err, ERR_REFUSED, EINVAL, "%s is a %s, not a commit",
		               git_oid_tostr_s(tip), git_object_type2string(git_object_type(obj)));
	*ret_commit = *git_object_id(obj);
	return 0;
}

int git_pack_write(git_repository *repo, const git_oid *tip, const git_oid *have, size_t n_have,
                   git_pack_sink_fn sink, void *userdata, struct git_pack_stats *ret_stats,
                   struct err *err)
{
	_cleanup_git_packbuilder_ git_packbuilder *pb = NULL;
	_cleanup_git_revwalk_ git_revwalk *walk = NULL;
	_cleanup_git_odb_ git_odb *odb = NULL;
	struct sink_ctx c = {.sink = sink, .userdata = userdata};
	git_oid commit;
	int rc;

	rc = git_packbuilder_new(&pb, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "starting a pack");
	rc = git_repository_odb(&odb, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "opening the object database");
	rc = peel_tip(repo, pb, tip, &commit, err);
	if (rc < 0)
		return rc;

	rc = git_revwalk_new(&walk, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "starting a walk of the history");
	rc = git_revwalk_push(walk, &commit);
	if (rc < 0)
		return git_fetch_err(err, rc, "walking the history");
	for (size_t i = 0; i < n_have; i++) {
		git_object *o = NULL;

		/* The receiver may hold commits we never saw; only known commits can be hidden. */
		if (git_object_lookup(&o, repo, &have[i], GIT_OBJECT_COMMIT) < 0) {
			git_error_clear();
			continue;
		}
		git_object_free(o);
		rc = git_revwalk_hide(walk, &have[i]);
		if (rc < 0)
			return git_fetch_err(err, rc, "leaving out what the receiver has");
	}
	rc = git_packbuilder_insert_walk(pb, walk);
	if (rc < 0)
		return git_fetch_err(err, rc, "collecting the objects to pack");

	rc = git_packbuilder_foreach(pb, on_pack_data, &c);
	if (rc < 0) {
		if (c.stopped)
			return err_set(err, ERR_FAILED, EPIPE,
			               "the pack's receiver stopped the stream");
		return git_fetch_err(err, rc, "writing the pack");
	}
	if (ret_stats) {
		ret_stats->objects = git_packbuilder_object_count(pb);
		ret_stats->bytes = c.bytes;
	}
	return 0;
}

struct git_pack_receiver {
	git_repository *repo;
	git_indexer *idx;
	git_indexer_progress stats;
	size_t bytes;
	bool committed;
};

int git_pack_receiver_new(git_repository *repo, struct git_pack_receiver **ret, struct err *err)
{
	_cleanup_free_ struct git_pack_receiver *r = NULL;
	_cleanup_git_odb_ git_odb *odb = NULL;
	git_indexer_options o;
	char dir[4096];
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r)
		return err_oom(err);
	r->repo = repo;
	rc = git_repository_odb(&odb, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "opening the object database");
	rc = git_indexer_options_init(&o, GIT_INDEXER_OPTIONS_VERSION);
	if (rc < 0)
		return git_fetch_err(err, rc, "initializing libgit2 options");
	/* Check that every object the pack's objects name is in the pack or the repository. */
	o.verify = 1;
	if ((size_t)snprintf(dir, sizeof(dir), "%sobjects/pack", git_repository_path(repo)) >=
	    sizeof(dir))
		return err_set(err, ERR_FAILED, ENAMETOOLONG, "the repository path is too long");
	rc = git_indexer_new(&r->idx, dir, 0, odb, &o);
	if (rc < 0)
		return git_fetch_err(err, rc, "starting to index a pack");
	*ret = TAKE_PTR(r);
	return 0;
}

int git_pack_receiver_append(struct git_pack_receiver *r, const void *buf, size_t len,
                             struct err *err)
{
	int rc;

	if (r->committed)
		return err_set(err, ERR_FAILED, EINVAL, "the pack is already finished");
	if (!len)
		return 0;
	rc = git_indexer_append(r->idx, buf, len, &r->stats);
	if (rc < 0)
		return git_fetch_err(err, rc, "indexing the received pack");
	r->bytes += len;
	return 0;
}

/* Every tree and blob of the commit's root tree is in the object database. */
struct verify_ctx {
	git_odb *odb;
	git_oid missing;
	git_object_t missing_type;
	bool found_missing;
};

static int verify_entry(const char *root, const git_tree_entry *e, void *payload)
{
	struct verify_ctx *c = payload;
	git_object_t type = git_tree_entry_type(e);

	if (type == GIT_OBJECT_COMMIT) /* a gitlink: another repository's commit */
		return 0;
	if (!git_odb_exists(c->odb, git_tree_entry_id(e))) {
		c->missing = *git_tree_entry_id(e);
		c->missing_type = type;
		c->found_missing = true;
		return -1;
	}
	return 0;
}

int git_pack_verify_commit(git_repository *repo, const git_oid *commit, struct err *err)
{
	_cleanup_git_commit_ git_commit *c = NULL;
	_cleanup_git_tree_ git_tree *tree = NULL;
	_cleanup_git_odb_ git_odb *odb = NULL;
	struct verify_ctx v = {0};
	int rc;

	rc = git_commit_lookup(&c, repo, commit);
	if (rc < 0)
		return err_set(err, ERR_FAILED, ENOENT, "commit %s is not in the repository",
		               git_oid_tostr_s(commit));
	rc = git_commit_tree(&tree, c);
	if (rc < 0)
		return err_set(err, ERR_FAILED, ENOENT,
		               "the tree of commit %s is not in the repository",
		               git_oid_tostr_s(commit));
	rc = git_repository_odb(&odb, repo);
	if (rc < 0)
		return git_fetch_err(err, rc, "opening the object database");
	v.odb = odb;
	rc = git_tree_walk(tree, GIT_TREEWALK_PRE, verify_entry, &v);
	if (v.found_missing)
		return err_set(err, ERR_FAILED, ENOENT,
		               "%s %s of commit %s is not in the repository",
		               git_object_type2string(v.missing_type), git_oid_tostr_s(&v.missing),
		               git_oid_tostr_s(commit));
	if (rc < 0)
		return git_fetch_err(err, rc, "reading the commit's tree");
	return 0;
}

int git_pack_receiver_finish(struct git_pack_receiver *r, const git_oid *tip, const char *local_ref,
                             git_oid *ret_commit, struct git_pack_stats *ret_stats, struct err *err)
{
	_cleanup_git_reference_ git_reference *ref = NULL;
	_cleanup_git_object_ git_object *obj = NULL;
	_cleanup_git_object_ git_object *peeled = NULL;
	_cleanup_git_odb_ git_odb *odb = NULL;
	git_oid commit;
	char tipbuf[GIT_OID_HEXSZ + 1];
	int rc;

	if (r->committed)
		return err_set(err, ERR_FAILED, EINVAL, "the pack is already finished");
	if (!r->bytes)
		return err_set(err, ERR_FAILED, ENODATA, "the pack stream was empty");
	rc = git_indexer_commit(r->idx, &r->stats);
	if (rc < 0)
		return git_fetch_err(err, rc,
		                     "finishing the received pack (truncated or corrupt?)");
	r->committed = true;

	/* The object database caches its list of packs: make it look again. */
	rc = git_repository_odb(&odb, r->repo);
	if (rc >= 0)
		rc = git_odb_refresh(odb);
	if (rc < 0)
		return git_fetch_err(err, rc, "reloading the object database");

	git_oid_tostr(tipbuf, sizeof(tipbuf), tip);
	rc = git_object_lookup(&obj, r->repo, tip, GIT_OBJECT_ANY);
	if (rc < 0)
		return err_set(err, ERR_FAILED, ENOENT, "%s did not arrive with the pack", tipbuf);
	rc = git_object_peel(&peeled, obj, GIT_OBJECT_COMMIT);
	if (rc < 0)
		return err_set(err, ERR_FAILED, ENOENT, "%s does not lead to a commit in the pack",
		               tipbuf);
	commit = *git_object_id(peeled);
	rc = git_pack_verify_commit(r->repo, &commit, err);
	if (rc < 0)
		return rc;
	if (local_ref && *local_ref) {
		rc = git_reference_create(&ref, r->repo, local_ref, tip, 1, "received pack");
		if (rc < 0)
			return git_fetch_err(err, rc, "creating the ref for the received commit");
	}
	if (ret_commit)
		*ret_commit = commit;
	if (ret_stats) {
		ret_stats->objects = r->stats.indexed_objects;
		ret_stats->bytes = r->bytes;
	}
	return 0;
}

void git_pack_receiver_free(struct git_pack_receiver *r)
{
	if (!r)
		return;
	git_indexer_free(r->idx);
	free(r);
}
