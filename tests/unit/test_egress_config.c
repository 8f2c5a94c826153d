/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The egress proxy: its URL checked through libcurl, the three sources resolved (the spec's
 * proxy first, then the daemon's, then sandbox.yml's; `required` from any), the proxy variables
 * of the app's environment, sandbox.yml's and the spec's `egress`.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "boot_spec.h"
#include "cleanup.h"
#include "egress_config.h"
#include "sandbox_config.h"
#include "session_env.h"
#include "strv.h"

static void proxy_ok(const char *url, const char *host, unsigned port)
{
	_cleanup_free_ char *h = NULL;
	unsigned p = 0;
	struct err e;

	ck_assert_msg(egress_config_check_proxy(url, &h, &p, &e) == 0, "%s: %s", url, e.msg);
	ck_assert_str_eq(h, host);
	ck_assert_uint_eq(p, port);
}

static void proxy_refused(const char *url, const char *why)
{
	_cleanup_free_ char *h = NULL;
	unsigned p = 0;
	struct err e;

	ck_assert_msg(egress_config_check_proxy(url, &h, &p, &e) < 0, "%s was accepted", url);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_msg(strstr(e.msg, why), "%s: %s", url, e.msg);
}

START_TEST(test_proxy_urls)
{
	proxy_ok("http://10.0.0.1:3128", "10.0.0.1", 3128);
	proxy_ok("http://10.0.0.1:3128/", "10.0.0.1", 3128);
	proxy_ok("http://proxy.internal:8080", "proxy.internal", 8080);
	proxy_ok("http://[fd00::1]:3128", "fd00::1", 3128);
	proxy_ok("http://10.0.0.1", "10.0.0.1", 80);
	proxy_ok("https://10.0.0.1", "10.0.0.1", 443);
	proxy_refused("ftp://10.0.0.1", "the scheme must be http or https");
	proxy_refused("http://user:pw@10.0.0.1:3128", "user or password");
	proxy_refused("http://10.0.0.1:3128/path", "path, query or fragment");
	proxy_refused("http://10.0.0.1:3128/?q=1", "path, query or fragment");
	proxy_refused("", "empty or too long");
	proxy_refused("not a url", "`proxy` must be a URL like http://10.0.0.1:3128");
}
END_TEST

START_TEST(test_resolve)
{
	struct egress_request spec = {.proxy = "http://10.0.0.1:3128"};
	struct egress_request file = {.proxy = "http://10.9.9.9:1", .required = true};
	char *daemon[] = {"SANDBOX_AGENT_EGRESS_PROXY=http://10.0.0.2:3128",
	                  "SANDBOX_AGENT_NFT=/opt/nft", NULL};
	char *required[] = {"SANDBOX_AGENT_EGRESS_REQUIRED=1", NULL};
	struct boot_egress g;
	struct err e;

	ck_assert_int_eq(egress_config_resolve(&spec, &file, daemon, &g, &e), 0);
	ck_assert_str_eq(g.proxy, "http://10.0.0.1:3128");
	ck_assert(g.required);
	ck_assert_str_eq(g.nft, "/opt/nft");
	egress_config_dispose(&g);
	ck_assert_int_eq(egress_config_resolve(NULL, &file, daemon, &g, &e), 0);
	ck_assert_str_eq(g.proxy, "http://10.0.0.2:3128");
	ck_assert_str_eq(g.host, "10.0.0.2");
	ck_assert_uint_eq(g.port, 3128);
	egress_config_dispose(&g);
	/* A checkout's own proxy is never taken: alone, it leaves no proxy at all. */
	file.required = false;
	ck_assert_int_eq(egress_config_resolve(NULL, &file, NULL, &g, &e), 0);
	ck_assert_ptr_null(g.proxy);
	ck_assert(!g.required);
	egress_config_dispose(&g);
	ck_assert_int_eq(egress_config_resolve(NULL, NULL, NULL, &g, &e), 0);
	ck_assert_ptr_null(g.proxy);
	egress_config_dispose(&g);
	ck_assert_int_lt(egress_config_resolve(NULL, NULL, required, &g, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "no proxy is named"));
	egress_config_dispose(&g);
}
END_TEST

