/* SPDX-License-Identifier: Apache-2.0 */
/*
 * YAML scalar resolution as Ruby 3.1's Psych 4 safe loader does it, so that `env` values in
 * .activeagents/sandbox.yml become the same strings the upstream engine gave them.
 *
 * The reference is psych/scalar_scanner.rb (ScalarScanner#tokenize) for untagged plain
 * scalars and psych/visitors/to_ruby.rb (ToRuby#deserialize) for tagged ones, then #to_s of
 * the Ruby value. Each Ruby regular expression is matched here by hand, in the order tokenize
 * tries them; the comments quote the expression. Ruby's ^ and $ are line anchors, which only
 * matters for scalars holding a newline: those never get past the first branch.
 *
 * tests/integration/test_yaml_ruby_compat.sh compares this file with Ruby on a corpus.
 * Known differences, all refusals where Ruby gives something no environment can hold:
 * `!ruby/encoding` (Ruby gives an Encoding object), NUL bytes (Ruby keeps them; execve cannot),
 * numbers longer than YAML_SCALAR_NUMBER_MAX characters. Hexadecimal !!float strings with
 * more than 53 significant bits are rounded correctly here; Ruby's own strtod may differ in
 * the last bit there.
 */
#include "yaml_scalar.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TAG_PREFIX "tag:yaml.org,2002:"

struct resolved {
	enum yaml_scalar_kind kind;
	char *text; /* NULL for YAML_KIND_NULL */
};

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static bool is_xdigit(char c)
{
	return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* Ruby's \s and ISSPACE. */
static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

static size_t count_digits(const char *s, size_t n, size_t i)
{
	size_t k = 0;

	while (i + k < n && is_digit(s[i + k]))
		k++;
	return k;
}

static int refuse(struct err *err, const char *why)
{
	return err_set(err, ERR_REFUSED, EINVAL, "%s", why);
}

static int oom(struct err *err)
{
	return err_oom(err);
}

static int set_text(struct resolved *r, enum yaml_scalar_kind kind, const char *s, size_t n,
                    struct err *err)
{
	char *t = strndup(s, n);

	if (!t)
		return oom(err);
	r->kind = kind;
	r->text = t;
	return 0;
}

static int set_owned(struct resolved *r, enum yaml_scalar_kind kind, char *t, struct err *err)
{
	if (!t)
		return oom(err);
	r->kind = kind;
	r->text = t;
	return 0;
}

/* ---- words: null, booleans ---------------------------------------------------------------- */

enum word {
	WORD_NONE,
	WORD_NULL,
	WORD_TRUE,
	WORD_FALSE,
};

static bool ieq(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && strncasecmp(s, word, n) == 0;
}

/* One line against /^null$/i, /^(yes|true|on)$/i, /^(no|false|off)$/i. */
static enum word line_word(const char *s, size_t n)
{
	if (ieq(s, n, "null"))
		return WORD_NULL;
	if (ieq(s, n, "yes") || ieq(s, n, "true") || ieq(s, n, "on"))
		return WORD_TRUE;
	if (ieq(s, n, "no") || ieq(s, n, "false") || ieq(s, n, "off"))
		return WORD_FALSE;
	return WORD_NONE;
}

/*
 * A scalar without a newline: tokenize's first branch matches every word below, and none of
 * the later (numeric) branches can match a string that branch catches, so the branch reduces
 * to "the whole string is one of these words" (case-insensitive; `~` exactly).
 */
static enum word single_line_word(const char *s, size_t n)
{
	if (n == 1 && s[0] == '~')
		return WORD_NULL;
	return line_word(s, n);
}

static size_t utf8_length(const char *s, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			k++;
	return k;
}

/*
 * A scalar holding a newline always takes tokenize's first branch:
 *   return string if string.length > 5
 *   if string.match?(/^[^ytonf~]/i) -> string
 *   elsif string == '~' || string.match?(/^null$/i) -> nil
 *   elsif /^(yes|true|on)$/i -> true, elsif /^(no|false|off)$/i -> false, else string
 * with ^ and $ matching at every line, so "on\nno" (a folded plain scalar) is true.
 */
static enum word multi_line_word(const char *s, size_t n)
{
	enum word found[4] = {0};

	if (utf8_length(s, n) > 5)
		return WORD_NONE;
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(s + i, '\n', n - i);
		size_t end = nl ? (size_t)(nl - s) : n;

		if (!strchr("ytonfYTONF~", s[i]) || s[i] == '\0')
			return WORD_NONE; /* includes an empty line: [^...] matches "\n" */
		found[line_word(s + i, end - i)] = 1;
		i = end + 1;
	}
	if (found[WORD_NULL])
		return WORD_NULL;
	if (found[WORD_TRUE])
		return WORD_TRUE;
	if (found[WORD_FALSE])
		return WORD_FALSE;
	return WORD_NONE;
}

