/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl github-token --app-id N --private-key FILE --installation N
 *                          --repository OWNER/NAME [--permissions contents:read,...]
 *                          [--api-url URL] [--clone-url URL] [--ref REF]
 *
 * A short-lived token for one repository (docs/forge.md, "Tokens"): the app's JWT
 * (github_app.c) buys an installation token limited to NAME and to the permissions asked
 * (github_token.c), read only unless write is asked for (`contents:write,pull_requests:write`
 * for publish --pull-request). Printed as the checkout spec `checkout` and `publish` read on
 * stdin: {repository, clone_url, username, token, expires_at, permissions, api_url[, ref]}.
 * The key never leaves guarded memory; the token is only in that document, whose every copy
 * here is wiped once it is printed. Nothing secret is taken from argv.
 */
#include "cmd.h"

#include <errno.h>
#include <getopt.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "checkout_spec.h"
#include "forge_http.h"
#include "forge_reply.h"
#include "git_fetch.h"
#include "github_app.h"
#include "github_pulls.h"
#include "github_token.h"

#define USAGE                                                                                      \
	"github-token --app-id N --private-key FILE --installation N --repository OWNER/NAME "     \
	"[--permissions contents:read,...] [--api-url URL] [--clone-url URL] [--ref REF]"
#define ENTERPRISE_SUFFIX "/api/v3"

struct token_opts {
	const char *app_id, *key_path, *installation, *repository, *permissions, *api_url,
	    *clone_url, *ref;
};

/*
 * The clone URL: --clone-url; for GitHub https://github.com/OWNER/NAME.git; for GitHub
 * Enterprise (https://HOST/api/v3) https://HOST/OWNER/NAME.git. Else it must be given.
 */
static int clone_url_of(const struct token_opts *o, char *buf, size_t len, struct err *err)
{
	size_t n = strlen(o->api_url), s = strlen(ENTERPRISE_SUFFIX);

	while (n && o->api_url[n - 1] == '/')
		n--;
	if (o->clone_url)
		snprintf(buf, len, "%s", o->clone_url);
	else if (n == strlen(FORGE_HTTP_DEFAULT_API) &&
	         strncmp(o->api_url, FORGE_HTTP_DEFAULT_API, n) == 0)
		snprintf(buf, len, "https://github.com/%s.git", o->repository);
	else if (n > s && strncmp(o->api_url + n - s, ENTERPRISE_SUFFIX, s) == 0)
		snprintf(buf, len, "%.*s/%s.git", (int)(n - s), o->api_url, o->repository);
	else
		return err_set(err, ERR_REFUSED, EINVAL,
		               "--api-url %s is neither GitHub's nor GitHub Enterprise's "
		               "(https://HOST/api/v3): give --clone-url too",
		               o->api_url);
	return git_fetch_url_check(buf, true, err);
}

static int options_check(struct ctl *ctl, const struct token_opts *o)
{
	if (!o->app_id || !o->key_path || !o->installation || !o->repository)
		return cmd_usage(ctl, USAGE,
		                 "give --app-id, --private-key, --installation and --repository");
	if (github_app_id_check(o->app_id, &ctl->err) < 0 ||
	    github_pulls_repository_check(o->repository, &ctl->err) < 0 ||
	    forge_http_api_url_check(o->api_url, &ctl->err) < 0 ||
	    (o->ref && git_fetch_ref_check(o->ref, &ctl->err) < 0))
		return output_exit_of(&ctl->err); /* refused; failed when libcurl did not load */
	if (!o->installation[0] || strlen(o->installation) > 20 ||
	    strspn(o->installation, "0123456789") != strlen(o->installation))
		return cmd_usage(
		    ctl, USAGE,
		    "--installation wants the installation's number (digits), not '%.40s'",
		    o->installation);
	return 0;
}

