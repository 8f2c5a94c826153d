/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sandbox-ctl egress's policy: the allowlist's refusals, the refused ranges with the proxy's
 * address cut out (Incus's reject rules win over its allow rules), the ACL document, squid's
 * allow lines; and the session's refusal to start without a verified confinement.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "confine_record.h"
#include "egress_acl.h"
#include "egress_policy.h"
#include "egress_squid.h"
#include "json_strict.h"
#include "session_confine.h"

static struct egress_policy *policy(void)
{
	struct egress_policy *p = calloc(1, sizeof(*p));
	struct err err;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(
	    egress_policy_parse_endpoint("10.0.3.1:3128", &p->proxy, &p->proxy_port, &err), 0);
	ck_assert_int_eq(egress_policy_parse_ip("10.0.3.9", &p->controller, &err), 0);
	p->app_port = 8080;
	ck_assert_int_eq(egress_policy_deny_builtin(p, &err), 0);
	return p;
}

START_TEST(test_allow_entries)
{
	_cleanup_free_ struct egress_policy *p = calloc(1, sizeof(*p));
	struct err err;

	ck_assert_int_eq(egress_policy_allow(p, "API.Anthropic.com:443", &err), 0);
	ck_assert_str_eq(p->allow[0].host, "api.anthropic.com");
	ck_assert_int_eq(egress_policy_allow(p, "api.anthropic.com:443", &err), 0);
	ck_assert_uint_eq(p->n_allow, 1);
	ck_assert_int_eq(egress_policy_allow(p, ".rubygems.org:443", &err), 0);
	ck_assert_int_lt(egress_policy_allow(p, "github.com", &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "HOST:PORT"));
	ck_assert_int_lt(egress_policy_allow(p, "github.com:0", &err), 0);
	ck_assert_int_lt(egress_policy_allow(p, "github.com:65536", &err), 0);
	ck_assert_int_lt(egress_policy_allow(p, "evil.com/x:443", &err), 0);
	ck_assert_int_lt(egress_policy_allow(p, "a..b:443", &err), 0);
	ck_assert_int_lt(egress_policy_allow(p, ":443", &err), 0);
	ck_assert_uint_eq(p->n_allow, 2);
}
END_TEST

START_TEST(test_deny_list_cuts_the_proxy)
{
	_cleanup_free_ struct egress_policy *p = policy();
	_cleanup_free_ char *v4 = egress_policy_deny_list(p, AF_INET, true);
	_cleanup_free_ char *plain = egress_policy_deny_list(p, AF_INET, false);
	_cleanup_free_ char *v6 = egress_policy_deny_list(p, AF_INET6, true);

	ck_assert_ptr_nonnull(strstr(v4, "10.0.0.0-10.0.3.0,10.0.3.2-10.255.255.255"));
	ck_assert_ptr_nonnull(strstr(v4, "169.254.0.0/16"));
	ck_assert_ptr_nonnull(strstr(v4, "192.168.0.0/16"));
	ck_assert_ptr_nonnull(strstr(plain, "10.0.0.0/8"));
	ck_assert_str_eq(v6, "::1,fc00::/7,fe80::/10");
}
END_TEST

START_TEST(test_deny_list_drops_contained_ranges)
{
	_cleanup_free_ struct egress_policy *p = policy();
	_cleanup_free_ char *v4 = NULL;
	struct err err;

	ck_assert_int_eq(egress_policy_deny(p, "10.1.2.0/24", "test", &err), 0);
	ck_assert_int_eq(egress_policy_deny(p, "198.51.100.7", "test", &err), 0);
	ck_assert_int_lt(egress_policy_deny(p, "198.51.100.7/33", "test", &err), 0);
	ck_assert_int_lt(egress_policy_deny(p, "example.com/8", "test", &err), 0);
	v4 = egress_policy_deny_list(p, AF_INET, false);
	ck_assert_ptr_null(strstr(v4, "10.1.2.0"));
	ck_assert_ptr_nonnull(strstr(v4, ",198.51.100.7"));
}
END_TEST

START_TEST(test_acl_document)
{
	_cleanup_free_ struct egress_policy *p = policy();
	_cleanup_json_ json_object *acl = egress_acl_build(p);
	_cleanup_json_ json_object *nic = egress_acl_nic_keys("sandbox-egress-x");
	json_object *eg, *in, *r;

	ck_assert_ptr_nonnull(acl);
	ck_assert(json_object_object_get_ex(acl, "egress", &eg));
	ck_assert(json_object_object_get_ex(acl, "ingress", &in));
	r = json_object_array_get_idx(eg, 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "action")), "allow");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "destination")),
	                 "10.0.3.1");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "destination_port")),
	                 "3128");
	r = json_object_array_get_idx(eg, 1);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "action")), "reject");
	ck_assert_uint_eq(json_object_array_length(in), 1);
	r = json_object_array_get_idx(in, 0);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "source")), "10.0.3.9");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(r, "destination_port")),
	                 "8080");
	ck_assert_str_eq(json_object_get_string(json_object_object_get(nic, "security.acls")),
	                 "sandbox-egress-x");
	ck_assert_str_eq(json_object_get_string(
	                     json_object_object_get(nic, "security.acls.default.egress.action")),
	                 "reject");
}
END_TEST

