/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The forge's REST API pieces that need no server: the API URL check, the wording of its
 * errors (host/forge_reply.c), --permissions (host/github_token.c), OWNER/NAME, and the app's
 * JWT (host/github_app.c), verified here with libcrypto and the key's public half.
 */
#include <check.h>
#include <errno.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include "forge_http.h"
#include "forge_reply.h"
#include "github_app.h"
#include "github_pulls.h"
#include "github_token.h"
#include "json_wipe.h"

static const struct forge_reply_hints hints = {.what = "opening",
                                               .on_401 = "new token",
                                               .on_403 = "more rights",
                                               .on_404 = "which repo",
                                               .on_422 = "check"};

START_TEST(test_api_url)
{
	struct err e = {0};

	ck_assert_int_eq(forge_http_api_url_check("https://api.github.com", &e), 0);
	ck_assert_int_eq(forge_http_api_url_check("https://ghe.example.com/api/v3/", &e), 0);
	ck_assert_int_eq(forge_http_api_url_check("http://127.0.0.1:8080", &e), 0);
	ck_assert_int_eq(forge_http_api_url_check("http://localhost/api/v3", &e), 0);
	ck_assert_int_eq(forge_http_api_url_check("http://[::1]:9/", &e), 0);
	ck_assert_int_lt(forge_http_api_url_check("http://api.github.com", &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "must start with https://"));
	ck_assert_int_lt(forge_http_api_url_check("https://user:pw@api.github.com", &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "carries credentials"));
	ck_assert_int_lt(forge_http_api_url_check("https://api.github.com/?x=1", &e), 0);
	ck_assert_int_lt(forge_http_api_url_check("ftp://api.github.com", &e), 0);
	ck_assert_int_lt(forge_http_api_url_check("https://api.github.com/a b", &e), 0);
	ck_assert_int_lt(forge_http_api_url_check("", &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
}
END_TEST

START_TEST(test_url_join)
{
	char buf[64];

	ck_assert_int_eq(forge_http_url(buf, sizeof(buf), "https://h/api/v3//", "/repos/%s", "o/r"),
	                 0);
	ck_assert_str_eq(buf, "https://h/api/v3/repos/o/r");
	ck_assert_int_eq(forge_http_url(buf, 16, "https://h", "/repos/%s", "owner/repository"), -1);
}
END_TEST

START_TEST(test_error_wording)
{
	const char *exists = "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":"
	                     "\"PullRequest\",\"code\":\"custom\",\"message\":\"A pull request "
	                     "already exists for o:b.\"}]}";
	const char *fields = "{\"message\":\"Validation Failed\",\"errors\":[{\"field\":\"head\","
	                     "\"code\":\"invalid\"},{\"field\":\"base\",\"code\":\"invalid\"},"
	                     "\"x\",\"y\",\"z\"]}";
	const char *esc = "{\"message\":\"bad\\u001b[2Jthing\\nnext\"}";
	struct err e = {0};

	ck_assert_int_lt(forge_reply_error(422, exists, strlen(exists), &hints, &e), 0);
	ck_assert_str_eq(e.msg, "opening: the API answered 422 (Validation Failed: A pull request "
	                        "already exists for o:b.): check");
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_int_eq(e.code, EINVAL);
	ck_assert(forge_reply_mentions(exists, strlen(exists), "already exists"));
	ck_assert(!forge_reply_mentions(exists, strlen(exists), "No commits"));

	ck_assert_int_lt(forge_reply_error(422, fields, strlen(fields), &hints, &e), 0);
	ck_assert_str_eq(e.msg, "opening: the API answered 422 (Validation Failed: head invalid; "
	                        "base invalid; x; 2 more): check");

	ck_assert_int_lt(
	    forge_reply_error(401, "{\"message\":\"Bad credentials\"}", 29, &hints, &e), 0);
	ck_assert_str_eq(e.msg, "opening: the API answered 401 (Bad credentials): new token");
	ck_assert_int_eq(e.code, EACCES);
	ck_assert_int_lt(
	    forge_reply_error(403, "{\"message\":\"API rate limit exceeded\"}", 37, &hints, &e), 0);
	ck_assert_int_eq(e.code, EAGAIN);
	ck_assert_ptr_nonnull(strstr(e.msg, "X-RateLimit-Reset"));
	ck_assert_int_lt(forge_reply_error(404, "not json", 8, &hints, &e), 0);
	ck_assert_str_eq(e.msg, "opening: the API answered 404: which repo");
	ck_assert_int_eq(e.code, ENOENT);
	ck_assert_int_lt(forge_reply_error(502, "", 0, &hints, &e), 0);
	ck_assert_int_eq(e.cls, ERR_FAILED);
	ck_assert_int_eq(e.code, EAGAIN);
	/* Control characters from the server never reach the message. */
	ck_assert_int_lt(forge_reply_error(403, esc, strlen(esc), &hints, &e), 0);
	ck_assert_ptr_null(strchr(e.msg, '\033'));
	ck_assert_ptr_null(strchr(e.msg, '\n'));
	ck_assert_ptr_nonnull(strstr(e.msg, "bad?[2Jthing?next"));
}
END_TEST

START_TEST(test_reply_object)
{
	struct err e = {0};
	json_object *o = NULL;

	ck_assert_int_eq(forge_reply_object("{\"number\":7}", 12, "x", &o, &e), 0);
	json_object_put(o);
	ck_assert_int_lt(forge_reply_object("[7]", 3, "x", &o, &e), 0);
	ck_assert_ptr_null(o);
	ck_assert_int_eq(e.code, EPROTO);
	ck_assert_int_lt(forge_reply_object("{\"a\":1} {}", 10, "x", &o, &e), 0);
	ck_assert_int_lt(forge_reply_object("", 0, "x", &o, &e), 0);
}
END_TEST

START_TEST(test_permissions)
{
	struct err e = {0};
	json_object *p = NULL;
	bool writes;

	ck_assert_int_eq(github_token_permissions_parse("contents:read", &p, &writes, &e), 0);
	ck_assert_str_eq(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
	                 "{\"contents\":\"read\"}");
	ck_assert(!writes);
	json_object_put(p);
	ck_assert_int_eq(
	    github_token_permissions_parse("contents:write,pull_requests:write", &p, &writes, &e),
	    0);
	ck_assert(writes);
	ck_assert_str_eq(json_object_to_json_string_ext(p, JSON_C_TO_STRING_PLAIN),
	                 "{\"contents\":\"write\",\"pull_requests\":\"write\"}");
	json_object_put(p);
	static const char *const bad[] = {
	    "",         "contents",   "contents:",     "contents:rw", ":read", "Contents:read",
	    "a:read,,", "a:read,b:x", "con tents:read"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ck_assert_msg(github_token_permissions_parse(bad[i], &p, &writes, &e) < 0, "%s",
		              bad[i]);
		ck_assert_ptr_null(p);
		ck_assert_int_eq(e.cls, ERR_REFUSED);
	}
}
END_TEST

START_TEST(test_repository)
{
	struct err e = {0};

	ck_assert_int_eq(github_pulls_repository_check("acme/shop.web_2-x", &e), 0);
	static const char *const bad[] = {"acme", "/shop", "acme/", "a/b/c",
	                                  "a/..", "a/b c", "a/b?x"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(github_pulls_repository_check(bad[i], &e) < 0, "%s", bad[i]);
	ck_assert_int_lt(github_pulls_repository_check(NULL, &e), 0);
}
END_TEST

/* The key in PEM, optionally encrypted with a passphrase. */
static char *pem_of(EVP_PKEY *k, const char *pass, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *out;
	long n;

	ck_assert(PEM_write_bio_PrivateKey(b, k, pass ? EVP_aes_128_cbc() : NULL,
	                                   (unsigned char *)pass, pass ? (int)strlen(pass) : 0,
	                                   NULL, NULL) == 1);
	n = BIO_get_mem_data(b, &data);
	out = malloc((size_t)n + 1);
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	*len = (size_t)n;
	BIO_free(b);
	return out;
}

static unsigned char *unb64(const char *s, size_t n, size_t *len)
{
	unsigned char *out = malloc(n + 1);

	ck_assert_int_eq(sodium_base642bin(out, n + 1, s, n, NULL, len, NULL,
	                                   sodium_base64_VARIANT_URLSAFE_NO_PADDING),
	                 0);
	out[*len] = '\0';
	return out;
}

START_TEST(test_jwt)
{
	EVP_PKEY *k = EVP_RSA_gen(2048);
	struct err e = {0};
	size_t pem_len, jwt_len, n1, n2, sig_len;
	char *pem, *jwt, *dot1, *dot2;
	unsigned char *head, *claims, *sig;
	EVP_MD_CTX *ctx;
	json_object *c;

	ck_assert_int_ge(sodium_init(), 0);
	ck_assert_ptr_nonnull(k);
	pem = pem_of(k, NULL, &pem_len);
	ck_assert_int_eq(github_app_jwt("12345", pem, pem_len, 1700000000, &jwt, &jwt_len, &e), 0);
	ck_assert_uint_eq(strlen(jwt), jwt_len);
	dot1 = strchr(jwt, '.');
	dot2 = dot1 ? strchr(dot1 + 1, '.') : NULL;
	ck_assert_ptr_nonnull(dot2);
	ck_assert_ptr_null(strchr(dot2 + 1, '.'));
	ck_assert_ptr_null(strpbrk(jwt, "=+/"));
	head = unb64(jwt, (size_t)(dot1 - jwt), &n1);
	ck_assert_str_eq((char *)head, "{\"alg\":\"RS256\",\"typ\":\"JWT\"}");
	claims = unb64(dot1 + 1, (size_t)(dot2 - dot1 - 1), &n2);
	c = json_tokener_parse((char *)claims);
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(c, "iat")), 1700000000 - 60);
	ck_assert_int_eq(json_object_get_int64(json_object_object_get(c, "exp")), 1700000000 + 540);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "iss")), "12345");
	json_object_put(c);
	/* RS256 over header.claims, with the key's public half. */
	sig = unb64(dot2 + 1, strlen(dot2 + 1), &sig_len);
	ctx = EVP_MD_CTX_new();
	ck_assert_int_eq(EVP_DigestVerifyInit(ctx, NULL, EVP_sha256(), NULL, k), 1);
	ck_assert_int_eq(
	    EVP_DigestVerify(ctx, sig, sig_len, (unsigned char *)jwt, (size_t)(dot2 - jwt)), 1);
	EVP_MD_CTX_free(ctx);
	sodium_free(jwt);
	free(head);
	free(claims);
	free(sig);
	free(pem);

	/* An encrypted key fails without asking for a passphrase; so does garbage. */
	pem = pem_of(k, "secret", &pem_len);
	ck_assert_int_lt(github_app_jwt("12345", pem, pem_len, 1700000000, &jwt, &jwt_len, &e), 0);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_ptr_nonnull(strstr(e.msg, "without a passphrase"));
	ck_assert_ptr_null(jwt);
	free(pem);
	ck_assert_int_lt(github_app_jwt("12345", "hello", 5, 1700000000, &jwt, &jwt_len, &e), 0);
	EVP_PKEY_free(k);

	/* Not RSA: refused. */
	k = EVP_EC_gen("P-256");
	pem = pem_of(k, NULL, &pem_len);
	ck_assert_int_lt(github_app_jwt("12345", pem, pem_len, 1700000000, &jwt, &jwt_len, &e), 0);
	ck_assert_ptr_nonnull(strstr(e.msg, "not an RSA key"));
	free(pem);
	EVP_PKEY_free(k);

	ck_assert_int_lt(github_app_id_check("12\"3", &e), 0);
	ck_assert_int_eq(github_app_id_check("Iv1.abc123", &e), 0);
}
END_TEST

