/* SPDX-License-Identifier: Apache-2.0 */
/*
 * yaml_scalar: env values become what Ruby 3.1's YAML.safe_load(...).to_s gives. Every
 * expected value below was checked against Ruby (tests/integration/test_yaml_ruby_compat.sh
 * runs the wider corpus); the comments note the surprising ones.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "yaml_scalar.h"

/* Plain, untagged: what an unquoted value in the file gives. */
static char *conv(const char *value, bool plain, const char *tag)
{
	struct err e = {0};
	char *out = NULL;

	if (yaml_scalar_to_env(value, strlen(value), plain, tag, &out, &e) < 0)
		return NULL;
	return out;
}

#define ck_env(in, want)                                                                           \
	do {                                                                                       \
		char *_got = conv(in, true, NULL);                                                 \
		ck_assert_msg(_got, "%s was refused", in);                                         \
		ck_assert_str_eq(_got, want);                                                      \
		free(_got);                                                                        \
	} while (0)

#define ck_env_tag(in, tag, want)                                                                  \
	do {                                                                                       \
		char *_got = conv(in, false, tag);                                                 \
		ck_assert_msg(_got, "%s %s was refused", tag, in);                                 \
		ck_assert_str_eq(_got, want);                                                      \
		free(_got);                                                                        \
	} while (0)

/* Refused with a message containing `why`, class ERR_REFUSED, *ret untouched. */
static void ck_refused_full(const char *in, size_t len, bool plain, const char *tag,
                            const char *why)
{
	struct err e = {0};
	char *out = (char *)"untouched";

	ck_assert_msg(yaml_scalar_to_env(in, len, plain, tag, &out, &e) < 0, "%.40s was accepted",
	              in);
	ck_assert_int_eq(e.cls, ERR_REFUSED);
	ck_assert_msg(strstr(e.msg, why), "%.40s: message \"%s\" lacks \"%s\"", in, e.msg, why);
	ck_assert_str_eq(out, "untouched");
}

#define ck_refused(in, why) ck_refused_full(in, strlen(in), true, NULL, why)
#define ck_refused_tag(in, tag, why) ck_refused_full(in, strlen(in), false, tag, why)

START_TEST(test_booleans)
{
	/* Psych matches these case-insensitively: every case variant is a boolean */
	static const char *const yes[] = {"true", "True", "TRUE", "tRuE", "yes", "Yes",
	                                  "YES",  "yEs",  "on",   "On",   "ON",  "oN"};
	static const char *const no[] = {"false", "False", "FALSE", "fAlSe", "no",  "No",
	                                 "NO",    "nO",    "off",   "Off",   "OFF", "oFf"};

	for (size_t i = 0; i < ELEMENTSOF(yes); i++)
		ck_env(yes[i], "true");
	for (size_t i = 0; i < ELEMENTSOF(no); i++)
		ck_env(no[i], "false");
	/* YAML 1.1's y and n are not booleans in Psych; neither are near misses */
	ck_env("y", "y");
	ck_env("n", "n");
	ck_env("Y", "Y");
	ck_env("yesno", "yesno");
	ck_env("offline", "offline");
	ck_env("Yes!", "Yes!");
}
END_TEST

START_TEST(test_null_refused)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL", "nUlL"};

	for (size_t i = 0; i < ELEMENTSOF(nulls); i++)
		ck_refused(nulls[i], "null is not a string");
	ck_refused_tag("", "tag:yaml.org,2002:null", "null is not a string");
	ck_refused_tag("", "tag:yaml.org,2002:int", "null is not a string");
	ck_env("~x", "~x");
	ck_env("nullish", "nullish");
	ck_env("NULL!", "NULL!");
}
END_TEST

START_TEST(test_multi_line_plain)
{
	/* tokenize's /^(yes|true|on)$/ matches any line of a short scalar: a folded "on\nno" is
	 * true in Ruby */
	ck_env("on\nno", "true");
	ck_env("t\nno", "false");
	ck_env("~\nno", "false");
	ck_env("x\nno", "x\nno");
	ck_env("1\n2", "1\n2");
	/* longer than 5 characters: always a string */
	ck_env("on\nnoo", "on\nnoo");
}
END_TEST

