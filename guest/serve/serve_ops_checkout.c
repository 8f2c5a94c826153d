/* SPDX-License-Identifier: Apache-2.0 */
/*
 * checkout.pack and checkout.fetch (docs/protocol.md §7.8, docs/checkout.md).
 *
 * checkout.pack runs in the daemon, as tree.push does: the app's boot lock is taken, a stage
 * is begun beside the app directory (checkout_stage.h), the pack's bytes are fed to libgit2's
 * indexer as the data messages arrive, and at the end the commit is verified, checked out and
 * swapped in. The stream's end is the only step that takes a while (the checkout itself).
 *
 * checkout.fetch runs in a runner (serve_jobs.c: an exec of `serve --runner`, so the fetch
 * never blocks the loop and the process holding the token holds nothing else of the
 * daemon's). The runner is sent the request and only the one `fetch` secret it names; the
 * daemon drops that secret from its store at once (a fetch secret is used once). The runner
 * takes the boot lock, fetches into the stage with the token read in place from its own
 * guarded store (never copied), checks the commit out, swaps it in, and replies.
 */
#include "json_get.h"
#include "serve_ops_checkout.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_plan.h"
#include "boot_state.h"
#include "checkout_stage.h"
#include "file.h"
#include "git_fetch.h"
#include "git_pack.h"
#include "log.h"
#include "secrets_store.h"
#include "serve_apps.h"
#include "serve_jobs.h"
#include "serve_stream.h"
#include "serve_target.h"

static const char *method_name(int method)
{
	switch (method) {
	case CHECKOUT_SWAP_FIRST:
		return "first";
	case CHECKOUT_SWAP_EXCHANGE:
		return "exchange";
	case CHECKOUT_SWAP_RENAMES:
		return "renames";
	default:
		return "?";
	}
}

/* The local ref a fetched remote ref is kept under, as git_fetch_ref names it. */
static int local_ref_of(const char *ref, char *buf, size_t len, struct err *err)
{
	int n;

	if (!ref || !ref[0]) {
		buf[0] = '\0';
		return 0;
	}
	if (strncmp(ref, "refs/", 5) != 0 || git_fetch_ref_check(ref, err) < 0)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "checkout.pack: \"ref\" must be the full name of the remote ref "
		               "(refs/heads/..., refs/tags/...)");
	if (strncmp(ref, "refs/heads/", 11) == 0)
		n = snprintf(buf, len, "refs/remotes/origin/%s", ref + 11);
	else
		n = snprintf(buf, len, "%s", ref);
	if (n < 0 || (size_t)n >= len)
		return err_set(err, ERR_REFUSED, ENAMETOOLONG,
		               "checkout.pack: the ref is too long");
	return 0;
}

/* ---- checkout.pack, in the daemon ---- */

struct pack_op {
	struct checkout_stage *stage;
	struct git_pack_receiver *recv;
	struct serve_target target;
	git_oid tip;
	char local_ref[GIT_FETCH_REF_MAX];
	bool git_held; /* a git_fetch_global_init() to pair with a shutdown */
};

static void pack_op_release(struct pack_op *op)
{
	git_pack_receiver_free(op->recv);
	op->recv = NULL;
	checkout_stage_free(op->stage);
	op->stage = NULL;
	if (op->git_held) {
		git_fetch_global_shutdown();
#ifdef __GLIBC__
		/* What libgit2 freed, back to the system (musl's malloc does so by itself). */
		malloc_trim(0);
#endif
	}
	op->git_held = false;
	serve_target_unlock(&op->target);
}

static void pack_op_free(void *data)
{
	struct pack_op *op = data;

	pack_op_release(op);
	serve_target_dispose(&op->target);
	free(op);
}

static int pack_fail(struct conn *c, struct stream *st, struct pack_op *op, struct err *err)
{
	if (op)
		pack_op_release(op);
	return serve_target_refuse(c, st, op ? &op->target : NULL, "checkout", err);
}

