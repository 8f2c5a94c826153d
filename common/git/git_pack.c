/* SPDX-License-Identifier: Apache-2.0 */
#include "git_pack.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <zlib.h>

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

/*
 * The scan of a pack stream as it arrives: only what the limits need, the format as git
 * documents it (gitformat-pack: a 12-byte header "PACK", version 2 or 3, object count; each
 * object a type-and-size header, a base reference for deltas, zlib data; a trailing hash).
 * Object data is inflated into a scratch buffer and dropped; of a delta the first bytes are
 * kept, for its header (base size, result size). libgit2's indexer does the real work.
 */
enum scan_state {
	SCAN_HEADER,
	SCAN_OBJ_HEADER,
	SCAN_OFS_BASE,
	SCAN_REF_BASE,
	SCAN_DATA,
	SCAN_TRAILER,
};

#define OBJ_OFS_DELTA 6
#define OBJ_REF_DELTA 7
#define DELTA_HEAD_MAX 20 /* two size varints of at most 10 bytes */

struct pack_scan {
	enum scan_state state;
	struct git_pack_limits limits;
	uint8_t head[12];
	size_t head_len;
	uint64_t objects, seen;
	/* the object being read */
	int type;
	uint64_t size;     /* declared: the object's, or for a delta its data's */
	unsigned shift;    /* of the size varint */
	size_t base_bytes; /* of the base reference read so far */
	z_stream z;
	bool z_live;
	uint64_t out; /* inflated so far */
	uint8_t delta_head[DELTA_HEAD_MAX];
	size_t delta_head_len;
	bool delta_checked;
};

struct git_pack_receiver {
	git_repository *repo;
	git_indexer *idx;
	git_indexer_progress stats;
	size_t bytes;
	bool committed;
	struct pack_scan scan;
	struct err refused; /* set once a limit or the format refused the stream */
};

static void scan_init(struct pack_scan *sc)
{
	memset(sc, 0, sizeof(*sc));
	sc->limits = (struct git_pack_limits){GIT_PACK_MAX_BYTES, GIT_PACK_MAX_OBJECTS,
	                                      GIT_PACK_MAX_OBJECT_SIZE};
}

static void scan_dispose(struct pack_scan *sc)
{
	if (sc->z_live)
		inflateEnd(&sc->z);
	sc->z_live = false;
}

static int too_big(struct err *err, const char *what, uint64_t value, uint64_t limit)
{
	return err_set(err, ERR_REFUSED, EFBIG,
	               "the pack was refused: %s (%llu) is over the limit of %llu", what,
	               (unsigned long long)value, (unsigned long long)limit);
}

static int malformed(struct err *err, const char *what)
{
	return err_set(err, ERR_REFUSED, EPROTO, "the pack was refused: %s", what);
}

/* A delta's header: the base's size, then the size of the object it resolves to. */
static int delta_check(struct pack_scan *sc, bool complete, struct err *err)
{
	uint64_t sizes[2] = {0, 0};
	size_t i = 0;

	for (int k = 0; k < 2; k++) {
		unsigned shift = 0;
		for (;;) {
			if (i >= sc->delta_head_len)
				return complete ? malformed(err, "a delta's header is cut short")
				                : 0;
			uint8_t c = sc->delta_head[i++];
			if (shift > 63)
				return malformed(err, "a delta's header has an oversized number");
			sizes[k] |= (uint64_t)(c & 0x7f) << shift;
			shift += 7;
			if (!(c & 0x80))
				break;
		}
	}
	sc->delta_checked = true;
	if (sizes[0] > sc->limits.max_object_size)
		return too_big(err, "a delta's base size", sizes[0], sc->limits.max_object_size);
	if (sizes[1] > sc->limits.max_object_size)
		return too_big(err, "the size of an object resolved from a delta", sizes[1],
		               sc->limits.max_object_size);
	return 0;
}

/* Inflate what buf holds of the current object; *used gets the bytes that were its. */
static int scan_data(struct pack_scan *sc, const uint8_t *buf, size_t len, size_t *used,
                     struct err *err)
{
	uint8_t scratch[16384];
	bool delta = sc->type == OBJ_OFS_DELTA || sc->type == OBJ_REF_DELTA;
	int zr = Z_OK;

	sc->z.next_in = (Bytef *)buf;
	sc->z.avail_in = (uInt)(len > UINT32_MAX ? UINT32_MAX : len);
	while (zr != Z_STREAM_END && (sc->z.avail_in > 0 || sc->z.avail_out == 0)) {
		size_t got;
		sc->z.next_out = scratch;
		sc->z.avail_out = sizeof(scratch);
		zr = inflate(&sc->z, Z_NO_FLUSH);
		if (zr != Z_OK && zr != Z_STREAM_END && zr != Z_BUF_ERROR)
			return malformed(err, "an object's data is not valid zlib");
		got = sizeof(scratch) - sc->z.avail_out;
		if (delta && sc->delta_head_len < DELTA_HEAD_MAX) {
			size_t take = DELTA_HEAD_MAX - sc->delta_head_len;
			take = take < got ? take : got;
			memcpy(sc->delta_head + sc->delta_head_len, scratch, take);
			sc->delta_head_len += take;
		}
		sc->out += got;
		if (sc->out > sc->size)
			return malformed(err, "an object's data inflates past its declared size");
		if (delta && !sc->delta_checked && delta_check(sc, false, err) < 0)
			return -1;
		if (zr == Z_BUF_ERROR && got == 0)
			break;
	}
	*used = (size_t)(sc->z.next_in - buf);
	if (zr != Z_STREAM_END)
		return 0;
	if (sc->out != sc->size)
		return malformed(err, "an object's data is shorter than its declared size");
	if (delta && !sc->delta_checked && delta_check(sc, true, err) < 0)
		return -1;
	inflateEnd(&sc->z);
	sc->z_live = false;
	sc->seen++;
	sc->state = sc->seen == sc->objects ? SCAN_TRAILER : SCAN_OBJ_HEADER;
	return 0;
}