START_TEST(test_integers)
{
	ck_env("0", "0");
	ck_env("-0", "0");
	ck_env("+12", "12");
	ck_env("42", "42");
	ck_env("1_000", "1000");
	ck_env("1,000", "1000");
	ck_env("1,000,000", "1000000");
	ck_env("-1,0", "-10");
	ck_env("010", "8"); /* octal */
	ck_env("-010", "-8");
	ck_env("0,7,7", "63"); /* still octal after the commas go */
	ck_env("0_", "0");
	ck_env("00", "0");
	ck_env("0x1F", "31");
	ck_env("0x1f", "31");
	ck_env("-0x1F", "-31");
	ck_env("0x_1F", "31");
	ck_env("0b101", "5");
	ck_env("-0b101", "-5");
	ck_env("0b1,0", "2");
	/* look like numbers, stay strings */
	ck_env("08", "08");
	ck_env("09", "09");
	ck_env("0_8", "0_8");
	ck_env("1__000", "1__000");
	ck_env("0o17", "0o17");
	ck_env("0X1F", "0X1F");
	ck_env("0B1", "0B1");
	ck_env("0x", "0x");
	ck_env("1e3", "1e3"); /* no point, so not a float; no sign in the exponent either */
	ck_env("1.0e3", "1.0e3");
	ck_env("20240101", "20240101");
}
END_TEST

START_TEST(test_integers_invalid)
{
	/* match Psych's INTEGER pattern, then Integer("0x") raises */
	ck_refused("0x_", "not a valid number");
	ck_refused("0b_", "not a valid number");
	ck_refused("0x,", "not a valid number");
}
END_TEST

START_TEST(test_bignums)
{
	/* Ruby has bignums: the decimal text, not a refusal and not a wrapped 64-bit value */
	ck_env("9223372036854775807", "9223372036854775807");
	ck_env("9223372036854775808", "9223372036854775808");
	ck_env("-9223372036854775809", "-9223372036854775809");
	ck_env("18446744073709551616", "18446744073709551616");
	ck_env("123456789012345678901234567890", "123456789012345678901234567890");
	ck_env("0x123456789abcdef0123", "5373003642731685151011");
	ck_env("0xffffffffffffffffffffffffffffffff", "340282366920938463463374607431768211455");
	ck_env("-0b1111111111111111111111111111111111111111111111111111111111111111111",
	       "-147573952589676412927");
	ck_env("07777777777777777777777777777777777777777",
	       "1329227995784915872903807060280344575");
	ck_env("99999999999999999999:00", "359999999999999999996400");
}
END_TEST

START_TEST(test_number_length_cap)
{
	char *big = malloc(YAML_SCALAR_NUMBER_MAX + 2);
	char *out = NULL;
	struct err e = {0};

	memset(big, '7', YAML_SCALAR_NUMBER_MAX + 1);
	big[0] = '0'; /* octal: needs the bignum conversion */
	big[YAML_SCALAR_NUMBER_MAX + 1] = '\0';
	ck_assert_int_eq(yaml_scalar_to_env(big, YAML_SCALAR_NUMBER_MAX, true, NULL, &out, &e), 0);
	ck_assert_uint_gt(strlen(out), 3600);
	free(out);
	ck_refused_full(big, YAML_SCALAR_NUMBER_MAX + 1, true, NULL, "longer than 4096");
	/* a long string that is not a number is fine */
	memset(big, 'a', YAML_SCALAR_NUMBER_MAX + 1);
	ck_assert_int_eq(yaml_scalar_to_env(big, YAML_SCALAR_NUMBER_MAX + 1, true, NULL, &out, &e),
	                 0);
	ck_assert_uint_eq(strlen(out), YAML_SCALAR_NUMBER_MAX + 1);
	free(out);
	free(big);
}
END_TEST