/* The carry-over's decisions: [{"path": "node_modules", "carried": true, "why": "..."}]. */
static void reply_add_carry(json_object *o, const struct tree_carry_report *rep)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < rep->n; i++) {
		json_object *e = json_object_new_object();
		json_object_object_add(e, "path", json_object_new_string(rep->e[i].path));
		json_object_object_add(e, "carried", json_object_new_boolean(rep->e[i].moved));
		json_object_object_add(e, "why", json_object_new_string(rep->e[i].why));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "carry_over", a);
}

static int pack_end(struct conn *c, struct stream *st, struct pack_op *op)
{
	struct git_pack_stats stats = {0};
	struct checkout_result res = {0};
	char hex[GIT_OID_HEXSZ + 1];
	git_oid commit;
	json_object *o;
	struct err err;

	err_clear(&err);
	if (git_pack_receiver_finish(op->recv, &op->tip, op->local_ref[0] ? op->local_ref : NULL,
	                             &commit, &stats, &err) < 0 ||
	    checkout_stage_checkout(op->stage, &commit, &err) < 0 ||
	    checkout_stage_swap(op->stage, &res, &err) < 0)
		return pack_fail(c, st, op, &err);
	git_oid_tostr(hex, sizeof(hex), &res.commit);
	log_info("connection %" PRIu64 ": commit %s checked out into %s (%zu objects, %zu bytes)",
	         c->id, hex, op->target.app_dir, stats.objects, stats.bytes);
	o = json_object_new_object();
	json_object_object_add(o, "commit", json_object_new_string(hex));
	json_object_object_add(o, "method", json_object_new_string("pack"));
	json_object_object_add(o, "swap", json_object_new_string(method_name(res.method)));
	json_object_object_add(o, "objects", json_object_new_int64((int64_t)stats.objects));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)stats.bytes));
	reply_add_carry(o, &res.carry);
	/*
	 * The answer first: the stage is released with the finished stream (pack_op_free), which
	 * moves the old tree into a box and removes it on a thread (dir_swap_old_discard), then
	 * frees the app's lock: the host's next request waits for neither.
	 */
	return serve_stream_ok(c, st, o);
}

static int pack_on_msg(struct conn *c, struct stream *st, const struct msg *m)
{
	struct pack_op *op = st->data;
	struct err err;

	err_clear(&err);
	if (m->type != MSG_CHECKOUT_PACK_DATA) {
		err_set(&err, ERR_REFUSED, EPROTO, "%s does not belong in a checkout.pack stream",
		        msg_type_name(m->type) ?: "an unknown message");
		return pack_fail(c, st, op, &err);
	}
	if (m->data_len && git_pack_receiver_append(op->recv, m->data, m->data_len, &err) < 0)
		return pack_fail(c, st, op, &err);
	if (m->flags & MSG_F_END)
		return pack_end(c, st, op);
	return 0;
}

static const struct stream_ops pack_ops = {
    .on_msg = pack_on_msg,
    .free = pack_op_free,
};