/* ---- dates and times (refused: Date and Time are not safe classes) ------------------------ */

/*
 * TIME = /^-?\d{4}-\d{1,2}-\d{1,2}(?:[Tt]|\s+)\d{1,2}:\d\d:\d\d(?:\.\d*)?
 *         (?:\s*(?:Z|[-+]\d{1,2}:?(?:\d\d)?))?$/
 */
static bool is_time(const char *s, size_t n)
{
	size_t i = 0, k, j;

	if (i < n && s[i] == '-')
		i++;
	if (count_digits(s, n, i) != 4 || i + 4 >= n || s[i + 4] != '-')
		return false;
	i += 5;
	k = count_digits(s, n, i);
	if (k < 1 || k > 2 || i + k >= n || s[i + k] != '-')
		return false;
	i += k + 1;
	k = count_digits(s, n, i);
	if (k < 1 || k > 2 || i + k >= n)
		return false;
	i += k;
	if (s[i] == 'T' || s[i] == 't') {
		i++;
	} else if (is_space(s[i])) {
		while (i < n && is_space(s[i]))
			i++;
	} else {
		return false;
	}
	k = count_digits(s, n, i);
	if (k < 1 || k > 2 || i + k >= n || s[i + k] != ':')
		return false;
	i += k + 1;
	if (count_digits(s, n, i) != 2 || i + 2 >= n || s[i + 2] != ':')
		return false;
	i += 3;
	if (count_digits(s, n, i) != 2)
		return false;
	i += 2;
	if (i < n && s[i] == '.') {
		i++;
		i += count_digits(s, n, i);
	}
	if (i == n)
		return true;
	/* (?:\s*(?:Z|[-+]\d{1,2}:?(?:\d\d)?))?$ */
	j = i;
	while (j < n && is_space(s[j]))
		j++;
	if (j == n)
		return false;
	if (s[j] == 'Z')
		return j + 1 == n;
	if (s[j] != '-' && s[j] != '+')
		return false;
	j++;
	k = count_digits(s, n, j);
	if (j + k == n)
		return k >= 1 && k <= 4; /* \d{1,2} then optionally \d\d */
	if (k < 1 || k > 2 || s[j + k] != ':')
		return false;
	j += k + 1;
	return j == n || (count_digits(s, n, j) == 2 && j + 2 == n);
}

/* /^\d{4}-(?:1[012]|0\d|\d)-(?:[12]\d|3[01]|0\d|\d)$/ */
static bool is_date(const char *s, size_t n)
{
	size_t i = 0, k;

	if (count_digits(s, n, 0) != 4 || n < 5 || s[4] != '-')
		return false;
	i = 5;
	k = count_digits(s, n, i);
	if (i + k >= n || s[i + k] != '-')
		return false;
	if (k == 2 && !(s[i] == '0' || (s[i] == '1' && s[i + 1] <= '2')))
		return false;
	if (k < 1 || k > 2)
		return false;
	i += k + 1;
	k = count_digits(s, n, i);
	if (i + k != n || k < 1 || k > 2)
		return false;
	if (k == 2 && !(s[i] <= '2' || (s[i] == '3' && s[i + 1] <= '1')))
		return false;
	return true;
}

/* ---- big integers: base 10^9 limbs, just enough to print Ruby's bignums ----------------- */

#define LIMB_BASE 1000000000u

struct big {
	uint32_t *limb; /* least significant first */
	size_t n, cap;
};

static int big_init(struct big *b, size_t input_chars)
{
	/* A digit in base 16 adds < 1.21 decimal digits; *3600 adds 4: 2/9 limb per char is ample.
	 */
	b->cap = input_chars * 2 / 9 + 4;
	b->n = 0;
	b->limb = calloc(b->cap, sizeof(uint32_t));
	return b->limb ? 0 : -ENOMEM;
}