START_TEST(test_base60)
{
	/* the first part always counts 60**2 times, whatever the number of parts */
	ck_env("12:30", "45000");
	ck_env("1:30:15", "5415");
	ck_env("1:5:59", "3959");
	ck_env("190:20:30", "685230");
	/* only the first part carries the sign: -1*3600 + 30*60 */
	ck_env("-1:30", "-1800");
	ck_env("-0:30", "1800");
	ck_env("+1:30", "5400");
	/* String#to_i stops at a double underscore */
	ck_env("1_0:30", "37800");
	ck_env("1__0:30", "5400");
	ck_env("1_:30", "5400");
	ck_env("1:30.5", "5430.0");
	ck_env("-1:30.5", "-1770.0");
	ck_env("-0:30.5", "1830.0");
	ck_env("1:30.", "5400.0");
	ck_env("1:30._5", "5400.0");
	ck_env("1:30.5_5", "5433.0");
	/* not base 60 */
	ck_env("1:60", "1:60");
	ck_env("1:2:3:4", "1:2:3:4");
	ck_env("12:30:60", "12:30:60");
}
END_TEST

START_TEST(test_floats)
{
	ck_env("1.5", "1.5");
	ck_env("1.50", "1.5");
	ck_env("-1.5", "-1.5");
	ck_env("+.5", "0.5");
	ck_env("1.", "1.0");
	ck_env("-0.0", "-0.0");
	ck_env("1,000.5", "1000.5");
	ck_env("1_000.5", "1000.5");
	ck_env("0.1", "0.1");
	ck_env("0.30000000000000004", "0.30000000000000004");
	ck_env("123456789.123456789", "123456789.12345679");
	ck_env("1.0e+3", "1000.0");
	ck_env("1.e+3", "1000.0");
	ck_env("1.0E-3", "0.001");
	/* Float#to_s switches to exponent notation at 1e16 and below 1e-4... */
	ck_env("1.0e+15", "1.0e+15");
	ck_env("1000000000000000.0", "1.0e+15");
	ck_env("100000000000000.0", "100000000000000.0");
	ck_env("999999999999999.9", "999999999999999.9");
	ck_env("1234567890123456.0", "1.234567890123456e+15");
	/* ...but keeps plain notation while digits remain after the point */
	ck_env("3524835297308365.5", "3524835297308365.5");
	ck_env("0.0001", "0.0001");
	ck_env("0.00001", "1.0e-05");
	ck_env("6.02e+23", "6.02e+23");
	ck_env("9007199254740993.0", "9.007199254740992e+15"); /* ties to even */
	ck_env("1.0e+400", "Infinity");
	ck_env("-1.0e+400", "-Infinity");
	ck_env("1.0e-400", "0.0");
	ck_env("4.9e-324", "5.0e-324");
	ck_env(".inf", "Infinity");
	ck_env("+.Inf", "Infinity");
	ck_env("-.INF", "-Infinity");
	ck_env(".nan", "NaN");
	ck_env(".NaN", "NaN");
	/* strings after all */
	ck_env(".", ".");
	ck_env("+.", "+.");
	ck_env("-.nan", "-.nan");
	ck_env("1.5_5", "1.5_5"); /* FLOAT allows no underscore after the point */
	ck_env("1.2.3", "1.2.3");
	ck_env("inf", "inf");
	ck_env("Infinity", "Infinity");
	/* FLOAT matches, Float("e+3") raises */
	ck_refused(".e+3", "not a valid number");
}
END_TEST

