/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl publish --spec FILE|- --branch NAME [--app-dir DIR] [--author "Name <email>"]
 *                     [--message M] [--pull-request [--title T] [--body-file F]
 *                     [--base BRANCH] [--draft]]
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
 *
 * With --pull-request the host then opens a pull request from the branch through the forge's
 * REST API (github_pulls.c; docs/forge.md) with the same token, the spec's repository
 * (OWNER/NAME) and api_url. Its options are checked before anything is pushed.
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
#include "file.h"
#include "forge_http.h"
#include "github_pulls.h"
#include "keys.h"

#define USAGE                                                                                      \
	"publish --spec FILE|- --branch NAME [--app-dir DIR] [--author \"Name <email>\"] "         \
	"[--message M] [--pull-request [--title T] [--body-file F] [--base BRANCH] [--draft]]"
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
	bool pull_request, draft;
	const char *title, *base; /* NULL: the message's first line; the fetched branch */
	char *body;               /* --body-file's text, or NULL */
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
	    git_fetch_oid_parse(ret, hex) < 0)
		return err_set(err, ERR_FAILED, EPROTO, "the agent's reply has no valid \"%s\"",
		               key);
	return 0;
}

/* What --pull-request needs of the spec, checked before anything is pushed; sets up libcurl. */
static int pull_request_check(const struct checkout_spec *sp, struct err *err)
{
	if (github_pulls_repository_check(sp->repository, err) < 0)
		return err_wrap(err, "--pull-request");
	if (sp->token_len == 0)
		return err_set(err, ERR_REFUSED, EINVAL,
		               "--pull-request needs the spec's token: the forge's API opens no "
		               "pull request without one");
	return forge_http_global_init(err);
}

/* The title: --title, else the first line of --message, else one naming the branch. */
static void pull_request_title(const struct publish_req *pr, char *buf, size_t len)
{
	if (pr->title)
		snprintf(buf, len, "%s", pr->title);
	else if (pr->message && strcspn(pr->message, "\n") > 0)
		snprintf(buf, len, "%.*s", (int)strcspn(pr->message, "\n"), pr->message);
	else
		snprintf(buf, len, "Work from the sandbox (%s)", pr->branch);
	/* A line cut at the limit ends on a whole UTF-8 character. */
	if (strlen(buf) == len - 1) {
		size_t i = len - 2, need;
		while (i > 0 && ((unsigned char)buf[i] & 0xc0) == 0x80)
			i--;
		need = (unsigned char)buf[i] >= 0xf0   ? 4
		       : (unsigned char)buf[i] >= 0xe0 ? 3
		       : (unsigned char)buf[i] >= 0xc0 ? 2
		                                       : 1;
		if (i + need > len - 1)
			buf[i] = '\0';
	}
}

/*
 * Open the pull request after the push; its answer (or the open one that exists) goes into
 * doc as "pull_request". A refusal leaves the error in doc too: the push did happen.
 */
static int pull_request_open(struct ctl *ctl, const struct checkout_spec *sp,
                             const struct publish_req *pr, const struct git_fetch_result *res,
                             json_object *doc)
{
	char title[GITHUB_PULLS_TITLE_MAX + 1];
	const char *heads = "refs/heads/";
	struct github_pulls_req req = {
	    .api_url = sp->api_url,
	    .repository = sp->repository,
	    .head = pr->branch,
	    .base = pr->base,
	    .title = title,
	    .body = pr->body,
	    .draft = pr->draft,
	    .token = sp->token,
	    .token_len = sp->token_len,
	    .timeout_ms = ctl->so.timeout_ms,
	};
	json_object *result = NULL, *e, *inner;
	int r;

	pull_request_title(pr, title, sizeof(title));
	/* The base: --base, else the branch the spec's ref fetched, else the default branch. */
	if (!req.base && res->kind == GIT_FETCH_BRANCH &&
	    strncmp(res->remote_ref, heads, strlen(heads)) == 0)
		req.base = res->remote_ref + strlen(heads);
	output_note(&ctl->out, "opening a pull request from %s%s%s in %s", pr->branch,
	            req.base ? " into " : "", req.base ? req.base : "", sp->repository);
	r = github_pulls_open(&req, &result, &ctl->err);
	json_object_object_add(doc, "pull_request", result);
	if (r == 0)
		return 0;
	r = output_exit_of(&ctl->err);
	e = output_error_doc(&ctl->err);
	if (e && json_object_object_get_ex(e, "error", &inner)) {
		json_object_object_add(inner, "reason",
		                       json_object_new_string(cmd_reason_of(r, &ctl->err)));
		json_object_object_add(doc, "error", json_object_get(inner));
	}
	json_object_put(e);
	return r;
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
	if (git_pack_receiver_new(repo, 0, &recv, &ctl->err) < 0)
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
	if (r == 0 && pr->pull_request)
		r = pull_request_open(ctl, sp, pr, &res, *ret);
	return r;
}