static void big_dispose(struct big *b)
{
	free(b->limb);
	b->limb = NULL;
}

static void big_mul_add(struct big *b, uint32_t mul, uint32_t add)
{
	uint64_t carry = add;

	for (size_t i = 0; i < b->n; i++) {
		uint64_t v = (uint64_t)b->limb[i] * mul + carry;
		b->limb[i] = (uint32_t)(v % LIMB_BASE);
		carry = v / LIMB_BASE;
	}
	while (carry && b->n < b->cap) {
		b->limb[b->n++] = (uint32_t)(carry % LIMB_BASE);
		carry /= LIMB_BASE;
	}
}

/* b -= v, for b >= v. */
static void big_sub_small(struct big *b, uint32_t v)
{
	uint64_t borrow = v;

	for (size_t i = 0; i < b->n && borrow; i++) {
		if (b->limb[i] >= borrow) {
			b->limb[i] -= (uint32_t)borrow;
			borrow = 0;
		} else {
			b->limb[i] = (uint32_t)(b->limb[i] + LIMB_BASE - borrow);
			borrow = 1;
		}
	}
	while (b->n > 0 && b->limb[b->n - 1] == 0)
		b->n--;
}

static bool big_is_zero(const struct big *b)
{
	return b->n == 0;
}

static char *big_to_string(const struct big *b, bool negative)
{
	size_t size = b->n * 9 + 3, o = 0;
	char *s = malloc(size);

	if (!s)
		return NULL;
	if (big_is_zero(b)) {
		strcpy(s, "0");
		return s;
	}
	if (negative)
		s[o++] = '-';
	o += (size_t)snprintf(s + o, size - o, "%u", b->limb[b->n - 1]);
	for (size_t i = b->n - 1; i-- > 0;)
		o += (size_t)snprintf(s + o, size - o, "%09u", b->limb[i]);
	return s;
}

static int digit_value(char c)
{
	if (is_digit(c))
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return c - 'A' + 10;
}

/* ---- Ruby's numeric conversions ----------------------------------------------------------- */

/*
 * Float(String), which raises on anything but a whole number (Ruby's object.c,
 * rb_cstr_to_dbl with badcheck): surrounding whitespace; a sign; decimal digits with single
 * underscores between them, a fraction that needs a digit on both sides of the point when
 * there is an integer part ("1." and "1.e5" are errors, ".5" is not), an exponent; or
 * hexadecimal "0x1A", "0x1.8p1" (a hexadecimal fraction needs an exponent). Returns -1 where
 * Ruby raises ArgumentError.
 */
static size_t scan_digit_run(const char *s, size_t n, size_t i, bool hex, char *out, size_t *o)
{
	size_t start = i;

	while (i < n) {
		if (hex ? is_xdigit(s[i]) : is_digit(s[i])) {
			out[(*o)++] = s[i++];
		} else if (s[i] == '_' && i > start && i + 1 < n &&
		           (hex ? is_xdigit(s[i + 1]) : is_digit(s[i + 1]))) {
			i++;
		} else {
			break;
		}
	}
	return i - start;
}

static int ruby_float_strict(const char *s, size_t n, double *ret)
{
	_cleanup_free_ char *buf = malloc(n + 1);
	size_t i = 0, o = 0, k;

	if (!buf)
		return -ENOMEM;
	while (i < n && is_space(s[i]))
		i++;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		buf[o++] = s[i++];
	if (i + 1 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X')) {
		buf[o++] = '0';
		buf[o++] = 'x';
		i += 2;
		k = scan_digit_run(s, n, i, true, buf, &o);
		if (k == 0)
			return -EINVAL;
		i += k;
		if (i < n && s[i] == '.') {
			buf[o++] = s[i++];
			k = scan_digit_run(s, n, i, true, buf, &o);
			if (k == 0 || i + k >= n || (s[i + k] != 'p' && s[i + k] != 'P'))
				return -EINVAL;
			i += k;
		}
		if (i < n && (s[i] == 'p' || s[i] == 'P')) {
			buf[o++] = s[i++];
			if (i < n && (s[i] == '+' || s[i] == '-'))
				buf[o++] = s[i++];
			k = scan_digit_run(s, n, i, false, buf, &o);
			if (k == 0)
				return -EINVAL;
			i += k;
		}
	} else {
		k = scan_digit_run(s, n, i, false, buf, &o);
		i += k;
		if (i < n && s[i] == '.') {
			buf[o++] = s[i++];
			k = scan_digit_run(s, n, i, false, buf, &o);
			if (k == 0)
				return -EINVAL;
			i += k;
		} else if (k == 0) {
			return -EINVAL;
		}
		if (i < n && (s[i] == 'e' || s[i] == 'E')) {
			buf[o++] = s[i++];
			if (i < n && (s[i] == '+' || s[i] == '-'))
				buf[o++] = s[i++];
			k = scan_digit_run(s, n, i, false, buf, &o);
			if (k == 0)
				return -EINVAL;
			i += k;
		}
	}
	while (i < n && is_space(s[i]))
		i++;
	if (i != n)
		return -EINVAL;
	buf[o] = '\0';
	*ret = strtod(buf, NULL); /* overflow gives +-HUGE_VAL = Infinity, as in Ruby */
	return 0;
}