/* The spec printed: the answer's token and expiry with where it applies. */
static json_object *spec_doc(const struct token_opts *o, const char *clone_url, json_object *answer)
{
	json_object *doc = json_object_new_object(), *perms;

	json_object_object_add(doc, "repository", json_object_new_string(o->repository));
	if (o->ref)
		json_object_object_add(doc, "ref", json_object_new_string(o->ref));
	json_object_object_add(doc, "clone_url", json_object_new_string(clone_url));
	json_object_object_add(doc, "username", json_object_new_string(GIT_FETCH_DEFAULT_USER));
	json_object_object_add(doc, "token",
	                       json_object_new_string(forge_reply_string(answer, "token")));
	json_object_object_add(doc, "expires_at",
	                       json_object_new_string(forge_reply_string(answer, "expires_at")));
	if (json_object_object_get_ex(answer, "permissions", &perms))
		json_object_object_add(doc, "permissions", json_object_get(perms));
	json_object_object_add(doc, "api_url", json_object_new_string(o->api_url));
	return doc;
}

static int token_run(struct ctl *ctl, const struct token_opts *o, json_object *perms,
                     const char *clone_url)
{
	struct github_token_req req = {.api_url = o->api_url,
	                               .installation = o->installation,
	                               .repository = o->repository,
	                               .permissions = perms,
	                               .timeout_ms = ctl->so.timeout_ms};
	char *key = NULL, *jwt = NULL;
	json_object *answer = NULL, *doc;
	size_t key_len = 0;
	int r;

	r = checkout_spec_read_private(o->key_path, GITHUB_APP_KEY_MAX, "app's private key", &key,
	                               &key_len, &ctl->err);
	if (r == 0)
		r = github_app_jwt(o->app_id, key, key_len, (int64_t)time(NULL), &jwt, &req.jwt_len,
		                   &ctl->err);
	if (key)
		sodium_free(key);
	if (r < 0)
		return output_exit_of(&ctl->err);
	req.jwt = jwt;
	output_note(&ctl->out, "asking %s for a token for %s (%s)", o->api_url, o->repository,
	            o->permissions);
	r = github_token_request(&req, &answer, &ctl->err);
	sodium_free(jwt);
	if (r < 0)
		return output_exit_of(&ctl->err);
	output_note(&ctl->out, "a token for %s, expires at %s", o->repository,
	            forge_reply_string(answer, "expires_at"));
	doc = spec_doc(o, clone_url, answer);
	output_json(&ctl->out, doc);
	github_token_dispose(doc);
	github_token_dispose(answer);
	return 0;
}

int cmd_github_token(struct ctl *ctl, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"app-id", required_argument, NULL, 'a'},
	    {"private-key", required_argument, NULL, 'k'},
	    {"installation", required_argument, NULL, 'i'},
	    {"repository", required_argument, NULL, 'r'},
	    {"permissions", required_argument, NULL, 'p'},
	    {"api-url", required_argument, NULL, 'u'},
	    {"clone-url", required_argument, NULL, 'c'},
	    {"ref", required_argument, NULL, 'R'},
	    {0},
	};
	struct token_opts o = {.permissions = GITHUB_TOKEN_DEFAULT_PERMISSIONS,
	                       .api_url = FORGE_HTTP_DEFAULT_API};
	_cleanup_json_ json_object *perms = NULL;
	char clone_url[FORGE_HTTP_URL_MAX];
	bool writes;
	int c, r;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":", opts, NULL)) != -1) {
		const char **slot = c == 'a'   ? &o.app_id
		                    : c == 'k' ? &o.key_path
		                    : c == 'i' ? &o.installation
		                    : c == 'r' ? &o.repository
		                    : c == 'p' ? &o.permissions
		                    : c == 'u' ? &o.api_url
		                    : c == 'c' ? &o.clone_url
		                    : c == 'R' ? &o.ref
		                               : NULL;
		if (!slot)
			return cmd_bad_option(ctl, USAGE, c, argv);
		*slot = optarg;
	}
	if (optind != argc)
		return cmd_usage(ctl, USAGE, "unexpected argument '%s'", argv[optind]);
	r = options_check(ctl, &o);
	if (r != 0)
		return r;
	if (github_token_permissions_parse(o.permissions, &perms, &writes, &ctl->err) < 0 ||
	    clone_url_of(&o, clone_url, sizeof(clone_url), &ctl->err) < 0)
		return CTL_EXIT_REFUSED;
	if (writes)
		output_note(&ctl->out,
		            "write permission asked for (%s): give this token to publish "
		            "only, a checkout needs contents:read",
		            o.permissions);
	if (forge_http_global_init(&ctl->err) < 0)
		return output_exit_of(&ctl->err);
	r = token_run(ctl, &o, perms, clone_url);
	forge_http_global_shutdown();
	return r;
}
