/* SPDX-License-Identifier: Apache-2.0 */
/* What sandbox-ctl writes to a terminal: no control character of the guest's acts on it. */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"

/* output_json_text of text into a string (freed by the caller). */
static char *json_text(const char *text)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	output_json_text(f, text, strlen(text));
	fclose(f);
	return buf;
}

START_TEST(test_c1_escaped)
{
	/* U+009B is CSI to a terminal that takes 8-bit controls; U+00A0 and U+00E9 are text. */
	char *out = json_text("{\"t\":\"a\xc2\x9b"
	                      "2J\xc2\x80\xc2\xa0\xc3\xa9\"}");
	struct json_object *back;

	ck_assert_str_eq(out, "{\"t\":\"a\\u009b2J\\u0080\xc2\xa0\xc3\xa9\"}");
	back = json_tokener_parse(out);
	ck_assert_ptr_nonnull(back);
	/* The same value: json-c reads the escapes back as the characters. */
	ck_assert_str_eq(json_object_get_string(json_object_object_get(back, "t")),
	                 "a\xc2\x9b"
	                 "2J\xc2\x80\xc2\xa0\xc3\xa9");
	json_object_put(back);
	free(out);
}
END_TEST

START_TEST(test_plain_text_unchanged)
{
	char *out = json_text("{\"a\":[1,2],\"b\":\"caf\xc3\xa9 \\u001b\"}");

	ck_assert_str_eq(out, "{\"a\":[1,2],\"b\":\"caf\xc3\xa9 \\u001b\"}");
	free(out);
	/* A lone 0xc2 at the end is written as it is: nothing is read past the text. */
	out = json_text("x\xc2");
	ck_assert_str_eq(out, "x\xc2");
	free(out);
}
END_TEST

START_TEST(test_clean_line)
{
	char buf[64];
	const char *in = "ok\x1b]0;title\x07\tend\xc2\x9b"
	                 "A\xff";
	size_t n = output_clean(buf, in, strlen(in));

	buf[n] = '\0';
	ck_assert_str_eq(buf, "ok?]0;title? end?A?");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("output");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_c1_escaped);
	tcase_add_test(tc, test_plain_text_unchanged);
	tcase_add_test(tc, test_clean_line);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