/*
 * String#to_f for the parts of a base-60 float, which tokenize's expression limits to
 * [-+]?[0-9][0-9_]* and [0-9]{1,2}\.[0-9_]*. Ruby's non-raising conversion reads what strtod
 * reads; at an underscore it copies the string into a buffer without the underscores that
 * sit between two digits, stops at any other, and keeps at most 60 characters (DBL_DIG * 4).
 * Yes: "1_" followed by seventy zeros is 1.0e+59 in Ruby 3.1, and here.
 */
static double ruby_to_f(const char *s, size_t n)
{
	char buf[64];
	size_t i = 0, o = 0, end = 0;
	const size_t keep = 60;
	char prev = 0;
	int dot_seen = 0;

	/* What Ruby's strtod reads: sign, digits, and a point only when a digit follows it. */
	if (end < n && (s[end] == '+' || s[end] == '-'))
		end++;
	end += count_digits(s, n, end);
	if (end + 1 < n && s[end] == '.' && is_digit(s[end + 1])) {
		end++;
		end += count_digits(s, n, end);
	}
	if (end == n) {
		_cleanup_free_ char *whole = strndup(s, n);
		return whole ? strtod(whole, NULL) : 0.0;
	}
	if (s[i] == '+' || s[i] == '-')
		prev = buf[o++] = s[i++];
	if (i < n && s[i] == '0') {
		prev = buf[o++] = '0';
		while (++i < n && s[i] == '0')
			;
	}
	while (i < end && o < keep)
		prev = buf[o++] = s[i++];
	while (i < n) {
		if (s[i] == '_') {
			if (o == 0 || !is_digit(prev) || (++i, i >= n || !is_digit(s[i])))
				break;
		}
		prev = s[i++];
		if (prev == '.' ? dot_seen++ : !is_digit(prev))
			break;
		if (o < keep)
			buf[o++] = prev;
	}
	buf[o] = '\0';
	return strtod(buf, NULL);
}

/*
 * Float#to_s (numeric.c flo_to_s): the shortest digits that read back as the same double;
 * plain notation when some digits fall after the point ("3524835297308365.5") or the point
 * is at most 15 digits in ("100000000000000.0") or at most 3 zeros out ("0.0001"), else
 * "1.0e+15", "1.234567890123456e+15", "1.0e-05", "5.0e-324"; "Infinity", "-Infinity", "NaN".
 */
static char *ruby_float_to_s(double d)
{
	char e[40], digits[24], out[64];
	size_t nd = 0, o = 0;
	int decpt, exp10;
	char *p;

	if (isnan(d))
		return strdup("NaN");
	if (isinf(d))
		return strdup(d > 0 ? "Infinity" : "-Infinity");
	if (d == 0)
		return strdup(signbit(d) ? "-0.0" : "0.0");
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(e, sizeof(e), "%.*e", prec - 1, fabs(d));
		if (strtod(e, NULL) == fabs(d))
			break;
	}
	for (p = e; *p && *p != 'e'; p++)
		if (is_digit(*p))
			digits[nd++] = *p;
	exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	decpt = exp10 + 1;

	if (signbit(d))
		out[o++] = '-';
	if (decpt > 0 && ((size_t)decpt < nd || decpt <= 15)) {
		for (int i = 0; i < decpt; i++)
			out[o++] = (size_t)i < nd ? digits[i] : '0';
		out[o++] = '.';
		if ((size_t)decpt < nd)
			for (size_t i = (size_t)decpt; i < nd; i++)
				out[o++] = digits[i];
		else
			out[o++] = '0';
		out[o] = '\0';
	} else if (decpt <= 0 && decpt > -4) {
		out[o++] = '0';
		out[o++] = '.';
		for (int i = 0; i < -decpt; i++)
			out[o++] = '0';
		memcpy(out + o, digits, nd);
		out[o + nd] = '\0';
	} else {
		out[o++] = digits[0];
		out[o++] = '.';
		if (nd > 1) {
			memcpy(out + o, digits + 1, nd - 1);
			o += nd - 1;
		} else {
			out[o++] = '0';
		}
		snprintf(out + o, sizeof(out) - o, "e%+03d", decpt - 1);
	}
	return strdup(out);
}