static int scan_append(struct pack_scan *sc, const uint8_t *buf, size_t len, struct err *err)
{
	size_t i = 0;

	while (i < len) {
		uint8_t c;
		size_t used;

		switch (sc->state) {
		case SCAN_HEADER:
			sc->head[sc->head_len++] = buf[i++];
			if (sc->head_len < sizeof(sc->head))
				break;
			if (memcmp(sc->head, "PACK", 4) != 0)
				return malformed(err, "it does not start with PACK");
			if (sc->head[4] || sc->head[5] || sc->head[6] ||
			    (sc->head[7] != 2 && sc->head[7] != 3))
				return malformed(err, "its version is not 2 or 3");
			sc->objects = (uint64_t)sc->head[8] << 24 | (uint64_t)sc->head[9] << 16 |
			              (uint64_t)sc->head[10] << 8 | sc->head[11];
			if (sc->objects > sc->limits.max_objects)
				return too_big(err, "its object count", sc->objects,
				               sc->limits.max_objects);
			sc->state = sc->objects ? SCAN_OBJ_HEADER : SCAN_TRAILER;
			break;
		case SCAN_OBJ_HEADER:
			c = buf[i++];
			if (sc->shift == 0) {
				sc->type = (c >> 4) & 7;
				sc->size = c & 0x0f;
				sc->shift = 4;
			} else {
				if (sc->shift > 60)
					return malformed(err,
					                 "an object header has an oversized size");
				sc->size |= (uint64_t)(c & 0x7f) << sc->shift;
				sc->shift += 7;
			}
			if (c & 0x80)
				break;
			if (sc->type == 0 || sc->type == 5)
				return malformed(err, "an object has an unknown type");
			if (sc->size > sc->limits.max_object_size)
				return too_big(err,
				               sc->type >= OBJ_OFS_DELTA ? "the size of a delta"
				                                         : "the size of an object",
				               sc->size, sc->limits.max_object_size);
			sc->shift = 0;
			sc->base_bytes = 0;
			sc->out = 0;
			sc->delta_head_len = 0;
			sc->delta_checked = false;
			sc->state = sc->type == OBJ_OFS_DELTA   ? SCAN_OFS_BASE
			            : sc->type == OBJ_REF_DELTA ? SCAN_REF_BASE
			                                        : SCAN_DATA;
			if (sc->state == SCAN_DATA)
				goto start_data;
			break;
		case SCAN_OFS_BASE:
			c = buf[i++];
			if (++sc->base_bytes > 10)
				return malformed(err, "a delta's base offset is oversized");
			if (c & 0x80)
				break;
			sc->state = SCAN_DATA;
			goto start_data;
		case SCAN_REF_BASE:
			i++;
			if (++sc->base_bytes < GIT_OID_RAWSZ)
				break;
			sc->state = SCAN_DATA;
		start_data:
			memset(&sc->z, 0, sizeof(sc->z));
			if (inflateInit(&sc->z) != Z_OK)
				return err_set(err, ERR_FAILED, ENOMEM, "cannot start zlib");
			sc->z_live = true;
			break;
		case SCAN_DATA:
			if (scan_data(sc, buf + i, len - i, &used, err) < 0)
				return -1;
			i += used;
			break;
		case SCAN_TRAILER:
			/* The hash, checked by libgit2; what follows it is libgit2's to refuse. */
			return 0;
		}
	}
	return 0;
}

int git_pack_receiver_new(git_repository *repo, unsigned flags, struct git_pack_receiver **ret,
                          struct err *err)
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
	scan_init(&r->scan);
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
	rc = git_indexer_new(&r->idx, dir, 0, flags & GIT_PACK_INTO_EMPTY ? NULL : odb, &o);
	if (rc < 0)
		return git_fetch_err(err, rc, "starting to index a pack");
	*ret = TAKE_PTR(r);
	return 0;
}

void git_pack_receiver_set_limits(struct git_pack_receiver *r, const struct git_pack_limits *l)
{
	if (l->max_bytes)
		r->scan.limits.max_bytes = l->max_bytes;
	if (l->max_objects)
		r->scan.limits.max_objects = l->max_objects;
	if (l->max_object_size)
		r->scan.limits.max_object_size = l->max_object_size;
}

int git_pack_receiver_append(struct git_pack_receiver *r, const void *buf, size_t len,
                             struct err *err)
{
	int rc;

	if (r->committed)
		return err_set(err, ERR_FAILED, EINVAL, "the pack is already finished");
	if (r->refused.cls) {
		*err = r->refused;
		return err_ret(err);
	}
	if (!len)
		return 0;
	if (len > r->scan.limits.max_bytes - r->bytes) {
		too_big(&r->refused, "its size in bytes", (uint64_t)r->bytes + len,
		        r->scan.limits.max_bytes);
		*err = r->refused;
		return err_ret(err);
	}
	if (scan_append(&r->scan, buf, len, &r->refused) < 0) {
		scan_dispose(&r->scan);
		*err = r->refused;
		return err_ret(err);
	}
	rc = git_indexer_append(r->idx, buf, len, &r->stats);
	if (rc < 0) {
		/* libgit2's refusal is for good too: the indexer is not fed again. */
		git_fetch_err(&r->refused, rc, "indexing the received pack");
		*err = r->refused;
		return err_ret(err);
	}
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
	if (r->refused.cls) {
		*err = r->refused;
		return err_ret(err);
	}
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
	scan_dispose(&r->scan);
	git_indexer_free(r->idx);
	free(r);
}