int serve_ops_checkout_pack(struct conn *c, struct stream *st, const struct msg *m)
{
	struct pack_op *op = calloc(1, sizeof(*op));
	struct checkout_target t = {0};
	const char *commit, *url;
	struct err err;

	err_clear(&err);
	if (!op) {
		err_oom(&err);
		return serve_stream_error(c, st, &err);
	}
	op->target.lock_fd = -1;
	st->data = op;
	st->ops = &pack_ops;
	if (serve_target_open(c->srv, m, "check out", &op->target, &err) < 0)
		return pack_fail(c, st, op, &err);
	commit = serve_stream_field_string(m, "commit", true, &err);
	if (!commit)
		return pack_fail(c, st, op, &err);
	if (git_fetch_oid_parse(&op->tip, commit) < 0) {
		err_set(&err, ERR_REFUSED, EINVAL,
		        "checkout.pack: \"commit\" must be 40 hex digits");
		return pack_fail(c, st, op, &err);
	}
	/*
	 * libgit2 only while a pack is taken in: an idle daemon holds none of it (docs/daemon.md,
	 * "Memory"). Set up before the ref is checked, which needs it too: once, not twice. The
	 * pack comes over the channel: no CA bundle.
	 */
	if (git_fetch_global_init(&(struct git_fetch_global_opts){.local_only = true}, &err) < 0)
		return pack_fail(c, st, op, &err);
	op->git_held = true;
	if (local_ref_of(msg_get_string(m, "ref"), op->local_ref, sizeof(op->local_ref), &err) < 0)
		return pack_fail(c, st, op, &err);
	url = msg_get_string(m, "clone_url");
	if (url && url[0] && git_fetch_url_check(url, false, &err) < 0)
		return pack_fail(c, st, op, &err);
	if (serve_target_lock(&op->target, &err) < 0)
		return pack_fail(c, st, op, &err);
	t.app_dir = op->target.app_dir;
	t.clone_url = url && url[0] ? url : NULL;
	serve_target_owner(c->srv, &t.uid, &t.gid);
	if (checkout_stage_begin(&t, &op->stage, &err) < 0 ||
	    git_pack_receiver_new(checkout_stage_repo(op->stage), GIT_PACK_INTO_EMPTY, &op->recv,
	                          &err) < 0)
		return pack_fail(c, st, op, &err);
	log_debug("connection %" PRIu64 ": checkout.pack of %s into %s", c->id, commit,
	          op->target.app_dir);
	if (m->data_len) {
		struct msg d = *m;
		d.type = MSG_CHECKOUT_PACK_DATA;
		return pack_on_msg(c, st, &d);
	}
	if (m->flags & MSG_F_END) {
		err_set(&err, ERR_REFUSED, EPROTO,
		        "checkout.pack: the stream ended without a pack");
		return pack_fail(c, st, op, &err);
	}
	return 0;
}

/* ---- checkout.fetch: the daemon's half ---- */

int serve_ops_checkout_fetch(struct conn *c, struct stream *st, const struct msg *m)
{
	struct serve *srv = c->srv;
	_cleanup_json_ json_object *req = json_object_new_object();
	_cleanup_(serve_target_dispose) struct serve_target target = {.lock_fd = -1};
	const char *url, *secret, *ref, *user, *app_dir, *state_dir;
	struct job *job;
	struct err err;
	uid_t uid;
	gid_t gid;
	int r;

	err_clear(&err);
	if (serve_target_open(srv, m, "check out", &target, &err) < 0)
		return serve_stream_error(c, st, &err);
	app_dir = target.app_dir;
	state_dir = target.state_dir;
	url = serve_stream_field_string(m, "clone_url", true, &err);
	secret = url ? serve_stream_field_string(m, "secret", true, &err) : NULL;
	if (!url || !secret)
		return serve_stream_error(c, st, &err);
	ref = msg_get_string(m, "ref");
	user = msg_get_string(m, "username");
	if (git_fetch_url_check(url, true, &err) < 0 ||
	    (ref && ref[0] && git_fetch_ref_check(ref, &err) < 0))
		return serve_stream_error(c, st, &err);
	if (secrets_store_scope_of(srv->secrets, secret) != SECRET_SCOPE_FETCH) {
		err_set(&err, ERR_REFUSED, ENOENT,
		        "checkout.fetch: %s is not a fetch secret: put it with secrets.put "
		        "{\"scope\": \"fetch\"} first",
		        secret);
		return serve_stream_error(c, st, &err);
	}
	serve_target_owner(srv, &uid, &gid);
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "state_dir", json_object_new_string(state_dir));
	json_object_object_add(req, "clone_url", json_object_new_string(url));
	json_object_object_add(req, "ref", json_object_new_string(ref ? ref : ""));
	json_object_object_add(
	    req, "username",
	    json_object_new_string(user && user[0] ? user : GIT_FETCH_DEFAULT_USER));
	json_object_object_add(req, "secret", json_object_new_string(secret));
	json_object_object_add(req, "uid",
	                       json_object_new_int64(uid == (uid_t)-1 ? -1 : (int64_t)uid));
	json_object_object_add(req, "gid",
	                       json_object_new_int64(gid == (gid_t)-1 ? -1 : (int64_t)gid));
	r = serve_jobs_spawn(srv, JOB_CHECKOUT, req, true, app_dir, state_dir, &job, &err);
	/* Used once: the runner has its copy (or the fetch failed to start). */
	secrets_store_drop(srv->secrets, secret);
	if (r < 0)
		return serve_stream_error(c, st, &err);
	serve_jobs_follow(job, c->id, st->id);
	log_info("connection %" PRIu64 ": checkout.fetch into %s started (runner %d)", c->id,
	         app_dir, (int)job->pid);
	return 0;
}