static int set_float(struct resolved *r, double d, struct err *err)
{
	return set_owned(r, YAML_KIND_FLOAT, ruby_float_to_s(d), err);
}

/* ---- tokenize's numeric branches ---------------------------------------------------------- */

/*
 * /^[-+]?[0-9][0-9_]*(:[0-5]?[0-9]){1,2}$/ (integer) and the same followed by \.[0-9_]*
 * (float). Returns the number of parts (2 or 3) or 0; *is_float says which form matched.
 */
static int match_base60(const char *s, size_t n, size_t starts[3], bool *is_float)
{
	size_t i = 0, k;
	int parts = 1;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i >= n || !is_digit(s[i]))
		return 0;
	while (i < n && (is_digit(s[i]) || s[i] == '_'))
		i++;
	starts[0] = 0;
	while (i < n && s[i] == ':') {
		if (parts == 3)
			return 0;
		i++;
		k = count_digits(s, n, i);
		if (k < 1 || k > 2 || (k == 2 && s[i] > '5'))
			return 0;
		starts[parts++] = i;
		i += k;
	}
	if (parts < 2)
		return 0;
	*is_float = false;
	if (i == n)
		return parts;
	if (s[i] != '.')
		return 0;
	for (i++; i < n; i++)
		if (!is_digit(s[i]) && s[i] != '_')
			return 0;
	*is_float = true;
	return parts;
}

/* String#to_i: sign, digits with single underscores between them. */
static void ruby_to_i(const char *s, size_t n, struct big *b, bool *negative)
{
	size_t i = 0;

	*negative = false;
	if (i < n && (s[i] == '+' || s[i] == '-'))
		*negative = s[i++] == '-';
	for (; i < n; i++) {
		if (is_digit(s[i]))
			big_mul_add(b, 10, (uint32_t)(s[i] - '0'));
		else if (s[i] == '_' && i + 1 < n && is_digit(s[i + 1]))
			continue;
		else
			break;
	}
}

/*
 * i = 0; string.split(':').each_with_index { |n, e| i += n.to_i * 60 ** (e - 2).abs }
 * The first part always counts 3600 times ("12:30" is 45000), and only its own sign applies:
 * "-1:30" is -3600 + 1800.
 */
static int base60(const char *s, size_t n, int parts, const size_t starts[3], bool is_float,
                  struct resolved *r, struct err *err)
{
	static const uint32_t weight[3] = {3600, 60, 1};
	size_t first_len = starts[1] - 1;

	if (is_float) {
		double acc = 0;
		for (int p = 0; p < parts; p++) {
			size_t end = p + 1 < parts ? starts[p + 1] - 1 : n;
			acc += ruby_to_f(s + starts[p], end - starts[p]) * (double)weight[p];
		}
		return set_float(r, acc, err);
	}

	struct big b;
	bool negative;
	uint32_t rest = 0;
	char *t;

	if (big_init(&b, n) < 0)
		return oom(err);
	ruby_to_i(s, first_len, &b, &negative);
	big_mul_add(&b, 3600, 0);
	for (int p = 1; p < parts; p++) {
		size_t end = p + 1 < parts ? starts[p + 1] - 1 : n;
		uint32_t v = 0;
		for (size_t i = starts[p]; i < end; i++)
			v = v * 10 + (uint32_t)(s[i] - '0');
		rest += v * weight[p];
	}
	if (!negative || big_is_zero(&b)) {
		big_mul_add(&b, 1, rest);
		t = big_to_string(&b, false);
	} else {
		big_sub_small(&b, rest); /* |first| * 3600 > 3599 >= rest */
		t = big_to_string(&b, true);
	}
	big_dispose(&b);
	return set_owned(r, YAML_KIND_INT, t, err);
}

