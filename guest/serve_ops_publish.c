/* SPDX-License-Identifier: Apache-2.0 */
/*
 * publish.commit (docs/protocol.md §7.9): commit the work tree of an app directory and send
 * the commit to the host as a pack; the host pushes it (decisions.md, "Channel": the guest
 * never pushes and never sees the push token).
 *
 * It runs in the daemon, as checkout.pack does, holding the app's boot lock so no checkout is
 * swapped in meanwhile: git_publish_open() opens the checkout without trusting its .git (see
 * git_publish.h), git_publish_commit() writes the commit into memory only (nothing in the
 * checkout changes: not HEAD, not the index, not .git/objects), and git_pack_write() streams
 * everything the commit needs that is not reachable from the checkout's base (HEAD) or from
 * the commits the host says it has, as publish.data messages, then `ok`.
 */
#include "serve_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "boot_state.h"
#include "fileio.h"
#include "git_fetch.h"
#include "git_pack.h"
#include "git_publish.h"
#include "log.h"

#define PUBLISH_HAVE_MAX 16
#define PUBLISH_CHUNK (60 * 1024)

struct publish_send {
	struct conn *c;
	uint32_t stream;
	uint8_t buf[PUBLISH_CHUNK];
	size_t len;
};

static int publish_flush(struct publish_send *ps)
{
	int r = 0;

	if (ps->len)
		r = conn_send(ps->c, MSG_PUBLISH_DATA, 0, ps->stream, NULL, ps->buf, ps->len);
	ps->len = 0;
	return r;
}

static int publish_sink(void *userdata, const void *buf, size_t len)
{
	struct publish_send *ps = userdata;
	const uint8_t *p = buf;

	while (len > 0) {
		size_t n = PUBLISH_CHUNK - ps->len < len ? PUBLISH_CHUNK - ps->len : len;

		memcpy(ps->buf + ps->len, p, n);
		ps->len += n;
		p += n;
		len -= n;
		if (ps->len == PUBLISH_CHUNK && publish_flush(ps) < 0)
			return -1;
	}
	return 0;
}

/* author {"name", "email"} (required), "have" [hex, ...] (optional). */
static int publish_request(const struct msg *m, const char **ret_name, const char **ret_email,
                           git_oid *have, size_t *n_have, struct err *err)
{
	json_object *a, *v, *h;

	*ret_name = *ret_email = NULL;
	if (m->json && json_object_object_get_ex(m->json, "author", &a) &&
	    json_object_is_type(a, json_type_object)) {
		if (json_object_object_get_ex(a, "name", &v) &&
		    json_object_is_type(v, json_type_string))
			*ret_name = json_object_get_string(v);
		if (json_object_object_get_ex(a, "email", &v) &&
		    json_object_is_type(v, json_type_string))
			*ret_email = json_object_get_string(v);
	}
	if (!*ret_name || !*ret_email)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "publish.commit: \"author\" must be {\"name\", \"email\"}");
	*n_have = 0;
	if (!m->json || !json_object_object_get_ex(m->json, "have", &h))
		return 0;
	if (!json_object_is_type(h, json_type_array) ||
	    json_object_array_length(h) > PUBLISH_HAVE_MAX - 1)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "publish.commit: \"have\" must be a list of at most %d commit ids",
		               PUBLISH_HAVE_MAX - 1);
	for (size_t i = 0; i < json_object_array_length(h); i++) {
		const char *s = json_object_get_string(json_object_array_get_idx(h, i));

		if (!s || strlen(s) != GIT_OID_HEXSZ || git_oid_fromstr(&have[*n_have], s) < 0)
			return err_set(err, ERR_REFUSED, EINVAL,
			               "publish.commit: \"have\" holds something that is not a "
			               "40-digit commit id");
		(*n_have)++;
	}
	return 0;
}

static int publish_run(struct conn *c, struct stream *st, const struct msg *m, const char *app_dir,
                       json_object **ret, struct err *err)
{
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_free_ struct publish_send *ps = NULL;
	git_oid have[PUBLISH_HAVE_MAX], base, commit;
	struct git_pack_stats stats = {0};
	const char *name, *email;
	char hex[GIT_OID_HEXSZ + 1];
	size_t n_have = 0;

	if (publish_request(m, &name, &email, have, &n_have, err) < 0 ||
	    git_publish_open(app_dir, &repo, err) < 0 ||
	    git_publish_commit(repo, name, email, msg_get_string(m, "message"), &base, &commit,
	                       err) < 0)
		return err_ret(err);
	have[n_have++] = base;
	ps = calloc(1, sizeof(*ps));
	if (!ps)
		return err_set(err, ERR_FAILED, ENOMEM, "out of memory");
	ps->c = c;
	ps->stream = st->id;
	if (git_pack_write(repo, &commit, have, n_have, publish_sink, ps, &stats, err) < 0)
		return err_wrap(err, "sending the commit of %s", app_dir);
	if (publish_flush(ps) < 0)
		return err_set(err, ERR_FAILED, EPIPE, "the connection failed while sending");
	*ret = json_object_new_object();
	git_oid_tostr(hex, sizeof(hex), &commit);
	json_object_object_add(*ret, "commit", json_object_new_string(hex));
	git_oid_tostr(hex, sizeof(hex), &base);
	json_object_object_add(*ret, "base", json_object_new_string(hex));
	json_object_object_add(*ret, "objects", json_object_new_int64((int64_t)stats.objects));
	json_object_object_add(*ret, "bytes", json_object_new_int64((int64_t)stats.bytes));
	log_info("connection %" PRIu64 ": published %s of %s on %s (%zu objects, %zu bytes)", c->id,
	         json_object_get_string(json_object_object_get(*ret, "commit")), app_dir,
	         json_object_get_string(json_object_object_get(*ret, "base")), stats.objects,
	         stats.bytes);
	return 0;
}

int op_publish_commit(struct conn *c, struct stream *st, const struct msg *m)
{
	_cleanup_free_ char *app_dir = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_close_ int lock_fd = -1;
	json_object *reply = NULL;
	const char *dir;
	struct err err;

	err_clear(&err);
	dir = op_field_string(m, "app_dir", true, &err);
	if (!dir || apps_normalize(dir, &app_dir, &err) < 0 ||
	    apps_state_dir(c->srv, app_dir, &state_dir, &err) < 0)
		return stream_error(c, st, &err);
	if (job_find(c->srv, JOB_BOOT, state_dir) || job_find(c->srv, JOB_CHECKOUT, state_dir)) {
		err_set(&err, ERR_REFUSED, EBUSY,
		        "a boot or checkout of %s is in progress: publish when it has finished",
		        app_dir);
		return stream_error(c, st, &err);
	}
	if (mkdir_p(state_dir, 0700, &err) < 0 || boot_lock_acquire(state_dir, &lock_fd, &err) < 0)
		return stream_error(c, st, &err);
	if (publish_run(c, st, m, app_dir, &reply, &err) < 0) {
		log_info("connection %" PRIu64 ": publishing %s refused: %s", c->id, app_dir,
		         err.msg);
		return stream_error(c, st, &err);
	}
	return stream_ok(c, st, reply);
}
