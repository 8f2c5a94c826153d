/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl publish --spec FILE|- --branch NAME [--app-dir DIR] [--author "Name <email>"]
 *                     [--message M]
 *
 * Publish the work done in the sandbox as a branch (docs/protocol.md §7.9; docs/design.md,
 * "Channel"). The spec is the checkout spec {repository, ref, clone_url, username, token}, on
 * stdin or in a file only its owner can read. The push goes to the spec's clone_url, never to a
 * URL (or an insteadOf rewrite) from the checkout's .git/config, which the app can write.
 *
 * The host fetches the spec's ref into a private temporary bare repository (the token only in
 * an in-memory header), so it has the base; asks the guest for publish.commit with that
 * commit as `have`; indexes the pack the guest streams back (publish.data) into the same
 * repository; and pushes the new commit to refs/heads/NAME with the token (git_publish_push:
 * never forced, so an existing branch is only fast-forwarded). The token never enters the
 * guest; every copy this process holds is wiped when it is done.
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

#include "git_fetch.h"
#include "git_pack.h"
#include "git_publish.h"
#include "checkout_spec.h"
#include "keys.h"

#define USAGE                                                                                      \
	"publish --spec FILE|- --branch NAME [--app-dir DIR] [--author \"Name <email>\"] "         \
	"[--message M]"
#define DEFAULT_AUTHOR "Sandbox <sandbox@localhost>"

/*
 * What the guest's pack may hold (the guest is not trusted): bytes, objects, the size of one
 * object with deltas resolved (git_pack.h checks each as the bytes arrive); and the whole pack
 * must arrive within PUBLISH_PACK_DEADLINE_MS, besides each message within --timeout.
 */
#define PUBLISH_MAX_PACK_BYTES (512ULL << 20)  /* 512 MiB */
#define PUBLISH_MAX_OBJECTS 1000000ULL         /* one million */
#define PUBLISH_MAX_OBJECT_SIZE (128ULL << 20) /* 128 MiB */
#define PUBLISH_PACK_DEADLINE_MS (10 * 60 * 1000)

/* "Name <email>" into its parts, in buf. */
static int author_parse(const char *s, char *buf, size_t len, const char **ret_name,
                        const char **ret_email)
{
	char *lt, *gt, *end;

	if (strlen(s) >= len)
		return -1;
	strcpy(buf, s);
	lt = strchr(buf, '<');
	gt = lt ? strchr(lt, '>') : NULL;
	if (!lt || !gt || gt[1] != '\0' || gt == lt + 1)
		return -1;
	*gt = '\0';
	end = lt;
	while (end > buf && end[-1] == ' ')
		end--;
	*end = '\0';
	if (!buf[0])
		return -1;
	*ret_name = buf;
	*ret_email = lt + 1;
	return 0;
}

struct publish_req {
	const char *app_dir, *branch, *name, *email, *message;
};