/*
 * FLOAT = /^(?:[-+]?([0-9][0-9_,]*)?\.[0-9]*([eE][-+][0-9]+)?)$/, but not /\A[-+]?\.\Z/;
 * converted with Float(string.gsub(/[,_]|\.([Ee]|$)/, '\1')).
 */
static bool match_float(const char *s, size_t n)
{
	size_t i = 0;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i < n && is_digit(s[i]))
		while (i < n && (is_digit(s[i]) || s[i] == '_' || s[i] == ','))
			i++;
	if (i >= n || s[i] != '.')
		return false;
	if (i + 1 == n && (i == 0 || ((s[0] == '+' || s[0] == '-') && i == 1)))
		return false;
	i++;
	i += count_digits(s, n, i);
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		i++;
		if (i >= n || (s[i] != '+' && s[i] != '-'))
			return false;
		i++;
		if (count_digits(s, n, i) == 0)
			return false;
		i += count_digits(s, n, i);
	}
	return i == n;
}

static int float_branch(const char *s, size_t n, struct resolved *r, struct err *err)
{
	_cleanup_free_ char *clean = malloc(n + 1);
	size_t o = 0;
	double d;
	int k;

	if (!clean)
		return oom(err);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == ',' || s[i] == '_')
			continue;
		if (s[i] == '.' && (i + 1 == n || s[i + 1] == 'e' || s[i + 1] == 'E'))
			continue;
		clean[o++] = s[i];
	}
	k = ruby_float_strict(clean, o, &d);
	if (k == -ENOMEM)
		return oom(err);
	if (k < 0) /* ".e+3" becomes "e+3" */
		return refuse(err, "not a valid number; quote it to keep it as text");
	return set_float(r, d, err);
}

/*
 * INTEGER = /^(?:[-+]?0b[0-1_,]+ |[-+]?0[0-7_,]+ |[-+]?(?:0|[1-9](?:[0-9]|,[0-9]|_[0-9])*)
 *              |[-+]?0x[0-9a-fA-F_,]+)$/x
 * Returns the base, or 0.
 */
static int match_integer(const char *s, size_t n)
{
	size_t i = 0, j;

	if (i < n && (s[i] == '+' || s[i] == '-'))
		i++;
	if (i >= n || !is_digit(s[i]))
		return 0;
	if (s[i] == '0') {
		if (i + 1 == n)
			return 10;
		if (s[i + 1] == 'b' || s[i + 1] == 'x') {
			bool hex = s[i + 1] == 'x';
			if (i + 2 == n)
				return 0;
			for (j = i + 2; j < n; j++)
				if (!(hex ? is_xdigit(s[j]) : (s[j] == '0' || s[j] == '1')) &&
				    s[j] != '_' && s[j] != ',')
					return 0;
			return hex ? 16 : 2;
		}
		for (j = i + 1; j < n; j++)
			if (!(s[j] >= '0' && s[j] <= '7') && s[j] != '_' && s[j] != ',')
				return 0;
		return 8;
	}
	for (j = i + 1; j < n; j++) {
		if (is_digit(s[j]))
			continue;
		if ((s[j] == ',' || s[j] == '_') && j + 1 < n && is_digit(s[j + 1])) {
			j++;
			continue;
		}
		return 0;
	}
	return 10;
}

/* Integer(string.gsub(/[,_]/, '')): "0b" or "0x" with no digits left raise ArgumentError. */
static int integer_branch(const char *s, size_t n, int base, struct resolved *r, struct err *err)
{
	struct big b;
	bool negative = false, any = false;
	size_t i = 0;
	char *t;

	if (s[0] == '+' || s[0] == '-')
		negative = s[i++] == '-';
	if (base != 10)
		i += base == 8 ? 1 : 2;
	if (big_init(&b, n) < 0)
		return oom(err);
	for (; i < n; i++) {
		if (s[i] == ',' || s[i] == '_')
			continue;
		big_mul_add(&b, (uint32_t)base, (uint32_t)digit_value(s[i]));
		any = true;
	}
	if (!any && base != 8 && base != 10) {
		big_dispose(&b);
		return refuse(err, "not a valid number; quote it to keep it as text");
	}
	t = big_to_string(&b, negative);
	big_dispose(&b);
	return set_owned(r, YAML_KIND_INT, t, err);
}