START_TEST(test_squid_config)
{
	_cleanup_free_ struct egress_policy *p = policy();
	struct egress_squid_options o = {.dir = "/var/lib/x", .hosts_file = NULL};
	_cleanup_free_ char *conf = NULL;
	struct err err;

	ck_assert_int_eq(egress_policy_allow(p, "a.example:443", &err), 0);
	ck_assert_int_eq(egress_policy_allow(p, "b.example:443", &err), 0);
	ck_assert_int_eq(egress_policy_allow(p, "c.example:8080", &err), 0);
	conf = egress_squid_config(p, &o);
	ck_assert_ptr_nonnull(conf);
	ck_assert_ptr_nonnull(strstr(conf, "http_port 10.0.3.1:3128\n"));
	ck_assert_ptr_nonnull(
	    strstr(conf, "acl sandbox_hosts_443 dstdomain -n a.example b.example\n"));
	ck_assert_ptr_nonnull(
	    strstr(conf, "http_access allow sandbox_hosts_8080 sandbox_port_8080\n"));
	ck_assert_ptr_nonnull(strstr(conf, "acl sandbox_refused_dst dst 169.254.0.0/16\n"));
	/* The refusal of internal destinations comes before any allow line. */
	ck_assert(strstr(conf, "http_access deny sandbox_refused_dst") <
	          strstr(conf, "http_access allow"));
	ck_assert_ptr_nonnull(strstr(conf, "deny_info ERR_SANDBOX_EGRESS all\n"));
	ck_assert_ptr_nonnull(strstr(conf, "error_directory /var/lib/x/errors\n"));
	ck_assert_ptr_null(strstr(conf, "hosts_file"));
}
END_TEST

START_TEST(test_session_refuses_unverified)
{
	char dir[] = "/tmp/test-confine.XXXXXX", path[64];
	_cleanup_json_ json_object *doc = json_object_new_object();
	struct err err;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/run/confinement.json", dir);
	ck_assert_int_lt(session_confine_check_at(path, false, &err), 0);
	ck_assert_int_eq(err.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(err.msg, "never verified"));
	ck_assert_int_eq(session_confine_check_at(path, true, &err), 0);
	json_object_object_add(doc, "confined", json_object_new_boolean(false));
	json_object_object_add(doc, "verified_at", json_object_new_int64(1));
	ck_assert_int_eq(confine_record_write(path, doc, &err), 0);
	ck_assert_int_lt(session_confine_check_at(path, false, &err), 0);
	ck_assert_ptr_nonnull(strstr(err.msg, "failed"));
	json_object_object_add(doc, "confined", json_object_new_boolean(true));
	ck_assert_int_eq(confine_record_write(path, doc, &err), 0);
	ck_assert_int_eq(session_confine_check_at(path, false, &err), 0);
	unlink(path);
	snprintf(path, sizeof(path), "%s/run", dir);
	rmdir(path);
	rmdir(dir);
}
END_TEST

static Suite *egress_suite(void)
{
	Suite *s = suite_create("egress");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_allow_entries);
	tcase_add_test(tc, test_deny_list_cuts_the_proxy);
	tcase_add_test(tc, test_deny_list_drops_contained_ranges);
	tcase_add_test(tc, test_acl_document);
	tcase_add_test(tc, test_squid_config);
	tcase_add_test(tc, test_session_refuses_unverified);
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