/* Receive the pack on stream into recv, and the final ok. */
static int pack_receive(struct session *s, uint32_t stream, struct git_pack_receiver *recv,
                        json_object **ret, struct err *err)
{
	int64_t overall = frame_io_deadline(PUBLISH_PACK_DEADLINE_MS);

	for (;;) {
		int64_t deadline = frame_io_deadline(s->timeout_ms);
		bool last = overall < deadline;
		struct msg m;
		int r = connect_session_recv(s, &m, last ? overall : deadline, err);

		if (r == -ETIMEDOUT && last) {
			err_set(err, ERR_FAILED, ETIMEDOUT,
			        "the agent's pack did not arrive within %d s",
			        PUBLISH_PACK_DEADLINE_MS / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r == -ETIMEDOUT) {
			err_set(err, ERR_FAILED, ETIMEDOUT,
			        "the agent sent nothing for %d s while publishing (--timeout)",
			        s->timeout_ms / 1000);
			return CTL_EXIT_FAILED;
		}
		if (r != 1)
			return r;
		if (m.stream != stream) {
			msg_dispose(&m);
			continue;
		}
		if (m.type == MSG_PUBLISH_DATA) {
			r = m.data_len ? git_pack_receiver_append(recv, m.data, m.data_len, err)
			               : 0;
			msg_dispose(&m);
			if (r < 0)
				return output_exit_of(err);
			continue;
		}
		if (m.type == MSG_OK) {
			*ret = m.json ? json_object_get(m.json) : json_object_new_object();
			msg_dispose(&m);
			return 0;
		}
		r = connect_session_unexpected(&m, err);
		msg_dispose(&m);
		return r;
	}
}

static int reply_commit(json_object *reply, const char *key, git_oid *ret, struct err *err)
{
	json_object *v;
	const char *hex;

	if (!json_object_object_get_ex(reply, key, &v) || !(hex = json_object_get_string(v)) ||
	    strlen(hex) != GIT_OID_HEXSZ || git_oid_fromstr(ret, hex) < 0)
		return err_set(err, ERR_FAILED, EPROTO, "the agent's reply has no valid \"%s\"",
		               key);
	return 0;
}

static int publish_run(struct ctl *ctl, struct checkout_spec *sp, const struct publish_req *pr,
                       git_repository *repo, json_object **ret)
{
	struct git_fetch_spec fs = {.clone_url = sp->clone_url,
	                            .ref = sp->ref,
	                            .username = sp->username,
	                            .token = sp->token,
	                            .token_len = sp->token_len};
	struct git_publish_push_spec ps = {.clone_url = sp->clone_url,
	                                   .branch = pr->branch,
	                                   .username = sp->username,
	                                   .token = sp->token,
	                                   .token_len = sp->token_len};
	_cleanup_session_ struct session *s = NULL;
	_cleanup_git_pack_receiver_ struct git_pack_receiver *recv = NULL;
	_cleanup_json_ json_object *req = json_object_new_object();
	json_object *author = json_object_new_object(), *have = json_object_new_array();
	json_object *reply = NULL;
	struct git_fetch_result res;
	char hex[GIT_OID_HEXSZ + 1];
	git_oid commit, base;
	uint32_t stream;
	int r;

	json_object_object_add(req, "author", author);
	json_object_object_add(req, "have", have);
	output_note(&ctl->out, "fetching %s %s", sp->clone_url, sp->ref ? sp->ref : "HEAD");
	if (git_fetch_ref(repo, &fs, &res, &ctl->err) < 0) {
		ctl->err.cls = ERR_FAILED;
		return CTL_EXIT_FAILED;
	}
	r = connect_session_open(&ctl->so, &s, &ctl->err);
	if (r != 0)
		return r;
	if (!connect_session_has_capability(s, "publish")) {
		err_set(&ctl->err, ERR_REFUSED, EOPNOTSUPP, "the agent does not publish");
		return CTL_EXIT_REFUSED;
	}
	git_oid_tostr(hex, sizeof(hex), &res.commit);
	json_object_array_add(have, json_object_new_string(hex));
	json_object_object_add(req, "app_dir", json_object_new_string(pr->app_dir));
	json_object_object_add(author, "name", json_object_new_string(pr->name));
	json_object_object_add(author, "email", json_object_new_string(pr->email));
	if (pr->message)
		json_object_object_add(req, "message", json_object_new_string(pr->message));
	if (git_pack_receiver_new(repo, &recv, &ctl->err) < 0)
		return output_exit_of(&ctl->err);
	git_pack_receiver_set_limits(recv, &(struct git_pack_limits){
	                                       .max_bytes = PUBLISH_MAX_PACK_BYTES,
	                                       .max_objects = PUBLISH_MAX_OBJECTS,
	                                       .max_object_size = PUBLISH_MAX_OBJECT_SIZE,
	                                   });
	stream = connect_session_new_stream(s);
	r = connect_session_send(s, MSG_PUBLISH_COMMIT, MSG_F_END, stream, req, NULL, 0, &ctl->err);
	if (r == 0)
		r = pack_receive(s, stream, recv, &reply, &ctl->err);
	if (r == 0 && (reply_commit(reply, "commit", &commit, &ctl->err) < 0 ||
	               reply_commit(reply, "base", &base, &ctl->err) < 0 ||
	               git_pack_receiver_finish(recv, &commit, NULL, NULL, NULL, &ctl->err) < 0))
		r = CTL_EXIT_FAILED;
	if (r == 0) {
		output_note(&ctl->out, "pushing %s to branch %s of %s", git_oid_tostr_s(&commit),
		            pr->branch, sp->clone_url);
		if (git_publish_push(repo, &commit, &ps, &ctl->err) < 0) {
			ctl->err.cls = ERR_FAILED;
			r = CTL_EXIT_FAILED;
		}
	}
	if (r == 0) {
		*ret = json_object_new_object();
		json_object_object_add(*ret, "branch", json_object_new_string(pr->branch));
		json_object_object_add(*ret, "commit",
		                       json_object_new_string(git_oid_tostr_s(&commit)));
		json_object_object_add(*ret, "base",
		                       json_object_new_string(git_oid_tostr_s(&base)));
		json_object_object_add(*ret, "clone_url", json_object_new_string(sp->clone_url));
		json_object_object_add(*ret, "pushed", json_object_new_boolean(1));
	}
	json_object_put(reply);
	return r;
}

int cmd_publish(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spec", required_argument, NULL, 's'},    {"app-dir", required_argument, NULL, 'a'},
	    {"branch", required_argument, NULL, 'b'},  {"author", required_argument, NULL, 'A'},
	    {"message", required_argument, NULL, 'm'}, {0},
	};
	struct publish_req pr = {.app_dir = CTL_DEFAULT_APP_DIR};
	const char *spec_path = NULL, *author = DEFAULT_AUTHOR;
	struct git_fetch_global_opts gopts = {0};
	_cleanup_git_repository_ git_repository *repo = NULL;
	char tmpl[] = "/tmp/sandbox-ctl-publish.XXXXXX";
	char abuf[1024];
	struct checkout_spec sp = {0};
	json_object *result = NULL;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		if (c == 's')
			spec_path = optarg;
		else if (c == 'a')
			pr.app_dir = optarg;
		else if (c == 'b')
			pr.branch = optarg;
		else if (c == 'A')
			author = optarg;
		else if (c == 'm')
			pr.message = optarg;
		else
			return cmd_bad_option(ctl, USAGE, c, argv);
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	if (!spec_path)
		return cmd_usage(ctl, USAGE, "give the spec: --spec FILE, or --spec - for stdin");
	if (!pr.branch)
		return cmd_usage(ctl, USAGE, "name the branch to publish to: --branch NAME");
	if (pr.app_dir[0] != '/')
		return cmd_usage(ctl, USAGE, "--app-dir must be an absolute path in the guest");
	if (author_parse(author, abuf, sizeof(abuf), &pr.name, &pr.email) < 0)
		return cmd_usage(ctl, USAGE, "--author must be \"Name <email>\"");
	if (git_publish_branch_check(pr.branch, &ctl->err) < 0)
		return output_exit_of(&ctl->err);
	if (checkout_spec_load(spec_path, &sp, &ctl->err) < 0) {
		checkout_spec_dispose(&sp);
		return output_exit_of(&ctl->err);
	}
	if (git_fetch_global_init(&gopts, &ctl->err) < 0) {
		checkout_spec_dispose(&sp);
		return output_exit_of(&ctl->err);
	}
	if (!mkdtemp(tmpl)) { /* 0700 */
		err_errno(&ctl->err, "cannot make a private directory for the push");
		r = CTL_EXIT_FAILED;
	} else {
		r = git_fetch_repo_init(tmpl, true, &repo, &ctl->err) < 0
		        ? CTL_EXIT_FAILED
		        : publish_run(ctl, &sp, &pr, repo, &result);
		git_repository_free(TAKE_PTR(repo));
		checkout_spec_tmp_remove(tmpl);
	}
	git_fetch_global_shutdown();
	checkout_spec_dispose(&sp);
	if (r == 0)
		ctl->result = result;
	return r;
}
