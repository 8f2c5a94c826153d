/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl checkout --spec FILE|- [--app-dir DIR] [--guest-fetch]
 *
 * The spec is {repository, ref, clone_url, username, token} (docs/platform-contract.md, "Token-safe
 * checkout"), on stdin or in a file only its owner can read (0600). By default the host
 * fetches the ref into a private temporary bare repository (git_fetch_ref: the token only in
 * an in-memory header), builds the pack of the fetched commit (git_pack_write) and streams it
 * as checkout.pack (docs/protocol.md §7.8): the token never enters the guest. With
 * --guest-fetch the token is put as a `fetch` secret (its value in the data part, never in
 * JSON) and checkout.fetch has the guest fetch with it; the guest drops it afterwards.
 * Every copy of the token this process holds is wiped (sodium_memzero) when it is done.
 */
#include "cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "forge_http.h"
#include "git_fetch.h"
#include "git_pack.h"
#include "checkout_spec.h"
#include "keys.h"

#define USAGE "checkout --spec FILE|- [--app-dir DIR] [--guest-fetch]"
#define SECRET_NAME "SANDBOX_CHECKOUT_TOKEN"

/* ---- host fetch: fetch here, send the pack ---- */

struct pack_send {
	struct session *s;
	uint32_t stream;
	uint8_t *buf;
	size_t len, cap;
	struct err *err;
};

static int pack_flush(struct pack_send *ps, bool end)
{
	int r = connect_session_send(ps->s, MSG_CHECKOUT_PACK_DATA, end ? MSG_F_END : 0, ps->stream,
	                             NULL, ps->buf, ps->len, ps->err);
	ps->len = 0;
	return r;
}

static int pack_sink(void *userdata, const void *buf, size_t len)
{
	struct pack_send *ps = userdata;
	const uint8_t *p = buf;

	while (len > 0) {
		size_t n = ps->cap - ps->len < len ? ps->cap - ps->len : len;
		memcpy(ps->buf + ps->len, p, n);
		ps->len += n;
		p += n;
		len -= n;
		if (ps->len == ps->cap && pack_flush(ps, false) != 0)
			return -1;
	}
	return 0;
}

/* Wait for the stream's final reply. */
static int reply_wait(struct session *s, uint32_t stream, json_object **ret, struct err *err)
{
	int64_t deadline = frame_io_deadline(s->timeout_ms);

	for (;;) {
		struct msg m;
		int r = connect_session_recv(s, &m, deadline, err);

		if (r == -ETIMEDOUT) {
			err_set(err, ERR_FAILED, ETIMEDOUT,
			        "the agent did not confirm the checkout within %d s (--timeout)",
			        s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r != 1)
			return r;
		if (m.stream == stream && m.type == MSG_OK) {
			*ret = m.json ? json_object_get(m.json) : json_object_new_object();
			msg_dispose(&m);
			return 0;
		}
		if (m.stream == stream && (m.type == MSG_ERROR || (m.flags & MSG_F_END))) {
			r = connect_session_unexpected(&m, err);
			msg_dispose(&m);
			return r;
		}
		msg_dispose(&m);
	}
}

/* A fetch that failed: exit 1 (the token or the ref is wrong), with git_fetch_ref's words. */
static int fetch_failed(struct err *err)
{
	err->cls = ERR_FAILED;
	return CTL_EXIT_FAILED;
}

static int host_fetch(struct ctl *ctl, struct checkout_spec *sp, const char *app_dir,
                      struct session **sp_out, json_object **ret)
{
	struct git_fetch_spec fs = {.clone_url = sp->clone_url,
	                            .ref = sp->ref,
	                            .username = sp->username,
	                            .token = sp->token,
	                            .token_len = sp->token_len};
	_cleanup_git_repository_ git_repository *repo = NULL;
	_cleanup_json_ json_object *begin = json_object_new_object();
	struct session *s = NULL;
	char tmpl[] = "/tmp/sandbox-ctl-checkout.XXXXXX";
	struct git_fetch_result res;
	struct pack_send ps = {0};
	char hex[GIT_OID_HEXSZ + 1];
	int r;

	if (!mkdtemp(tmpl)) { /* 0700 */
		err_errno(&ctl->err, "cannot make a private directory for the fetch");
		return CTL_EXIT_FAILED;
	}
	r = git_fetch_repo_init(tmpl, true, &repo, &ctl->err);
	if (r == 0) {
		output_note(&ctl->out, "fetching %s %s", sp->clone_url, sp->ref ? sp->ref : "HEAD");
		r = git_fetch_ref(repo, &fs, &res, &ctl->err);
		/* The token is not needed any more: wipe it now. */
		sodium_memzero((char *)sp->token, sp->token_len);
		if (r < 0)
			r = fetch_failed(&ctl->err);
	}
	if (r == 0)
		r = connect_session_open(&ctl->so, sp_out, &ctl->err);
	s = *sp_out;
	if (r == 0 && !connect_session_has_capability(s, "checkout")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not take checkouts");
		r = CTL_EXIT_REFUSED;
	}
	if (r == 0) {
		git_oid_tostr(hex, sizeof(hex), &res.tip);
		json_object_object_add(begin, "app_dir", json_object_new_string(app_dir));
		json_object_object_add(begin, "commit", json_object_new_string(hex));
		json_object_object_add(begin, "clone_url", json_object_new_string(sp->clone_url));
		json_object_object_add(begin, "ref", json_object_new_string(res.remote_ref));
		ps = (struct pack_send){
		    .s = s, .stream = connect_session_new_stream(s), .err = &ctl->err};
		ps.cap = 60 * 1024;
		ps.buf = malloc(ps.cap);
		r = ps.buf ? connect_session_send(s, MSG_CHECKOUT_PACK, 0, ps.stream, begin, NULL,
		                                  0, &ctl->err)
		           : err_oom(&ctl->err);
	}
	if (r == 0 && git_pack_write(repo, &res.tip, NULL, 0, pack_sink, &ps, NULL, &ctl->err) < 0)
		r = output_exit_of(&ctl->err);
	if (r == 0)
		r = pack_flush(&ps, true);
	free(ps.buf);
	/* The pack is sent: the private repository goes while the agent applies it. */
	git_repository_free(TAKE_PTR(repo));
	checkout_spec_tmp_remove(tmpl);
	if (r == 0)
		r = reply_wait(s, ps.stream, ret, &ctl->err);
	return r;
}

/* ---- guest fetch: the token as a fetch secret, checkout.fetch ---- */

static int guest_fetch(struct ctl *ctl, struct checkout_spec *sp, const char *app_dir,
                       struct session **sp_out, json_object **ret)
{
	_cleanup_json_ json_object *put = json_object_new_object();
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object *reply = NULL;
	struct session *s;
	int r;

	if (!sp->token) {
		err_set(&ctl->err, ERR_REFUSED, EINVAL,
		        "--guest-fetch needs the token in the spec");
		return CTL_EXIT_REFUSED;
	}
	r = connect_session_open(&ctl->so, sp_out, &ctl->err);
	s = *sp_out;
	if (r == 0 && (!connect_session_has_capability(s, "checkout") ||
	               !connect_session_has_capability(s, "secrets"))) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not take checkouts");
		r = CTL_EXIT_REFUSED;
	}
	if (r != 0)
		return r;
	json_object_object_add(put, "name", json_object_new_string(SECRET_NAME));
	json_object_object_add(put, "scope", json_object_new_string("fetch"));
	r = connect_session_request(s, MSG_SECRETS_PUT, put, sp->token, sp->token_len, &reply,
	                            &ctl->err);
	sodium_memzero((char *)sp->token, sp->token_len);
	json_object_put(reply);
	if (r != 0)
		return r;
	json_object_object_add(req, "app_dir", json_object_new_string(app_dir));
	json_object_object_add(req, "clone_url", json_object_new_string(sp->clone_url));
	json_object_object_add(req, "ref", json_object_new_string(sp->ref ? sp->ref : ""));
	json_object_object_add(
	    req, "username",
	    json_object_new_string(sp->username ? sp->username : GIT_FETCH_DEFAULT_USER));
	json_object_object_add(req, "secret", json_object_new_string(SECRET_NAME));
	output_note(&ctl->out, "the guest fetches %s %s", sp->clone_url,
	            sp->ref ? sp->ref : "HEAD");
	r = connect_session_request(s, MSG_CHECKOUT_FETCH, req, NULL, 0, ret, &ctl->err);
	if (r != 0 && ctl->err.code == EACCES)
		return fetch_failed(&ctl->err);
	return r;
}

int cmd_checkout_run(struct ctl *ctl, const char *spec_path, const char *app_dir, bool guest,
                     struct session **ret_session, struct json_object **ret)
{
	struct git_fetch_global_opts gopts = {0};
	struct checkout_spec sp = {0};
	json_object *reply = NULL;
	int r;

	/* libgit2 before the spec, whose ref it checks: one initialization (a CA bundle parsed). */
	if (!guest && git_fetch_global_init(&gopts, &ctl->err) < 0)
		return output_exit_of(&ctl->err);
	if (checkout_spec_load(spec_path, &sp, &ctl->err) < 0)
		r = output_exit_of(&ctl->err);
	else if (guest)
		r = guest_fetch(ctl, &sp, app_dir, ret_session, &reply);
	else
		r = host_fetch(ctl, &sp, app_dir, ret_session, &reply);
	if (!guest)
		git_fetch_global_shutdown();
	forge_http_global_shutdown(); /* the spec's api_url check may have set libcurl up */
	if (r == 0) {
		json_object *out = json_object_new_object();
		json_object *v;

		json_object_object_add(
		    out, "commit",
		    json_object_object_get_ex(reply, "commit", &v) ? json_object_get(v) : NULL);
		json_object_object_add(out, "ref", json_object_new_string(sp.ref ? sp.ref : ""));
		json_object_object_add(
		    out, "method", json_object_new_string(guest ? "guest-fetch" : "host-fetch"));
		json_object_object_add(out, "app_dir", json_object_new_string(app_dir));
		json_object_object_add(out, "agent", reply);
		*ret = out;
	} else {
		json_object_put(reply);
	}
	checkout_spec_dispose(&sp);
	return r;
}

int cmd_checkout(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spec", required_argument, NULL, 's'},
	    {"app-dir", required_argument, NULL, 'a'},
	    {"guest-fetch", no_argument, NULL, 'g'},
	    {0},
	};
	_cleanup_session_ struct session *s = NULL;
	const char *spec_path = NULL, *app_dir = CTL_DEFAULT_APP_DIR;
	bool guest = false;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 's')
			spec_path = optarg;
		else if (c == 'a')
			app_dir = optarg;
		else if (c == 'g')
			guest = true;
		else
			return cmd_bad_option(ctl, USAGE, c, argv);
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (!spec_path)
		return cmd_usage(ctl, USAGE, "give the spec: --spec FILE, or --spec - for stdin");
	if (app_dir[0] != '/')
		return cmd_usage(ctl, USAGE, "--app-dir must be an absolute path in the guest");
	return cmd_checkout_run(ctl, spec_path, app_dir, guest, &s, &ctl->result);
}