START_TEST(test_proxy_env)
{
	_cleanup_strv_ char **env = NULL;

	ck_assert_int_eq(strv_env_set(&env, "HTTPS_PROXY", "http://elsewhere:1"), 0);
	ck_assert_int_eq(egress_config_proxy_env(&env, "http://10.0.0.1:3128"), 0);
	ck_assert_str_eq(strv_env_get(env, "HTTPS_PROXY"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "HTTP_PROXY"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "https_proxy"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "http_proxy"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "NO_PROXY"), "localhost,127.0.0.1,::1");
	ck_assert_str_eq(strv_env_get(env, "no_proxy"), "localhost,127.0.0.1,::1");
	ck_assert_int_eq(egress_config_proxy_env(&env, NULL), 0);
}
END_TEST

START_TEST(test_sources)
{
	const char *doc = "egress:\n  proxy: http://10.0.0.1:3128\n  required: yes\n";
	const char *spec = "{\"version\":1,\"app_dir\":\"/w/app\",\"manifest_path\":\"/w/m.json\","
	                   "\"port\":3000,\"timeout\":60,\"manifest\":{\"command\":\"m\"},"
	                   "\"start\":{\"command\":\"s\"},\"egress\":{\"proxy\":"
	                   "\"http://10.0.0.1:3128\",\"required\":true}}";
	struct sandbox_config c;
	struct boot_spec s;
	struct err e;

	ck_assert_int_eq(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_null(c.egress.proxy); /* checked, then ignored: the operator's to name */
	ck_assert(c.egress.required);
	sandbox_config_dispose(&c);
	doc = "egress:\n  required: maybe\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "`egress.required` must be true or false"));
	doc = "egress: http://10.0.0.1:3128\n";
	ck_assert_int_lt(sandbox_config_parse(doc, strlen(doc), &c, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "`egress` must map proxy"));
	ck_assert_msg(boot_spec_parse(spec, strlen(spec), &s, &e) == 0, "%s", e.msg);
	ck_assert_str_eq(s.egress.proxy, "http://10.0.0.1:3128");
	ck_assert(s.egress.required);
	boot_spec_dispose(&s);
}
END_TEST

/* The coding agent's environment gets the daemon's proxy; the file's env cannot bypass it. */
START_TEST(test_session_env_proxy)
{
	char *caller[] = {"SANDBOX_AGENT_EGRESS_PROXY=http://10.0.0.1:3128", NULL};
	char *spec_env[] = {"HTTPS_PROXY=http://elsewhere:1", NULL};
	struct session_env_spec sp = {
	    .mode = SESSION_MODE_API_KEY,
	    .spec_env = spec_env,
	    .caller_env = caller,
	    .home = "/home/claude",
	    .user = "claude",
	    .checkout = "/w/app",
	};
	_cleanup_strv_ char **env = NULL;
	struct err e;

	ck_assert_int_eq(session_env_build(&sp, &env, &e), 0);
	ck_assert_str_eq(strv_env_get(env, "HTTPS_PROXY"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "http_proxy"), "http://10.0.0.1:3128");
	ck_assert_str_eq(strv_env_get(env, "NO_PROXY"), "localhost,127.0.0.1,::1");
	strv_free(env);
	env = NULL;
	sp.caller_env = NULL;
	ck_assert_int_eq(session_env_build(&sp, &env, &e), 0);
	ck_assert_str_eq(strv_env_get(env, "HTTPS_PROXY"), "http://elsewhere:1");
	ck_assert_ptr_null(strv_env_get(env, "NO_PROXY"));
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress_config");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_proxy_urls);
	tcase_add_test(tc, test_resolve);
	tcase_add_test(tc, test_proxy_env);
	tcase_add_test(tc, test_sources);
	tcase_add_test(tc, test_session_env_proxy);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(egress_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