/* ---- checkout.fetch: the runner's half ---- */

struct fetch_run {
	json_object *req;
	const char *secret;
	bool found;
	json_object *reply;
	struct err *err;
};

static int64_t req_int(json_object *req, const char *key)
{
	json_object *v;

	if (!json_object_object_get_ex(req, key, &v))
		return -1;
	return json_object_get_int64(v);
}

/* Runs while the store has the value readable: the token is used where it is. */
static int fetch_with(void *userdata, const char *name, enum secret_scope scope,
                      const uint8_t *value, size_t len)
{
	struct fetch_run *fr = userdata;
	struct checkout_target t = {0};
	struct git_fetch_spec spec = {0};
	struct git_fetch_result fres;
	struct checkout_result res;
	char hex[GIT_OID_HEXSZ + 1];
	int64_t uid, gid;

	if (scope != SECRET_SCOPE_FETCH || strcmp(name, fr->secret) != 0 || fr->found)
		return 0;
	fr->found = true;
	uid = req_int(fr->req, "uid");
	gid = req_int(fr->req, "gid");
	t.app_dir = json_get_string(fr->req, "app_dir");
	t.clone_url = json_get_string(fr->req, "clone_url");
	t.uid = uid < 0 ? (uid_t)-1 : (uid_t)uid;
	t.gid = gid < 0 ? (gid_t)-1 : (gid_t)gid;
	spec.clone_url = t.clone_url;
	spec.ref = json_get_string(fr->req, "ref");
	spec.username = json_get_string(fr->req, "username");
	spec.token = (const char *)value;
	spec.token_len = len;
	if (!t.app_dir || !t.clone_url)
		return err_set(fr->err, ERR_REFUSED, EINVAL, "checkout.fetch: a malformed request");
	if (checkout_stage_fetch(&t, &spec, &fres, &res, fr->err) < 0)
		return -1;
	git_oid_tostr(hex, sizeof(hex), &res.commit);
	fr->reply = json_object_new_object();
	json_object_object_add(fr->reply, "commit", json_object_new_string(hex));
	json_object_object_add(fr->reply, "ref", json_object_new_string(fres.remote_ref));
	json_object_object_add(fr->reply, "method", json_object_new_string("guest-fetch"));
	json_object_object_add(fr->reply, "swap", json_object_new_string(method_name(res.method)));
	json_object_object_add(fr->reply, "objects",
	                       json_object_new_int64((int64_t)fres.received_objects));
	json_object_object_add(fr->reply, "bytes",
	                       json_object_new_int64((int64_t)fres.received_bytes));
	reply_add_carry(fr->reply, &res.carry);
	return 0;
}

int serve_ops_checkout_fetch_run(json_object *req, struct secrets_store *secrets,
                                 json_object **ret_reply, struct err *err)
{
	struct fetch_run fr = {.req = req, .err = err};
	const char *state_dir = json_get_string(req, "state_dir");
	_cleanup_close_ int lock_fd = -1;
	int r;

	fr.secret = json_get_string(req, "secret");
	if (!fr.secret || !state_dir)
		return err_set(err, ERR_REFUSED, EINVAL, "checkout.fetch: a malformed request");
	if (git_fetch_global_init(NULL, err) < 0)
		return err_ret(err);
	r = file_mkdir_p(state_dir, 0700, err);
	if (r == 0)
		r = boot_state_lock_acquire(state_dir, &lock_fd, err);
	if (r == 0)
		r = secrets_store_visit(secrets, SECRET_SCOPE_FETCH, fetch_with, &fr);
	if (r == 0 && !fr.found)
		r = err_set(err, ERR_REFUSED, ENOENT,
		            "checkout.fetch: the secret %s did not arrive", fr.secret);
	git_fetch_global_shutdown();
	if (r < 0) {
		json_object_put(fr.reply);
		return err_ret(err);
	}
	*ret_reply = fr.reply;
	return 0;
}