START_TEST(test_dates_times_symbols_refused)
{
	ck_refused("2024-01-01", "a date is not a string");
	ck_refused("2024-1-1", "a date is not a string");
	ck_refused("2024-02-30", "a date is not a string"); /* refused before it is checked */
	ck_refused("2024-01-01T10:00:00", "a time is not a string");
	ck_refused("2024-01-01t10:00:00Z", "a time is not a string");
	ck_refused("2024-01-01 10:00:00.123 +01:00", "a time is not a string");
	ck_refused("2024-01-01T10:00:00-0530", "a time is not a string");
	ck_refused(":foo", "a Ruby symbol");
	ck_refused_tag("2024-01-01", "tag:yaml.org,2002:timestamp", "a date is not a string");
	ck_env("2024-13-01", "2024-13-01");
	ck_env("2024-1-32", "2024-1-32");
	ck_env("2024-01-01T10:00", "2024-01-01T10:00");
	/* quoted: verbatim */
	{
		char *s = conv("2024-01-01", false, NULL);
		ck_assert_str_eq(s, "2024-01-01");
		free(s);
	}
}
END_TEST

START_TEST(test_quoted_verbatim)
{
	static const char *const same[] = {"yes", "010",  "0x1F", "1.50",       "12:30",
	                                   "~",   "null", "",     "  spaced  ", ":foo"};

	for (size_t i = 0; i < ELEMENTSOF(same); i++) {
		char *s = conv(same[i], false, NULL);
		ck_assert_msg(s, "%s refused", same[i]);
		ck_assert_str_eq(s, same[i]);
		free(s);
	}
}
END_TEST

START_TEST(test_tags)
{
	ck_env_tag("012", "tag:yaml.org,2002:str", "012");
	ck_env_tag("yes", "tag:yaml.org,2002:str", "yes");
	ck_env_tag("0x1F", "!str", "0x1F");
	ck_env_tag("x", "!str:", "x");
	ck_env_tag("foo", "!ruby/string", "foo");
	/* any other tag resolves the text, quoted or not: !!int "012" is octal 10 */
	ck_env_tag("012", "tag:yaml.org,2002:int", "10");
	ck_env_tag("abc", "tag:yaml.org,2002:int", "abc");
	ck_env_tag("yes", "tag:yaml.org,2002:bool", "true");
	ck_env_tag("x", "tag:yaml.org,2002:null", "x");
	ck_env_tag("42", "!", "42");
	ck_env_tag("42", "!foo", "42");
	ck_env_tag("bar", "!ruby/object:Foo", "bar");
	ck_env_tag("x", "tag:yaml.org,2002:set", "x");
	/* !!float converts with Float() */
	ck_env_tag("1", "tag:yaml.org,2002:float", "1.0");
	ck_env_tag("2", "!float", "2.0");
	ck_env_tag("1e3", "tag:yaml.org,2002:float", "1000.0");
	ck_env_tag("0x1A", "tag:yaml.org,2002:float", "26.0");
	ck_env_tag("0x1.8p1", "tag:yaml.org,2002:float", "3.0");
	ck_env_tag(" 1.5 ", "tag:yaml.org,2002:float", "1.5");
	ck_env_tag("1_0e1_0", "tag:yaml.org,2002:float", "100000000000.0");
	ck_env_tag("1:30", "tag:yaml.org,2002:float", "5400.0");
	ck_env_tag("12345678901234567890123", "tag:yaml.org,2002:float", "1.2345678901234568e+22");
	ck_refused_tag("abc", "tag:yaml.org,2002:float", "!!float needs a number");
	ck_refused_tag("yes", "tag:yaml.org,2002:float", "!!float needs a number");
	ck_refused_tag("", "tag:yaml.org,2002:float", "!!float needs a number");
	ck_env_tag("5.", "!float", "5.0"); /* tokenize reads "5." as a float first */
	ck_refused_tag("1.e1", "!float", "!!float needs a number"); /* Float("1.e1") raises */
	ck_refused_tag("1__0", "!float", "!!float needs a number");
	ck_refused_tag("0x1.8", "!float", "!!float needs a number");
	/* tags naming Ruby classes: refused like safe_load does */
	ck_refused_tag("x", "!str:String", "naming a Ruby class");
	ck_refused_tag("foo", "!ruby/sym", "naming a Ruby class");
	ck_refused_tag("foo", "!ruby/symbol", "naming a Ruby class");
	ck_refused_tag("/a/", "!ruby/regexp", "naming a Ruby class");
	ck_refused_tag("1..2", "!ruby/range", "naming a Ruby class");
	ck_refused_tag("1", "!ruby/object:BigDecimal", "naming a Ruby class");
	ck_refused_tag("String", "!ruby/class", "naming a Ruby class");
	ck_refused_tag("", "!ruby/class", "null is not a string");
	/* Ruby gives an Encoding object here; no environment wants one */
	ck_refused_tag("UTF-8", "!ruby/encoding", "naming a Ruby class");
}
END_TEST