int cmd_publish(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"spec", required_argument, NULL, 's'},
	    {"app-dir", required_argument, NULL, 'a'},
	    {"branch", required_argument, NULL, 'b'},
	    {"author", required_argument, NULL, 'A'},
	    {"message", required_argument, NULL, 'm'},
	    {"pull-request", no_argument, NULL, 'P'},
	    {"title", required_argument, NULL, 't'},
	    {"body-file", required_argument, NULL, 'F'},
	    {"base", required_argument, NULL, 'B'},
	    {"draft", no_argument, NULL, 'D'},
	    {0},
	};
	const char *body_file = NULL;
	size_t body_len = 0;
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
		else if (c == 'P')
			pr.pull_request = true;
		else if (c == 't')
			pr.title = optarg;
		else if (c == 'F')
			body_file = optarg;
		else if (c == 'B')
			pr.base = optarg;
		else if (c == 'D')
			pr.draft = true;
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
	if (!pr.pull_request && (pr.title || body_file || pr.base || pr.draft))
		return cmd_usage(
		    ctl, USAGE,
		    "--title, --body-file, --base and --draft describe a pull request: "
		    "add --pull-request");
	if (pr.title && (strlen(pr.title) > GITHUB_PULLS_TITLE_MAX || !pr.title[0]))
		return cmd_usage(ctl, USAGE, "--title must be 1 to %d bytes",
		                 GITHUB_PULLS_TITLE_MAX);
	if (pr.base && git_publish_branch_check(pr.base, &ctl->err) < 0) {
		err_wrap(&ctl->err, "--base");
		return output_exit_of(&ctl->err);
	}
	if (body_file && file_read_capped(AT_FDCWD, body_file, GITHUB_PULLS_BODY_MAX, 0, &pr.body,
	                                  &body_len, &ctl->err) < 0) {
		err_wrap(&ctl->err, "--body-file %s", body_file);
		return output_exit_of(&ctl->err);
	}
	/*
	 * libgit2 set up between the spec's two halves: the ref's check would set it up a second
	 * time, and Debian's libgit2 parses its whole CA bundle at every set-up (7-9 ms).
	 */
	if (checkout_spec_read(spec_path, &sp, &ctl->err) < 0 ||
	    git_fetch_global_init(&gopts, &ctl->err) < 0) {
		checkout_spec_dispose(&sp);
		free(pr.body);
		return output_exit_of(&ctl->err);
	}
	if (checkout_spec_check(&sp, &ctl->err) < 0 ||
	    (pr.pull_request && pull_request_check(&sp, &ctl->err) < 0)) {
		git_fetch_global_shutdown();
		forge_http_global_shutdown(); /* the api_url's check may have set libcurl up */
		checkout_spec_dispose(&sp);
		free(pr.body);
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
	forge_http_global_shutdown();
	checkout_spec_dispose(&sp);
	free(pr.body);
	/* A failed pull request after a push still tells what was pushed. */
	if (r == 0 || (result && json_object_object_get_ex(result, "error", NULL)))
		ctl->result = result;
	else
		json_object_put(result);
	return r;
}
