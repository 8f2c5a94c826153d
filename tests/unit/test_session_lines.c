/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"
#include "scrub.h"
#include "session_lines.h"

#define SECRET "sk-ant-test-secret-0123456789"

struct collect {
	char *buf;
	size_t len;
};

static int collect_sink(void *userdata, const char *buf, size_t len)
{
	struct collect *c = userdata;

	c->buf = realloc(c->buf, c->len + len + 1);
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	c->buf[c->len] = '\0';
	return 0;
}

static struct scrubber *scrubber(void)
{
	struct scrubber *s = scrub_new();

	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(scrub_add(s, SECRET, strlen(SECRET)), 0);
	return s;
}

static char *frame(const struct scrubber *s, const char *line)
{
	size_t len;
	char *out = session_lines_frame(s, line, strlen(line), strlen(line), &len);

	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), len);
	ck_assert_int_eq(out[len - 1], '\n');
	return out;
}

START_TEST(test_objects_pass_as_they_came)
{
	char *out = frame(NULL, "{\"type\":\"system\", \"n\": 1.50}");

	ck_assert_str_eq(out, "{\"type\":\"system\", \"n\": 1.50}\n");
	free(out);
	out = frame(NULL, "{\"type\":\"result\"}\r");
	ck_assert_str_eq(out, "{\"type\":\"result\"}\n");
	free(out);
}
END_TEST

START_TEST(test_other_lines_become_raw)
{
	char *out = frame(NULL, "Error: something \"quoted\"");

	ck_assert_str_eq(out, "{\"type\":\"raw\",\"text\":\"Error: something \\\"quoted\\\"\"}\n");
	free(out);
	out = frame(NULL, "[1,2]");
	ck_assert_str_eq(out, "{\"type\":\"raw\",\"text\":\"[1,2]\"}\n");
	free(out);
	out = frame(NULL, "{\"a\":1} trailing");
	ck_assert_str_eq(out, "{\"type\":\"raw\",\"text\":\"{\\\"a\\\":1} trailing\"}\n");
	free(out);
	/* Bytes that are not UTF-8 become U+FFFD, so the line is still JSON. */
	out = frame(NULL, "bad \xff\xfe end");
	ck_assert_str_eq(out, "{\"type\":\"raw\",\"text\":\"bad \xef\xbf\xbd\xef\xbf\xbd end\"}\n");
	free(out);
}
END_TEST

START_TEST(test_secrets_are_masked)
{
	struct scrubber *s = scrubber();
	char *out = frame(s, "{\"type\":\"assistant\",\"text\":\"your key is " SECRET "\"}");

	ck_assert_str_eq(out, "{\"type\":\"assistant\",\"text\":\"your key is [REDACTED]\"}\n");
	free(out);
	out = frame(s, "plain " SECRET);
	ck_assert_str_eq(out, "{\"type\":\"raw\",\"text\":\"plain [REDACTED]\"}\n");
	free(out);
	/* Hidden behind \u escapes: json-c's rendering shows it, and that is written. */
	out = frame(s, "{\"t\":\"\\u0073k-ant-test-secret-0123456789\"}");
	ck_assert_ptr_null(strstr(out, "secret-0123456789"));
	ck_assert_ptr_nonnull(strstr(out, "[REDACTED]"));
	free(out);
	/* Other escapes stay as they came. */
	out = frame(s, "{\"t\":\"\\u00e9\"}");
	ck_assert_str_eq(out, "{\"t\":\"\\u00e9\"}\n");
	free(out);
	scrub_free(s);
}
END_TEST