START_TEST(test_binary)
{
	ck_env_tag("aGVsbG8=", "tag:yaml.org,2002:binary", "hello");
	ck_env_tag("aGVsbG8", "!binary", "hello");
	/* String#unpack('m') skips what is not base64 and stops a group at '=' */
	ck_env_tag("aGV sbG8=x", "tag:yaml.org,2002:binary", "hello");
	ck_env_tag("aGVs\nbG8=\n", "tag:yaml.org,2002:binary", "hello");
	ck_env_tag("====aGVsbG8", "tag:yaml.org,2002:binary", "hello");
	ck_env_tag("a=GVsbG8", "tag:yaml.org,2002:binary", "hello");
	ck_env_tag("aG=VsbG8", "tag:yaml.org,2002:binary", "h");
	ck_env_tag("a", "tag:yaml.org,2002:binary", "");
	ck_env_tag("/w==", "tag:yaml.org,2002:binary", "\xff");
	ck_refused_tag("AAA=", "tag:yaml.org,2002:binary", "NUL");
}
END_TEST

START_TEST(test_nul_refused)
{
	ck_refused_full("a\0b", 3, false, NULL, "NUL");
	ck_refused_full("a\0b", 3, false, "tag:yaml.org,2002:str", "NUL");
}
END_TEST

START_TEST(test_resolve_kinds)
{
	static const struct {
		const char *in;
		enum yaml_scalar_kind kind;
	} cases[] = {
	    {"~", YAML_KIND_NULL},     {"", YAML_KIND_NULL},    {"on", YAML_KIND_BOOL},
	    {"0x10", YAML_KIND_INT},   {"1:30", YAML_KIND_INT}, {"1.5", YAML_KIND_FLOAT},
	    {".nan", YAML_KIND_FLOAT}, {"make", YAML_KIND_STR}, {"1e3", YAML_KIND_STR},
	};

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		enum yaml_scalar_kind kind = YAML_KIND_STR;
		char *text = (char *)"x";
		struct err e = {0};

		ck_assert_int_eq(yaml_scalar_resolve(cases[i].in, strlen(cases[i].in), true, NULL,
		                                     &kind, &text, &e),
		                 0);
		ck_assert_msg(kind == cases[i].kind, "%s: kind %d", cases[i].in, kind);
		if (kind == YAML_KIND_NULL)
			ck_assert_ptr_null(text);
		free(text);
	}
}
END_TEST

static Suite *yaml_scalar_suite(void)
{
	Suite *s = suite_create("yaml_scalar");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_booleans);
	tcase_add_test(tc, test_null_refused);
	tcase_add_test(tc, test_multi_line_plain);
	tcase_add_test(tc, test_integers);
	tcase_add_test(tc, test_integers_invalid);
	tcase_add_test(tc, test_bignums);
	tcase_add_test(tc, test_number_length_cap);
	tcase_add_test(tc, test_base60);
	tcase_add_test(tc, test_floats);
	tcase_add_test(tc, test_dates_times_symbols_refused);
	tcase_add_test(tc, test_quoted_verbatim);
	tcase_add_test(tc, test_tags);
	tcase_add_test(tc, test_binary);
	tcase_add_test(tc, test_nul_refused);
	tcase_add_test(tc, test_resolve_kinds);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(yaml_scalar_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