/* ---- ScalarScanner#tokenize ----------------------------------------------------------------- */

static int tokenize(const char *s, size_t n, struct resolved *r, struct err *err)
{
	enum word w;
	size_t starts[3];
	bool is_float;
	int parts, base;

	if (n == 0) {
		r->kind = YAML_KIND_NULL;
		r->text = NULL;
		return 0;
	}
	w = memchr(s, '\n', n) ? multi_line_word(s, n) : single_line_word(s, n);
	if (w == WORD_NULL) {
		r->kind = YAML_KIND_NULL;
		r->text = NULL;
		return 0;
	}
	if (w == WORD_TRUE || w == WORD_FALSE)
		return set_text(r, YAML_KIND_BOOL, w == WORD_TRUE ? "true" : "false",
		                w == WORD_TRUE ? 4 : 5, err);
	if (memchr(s, '\n', n))
		return set_text(r, YAML_KIND_STR, s, n, err);

	if (is_time(s, n))
		return refuse(err, "a time is not a string; quote it to keep it as text");
	if (is_date(s, n))
		return refuse(err, "a date is not a string; quote it to keep it as text");
	if (ieq(s, n, ".inf") || ieq(s, n, "+.inf"))
		return set_float(r, INFINITY, err);
	if (ieq(s, n, "-.inf"))
		return set_float(r, -INFINITY, err);
	if (ieq(s, n, ".nan"))
		return set_float(r, NAN, err);
	if (n >= 2 && s[0] == ':')
		return refuse(err, "a Ruby symbol is not a string; quote it to keep it as text");

	parts = match_base60(s, n, starts, &is_float);
	base = parts ? 0 : match_integer(s, n);
	if (parts || base || match_float(s, n)) {
		if (n > YAML_SCALAR_NUMBER_MAX)
			return refuse(err, "a number longer than 4096 characters is not converted; "
			                   "quote it to keep it as text");
		if (parts)
			return base60(s, n, parts, starts, is_float, r, err);
		if (base)
			return integer_branch(s, n, base, r, err);
		return float_branch(s, n, r, err);
	}
	return set_text(r, YAML_KIND_STR, s, n, err);
}

/* ---- ToRuby#deserialize: tags --------------------------------------------------------------- */

/*
 * String#unpack('m'), the lenient base64 decoder Psych uses for !!binary: characters outside
 * the alphabet are skipped, '=' ends a group, a trailing partial group gives what it can.
 */
static int b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