START_TEST(test_stream_cuts_lines)
{
	struct collect c = {0};
	struct session_lines *l = session_lines_new(NULL, 0, collect_sink, &c);
	const char *in = "{\"a\":1}\n\nnot json\n{\"b\":";

	ck_assert_ptr_nonnull(l);
	/* Fed one byte at a time: the same lines. */
	for (size_t i = 0; i < strlen(in); i++)
		ck_assert_int_eq(session_lines_feed(l, in + i, 1), 0);
	ck_assert_str_eq(c.buf, "{\"a\":1}\n{\"type\":\"raw\",\"text\":\"not json\"}\n");
	ck_assert_int_eq(session_lines_feed(l, "2}\n{\"c\"", 7), 0);
	ck_assert_int_eq(session_lines_finish(l), 0);
	ck_assert_str_eq(c.buf, "{\"a\":1}\n{\"type\":\"raw\",\"text\":\"not json\"}\n{\"b\":2}\n"
	                        "{\"type\":\"raw\",\"text\":\"{\\\"c\\\"\"}\n");
	ck_assert_uint_eq(session_lines_count(l), 4);
	session_lines_free(l);
	free(c.buf);
}
END_TEST

START_TEST(test_a_line_over_the_cap)
{
	struct collect c = {0};
	struct session_lines *l = session_lines_new(NULL, 0, collect_sink, &c);
	size_t n = SESSION_LINE_MAX + 100;
	char *big = malloc(n + 1);
	_cleanup_json_ struct json_object *o = NULL;
	struct json_object *v;
	size_t off;
	enum json_tokener_error jerr;

	ck_assert_ptr_nonnull(big);
	big[0] = '{';
	memset(big + 1, 'x', n - 1);
	big[n] = '\n';
	/* In pieces, as a pipe gives it. */
	for (size_t i = 0; i <= n; i += 65536)
		ck_assert_int_eq(
		    session_lines_feed(l, big + i, i + 65536 > n + 1 ? n + 1 - i : 65536), 0);
	ck_assert_int_eq(session_lines_feed(l, "{\"next\":true}\n", 14), 0);
	ck_assert_uint_eq(session_lines_count(l), 2);
	ck_assert_uint_lt(c.len, SESSION_LINE_KEEP + 200);
	{
		char *nl = strchr(c.buf, '\n');

		ck_assert_int_eq(json_strict_parse(c.buf, (size_t)(nl - c.buf), &o, &off, &jerr),
		                 JSON_STRICT_OK);
		ck_assert_str_eq(nl + 1, "{\"next\":true}\n");
	}
	ck_assert(json_object_object_get_ex(o, "type", &v));
	ck_assert_str_eq(json_object_get_string(v), "raw");
	ck_assert(json_object_object_get_ex(o, "truncated", &v));
	ck_assert(json_object_get_boolean(v));
	ck_assert(json_object_object_get_ex(o, "bytes", &v));
	ck_assert_int_eq(json_object_get_int64(v), (int64_t)n);
	ck_assert(json_object_object_get_ex(o, "text", &v));
	ck_assert_int_eq(json_object_get_string_len(v), SESSION_LINE_KEEP);
	free(big);
	session_lines_free(l);
	free(c.buf);
}
END_TEST

START_TEST(test_a_line_at_the_cap_is_kept)
{
	struct collect c = {0};
	struct session_lines *l = session_lines_new(NULL, 64, collect_sink, &c);
	const char *line =
	    "{\"t\":\"" /* 6 */ "01234567890123456789012345678901234567890123456789012345"
	    "\"}\n"; /* 64 bytes before the newline */

	ck_assert_uint_eq(strlen(line), 65);
	ck_assert_int_eq(session_lines_feed(l, line, strlen(line)), 0);
	ck_assert_str_eq(c.buf, line);
	session_lines_free(l);
	free(c.buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("session_lines");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_objects_pass_as_they_came);
	tcase_add_test(tc, test_other_lines_become_raw);
	tcase_add_test(tc, test_secrets_are_masked);
	tcase_add_test(tc, test_stream_cuts_lines);
	tcase_add_test(tc, test_a_line_over_the_cap);
	tcase_add_test(tc, test_a_line_at_the_cap_is_kept);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