/* json_wipe_strings(): every string json-c holds of a document, nested ones too, zeroed. */
START_TEST(test_json_wipe)
{
	json_object *o = json_tokener_parse("{\"token\":\"ghs_top\",\"a\":{\"b\":[\"ghs_in_array\","
	                                    "{\"c\":\"ghs_deep\"}]},\"n\":5}");
	json_object *a, *b, *c;
	const char *s[3];
	size_t len[3];

	ck_assert_ptr_nonnull(o);
	ck_assert(json_object_object_get_ex(o, "a", &a) && json_object_object_get_ex(a, "b", &b));
	ck_assert(json_object_object_get_ex(json_object_array_get_idx(b, 1), "c", &c));
	s[0] = json_object_get_string(json_object_object_get(o, "token"));
	s[1] = json_object_get_string(json_object_array_get_idx(b, 0));
	s[2] = json_object_get_string(c);
	for (int i = 0; i < 3; i++)
		len[i] = strlen(s[i]);
	json_wipe_strings(o);
	for (int i = 0; i < 3; i++)
		for (size_t k = 0; k < len[i]; k++)
			ck_assert_msg(s[i][k] == 0, "string %d byte %zu", i, k);
	ck_assert_int_eq(json_object_get_int(json_object_object_get(o, "n")), 5);
	json_object_put(o);
	json_wipe_strings(NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("forge");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_api_url);
	tcase_add_test(tc, test_url_join);
	tcase_add_test(tc, test_error_wording);
	tcase_add_test(tc, test_reply_object);
	tcase_add_test(tc, test_permissions);
	tcase_add_test(tc, test_repository);
	tcase_add_test(tc, test_jwt);
	tcase_add_test(tc, test_json_wipe);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