static char *unpack_base64(const char *s, size_t n, size_t *ret_len)
{
	char *out = malloc(n / 4 * 3 + 4);
	size_t i = 0, o = 0;
	int a = -1, b = -1, c = -1, d = -1;

	if (!out)
		return NULL;
	while (i < n) {
		a = b = c = d = -1;
		while (i < n && (a = b64_value((unsigned char)s[i])) == -1)
			i++;
		if (i >= n)
			break;
		i++;
		while (i < n && (b = b64_value((unsigned char)s[i])) == -1)
			i++;
		if (i >= n)
			break;
		i++;
		while (i < n && (c = b64_value((unsigned char)s[i])) == -1 && s[i] != '=')
			i++;
		if (i >= n || s[i] == '=')
			break;
		i++;
		while (i < n && (d = b64_value((unsigned char)s[i])) == -1 && s[i] != '=')
			i++;
		if (i >= n || s[i] == '=')
			break;
		i++;
		out[o++] = (char)(a << 2 | b >> 4);
		out[o++] = (char)(b << 4 | c >> 2);
		out[o++] = (char)(c << 6 | d);
		a = -1;
	}
	if (a != -1 && b != -1) {
		out[o++] = (char)(a << 2 | b >> 4);
		if (c != -1)
			out[o++] = (char)(b << 4 | c >> 2);
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

static bool tag_is(const char *tag, const char *a, const char *b)
{
	return strcmp(tag, a) == 0 || (b && strcmp(tag, b) == 0);
}

/* /^!(?:str|ruby\/string)(?::(.*))?$/ or tag:yaml.org,2002:str; *named: a class follows. */
static bool tag_is_str(const char *tag, bool *named)
{
	const char *rest = NULL;

	*named = false;
	if (strcmp(tag, TAG_PREFIX "str") == 0)
		return true;
	if (strncmp(tag, "!str", 4) == 0)
		rest = tag + 4;
	else if (strncmp(tag, "!ruby/string", 12) == 0)
		rest = tag + 12;
	if (!rest || (*rest != '\0' && *rest != ':'))
		return false;
	*named = *rest == ':' && rest[1] != '\0';
	return true;
}

/* Tags whose branch in deserialize asks the class loader for a class safe_load does not allow. */
static bool tag_is_ruby_class(const char *tag)
{
	static const char *const refused[] = {
	    "!ruby/object:BigDecimal", "!ruby/object:DateTime", "!ruby/object:Complex",
	    "!ruby/object:Rational",   "!ruby/regexp",          "!ruby/range",
	    "!ruby/encoding",
	};

	for (size_t i = 0; i < ELEMENTSOF(refused); i++)
		if (strcmp(tag, refused[i]) == 0)
			return true;
	return strncmp(tag, "!ruby/sym", 9) == 0;
}

/* Float(tokenize(value)) for !!float: integers and strings convert, true and nil raise. */
static int float_tag(const char *s, size_t n, struct resolved *r, struct err *err)
{
	struct resolved t = {0};
	_cleanup_free_ char *text = NULL;
	double d;
	int k;

	k = tokenize(s, n, &t, err);
	if (k < 0)
		return k;
	text = t.text;
	switch (t.kind) {
	case YAML_KIND_FLOAT:
		r->kind = YAML_KIND_FLOAT;
		r->text = TAKE_PTR(text);
		return 0;
	case YAML_KIND_INT:
		return set_float(r, strtod(text, NULL), err);
	case YAML_KIND_STR:
		k = ruby_float_strict(text, strlen(text), &d);
		if (k == -ENOMEM)
			return oom(err);
		if (k < 0)
			return refuse(err, "!!float needs a number");
		return set_float(r, d, err);
	default:
		return refuse(err, "!!float needs a number");
	}
}

int yaml_scalar_resolve(const char *value, size_t len, bool plain, const char *tag,
                        enum yaml_scalar_kind *ret_kind, char **ret, struct err *err)
{
	struct resolved r = {0};
	bool named;
	int k;

	if (!value)
		value = "";
	if (tag && tag_is(tag, "!binary", TAG_PREFIX "binary")) {
		size_t n;
		char *t = unpack_base64(value, len, &n);
		if (!t)
			return oom(err);
		if (memchr(t, '\0', n)) {
			free(t);
			return refuse(err, "a NUL character is not allowed");
		}
		*ret_kind = YAML_KIND_STR;
		*ret = t;
		return 0;
	}
	if (memchr(value, '\0', len))
		return refuse(err, "a NUL character is not allowed");

	if (!tag) {
		k = plain ? tokenize(value, len, &r, err)
		          : set_text(&r, YAML_KIND_STR, value, len, err);
	} else if (tag_is_str(tag, &named)) {
		if (named)
			return refuse(err, "a tag naming a Ruby class is not allowed");
		k = set_text(&r, YAML_KIND_STR, value, len, err);
	} else if (tag_is(tag, "!float", TAG_PREFIX "float")) {
		k = float_tag(value, len, &r, err);
	} else if (tag_is(tag, "!ruby/class", "!ruby/module")) {
		/* resolve_class("") is nil; any name is a class safe_load refuses */
		if (len > 0)
			return refuse(err, "a tag naming a Ruby class is not allowed");
		r.kind = YAML_KIND_NULL;
		k = 0;
	} else if (tag_is_ruby_class(tag)) {
		return refuse(err, "a tag naming a Ruby class is not allowed");
	} else {
		/* !!int, !!bool, !!null, "!", local tags...: deserialize's else branch */
		k = tokenize(value, len, &r, err);
	}
	if (k < 0)
		return k;
	*ret_kind = r.kind;
	*ret = r.text;
	return 0;
}

int yaml_scalar_to_env(const char *value, size_t len, bool plain, const char *tag, char **ret,
                       struct err *err)
{
	enum yaml_scalar_kind kind;
	char *text = NULL;
	int k;

	k = yaml_scalar_resolve(value, len, plain, tag, &kind, &text, err);
	if (k < 0)
		return k;
	if (kind == YAML_KIND_NULL)
		return refuse(err, "null is not a string");
	*ret = text;
	return 0;
}
