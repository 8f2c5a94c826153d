/* SPDX-License-Identifier: Apache-2.0 */
#include <check.h>
#include <ctype.h>
#include <curl/curl.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct scrubber *, scrub_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(struct scrub_stream *, scrub_stream_free)
#define _cleanup_scrubber_ _cleanup_(scrub_freep)
#define _cleanup_stream_ _cleanup_(scrub_stream_freep)

static const char TOKEN36[] = "abcdefghijklmnopqrstuvwxyz0123456789";

static struct scrubber *make(const char *const *secrets)
{
	struct scrubber *s = scrub_new();

	ck_assert_ptr_nonnull(s);
	for (; secrets && *secrets; secrets++)
		ck_assert_int_eq(scrub_add(s, *secrets, strlen(*secrets)), 0);
	return s;
}

static char *scrub(const struct scrubber *s, const char *in)
{
	size_t n;
	char *out = scrub_string(s, in, strlen(in), &n);

	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(strlen(out), n);
	return out;
}

#define ck_scrub(s, in, want)                                                                      \
	do {                                                                                       \
		_cleanup_free_ char *_o = scrub(s, in);                                            \
		ck_assert_str_eq(_o, want);                                                        \
	} while (0)

START_TEST(test_raw_secret)
{
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){"hunter2hunter2", NULL});

	ck_assert_uint_eq(scrub_count(s), 1);
	ck_scrub(s, "password=hunter2hunter2 ok", "password=[REDACTED] ok");
	ck_scrub(s, "hunter2hunter2hunter2hunter2", "[REDACTED]");
	ck_scrub(s, "hunter2hunter", "hunter2hunter");
	ck_scrub(s, "", "");
}
END_TEST

START_TEST(test_short_and_duplicate_secrets_ignored)
{
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){"1234567", NULL});

	ck_assert_uint_eq(scrub_count(s), 0);
	ck_scrub(s, "x 1234567 y", "x 1234567 y");
	ck_assert_int_eq(scrub_add(s, "12345678", 8), 0);
	ck_assert_int_eq(scrub_add(s, "12345678", 8), 0);
	ck_assert_uint_eq(scrub_count(s), 1);
	ck_scrub(s, "x 12345678 y", "x [REDACTED] y");
}
END_TEST

START_TEST(test_longest_first_and_overlaps)
{
	_cleanup_scrubber_ struct scrubber *s =
	    make((const char *[]){"abcdefgh", "XXabcdefghYY", "ghIJKLMNOP", NULL});

	/* The longer secret contains the shorter: masked whole, not "XX[REDACTED]YY". */
	ck_scrub(s, "<XXabcdefghYY>", "<[REDACTED]>");
	ck_scrub(s, "<abcdefgh>", "<[REDACTED]>");
	/* Overlapping secrets: the union is masked. */
	ck_scrub(s, "<abcdefghIJKLMNOP>", "<[REDACTED]>");
	/* Adjacent matches give one marker; separated ones two. */
	ck_scrub(s, "abcdefghabcdefgh abcdefgh", "[REDACTED] [REDACTED]");
}
END_TEST

START_TEST(test_binary_secret)
{
	_cleanup_scrubber_ struct scrubber *s = scrub_new();
	const char sec[] = "\0\1\2\3\xff\xfe\xfd\0\n";
	const char in[] = "a\0\1\2\3\xff\xfe\xfd\0\nb";
	_cleanup_free_ char *out = NULL;
	size_t n;

	ck_assert_int_eq(scrub_add(s, sec, sizeof(sec) - 1), 0);
	out = scrub_string(s, in, sizeof(in) - 1, &n);
	ck_assert_uint_eq(n, 12);
	ck_assert_mem_eq(out, "a[REDACTED]b", 12);
}
END_TEST

/* A secret written as UTF-16 (a Windows tool, a Java or .NET string dump), both byte orders. */
START_TEST(test_utf16)
{
	_cleanup_scrubber_ struct scrubber *s =
	    make((const char *[]){"sk-ant-h\xc3\xa9llo42", NULL});
	/* "x=" + the secret in UTF-16LE + "!", then the same in UTF-16BE */
	const char le[] = "x\0=\0s\0k\0-\0a\0n\0t\0-\0h\0\xe9\0l\0l\0o\0"
	                  "4\0"
	                  "2\0!\0";
	const char be[] = "\0x\0=\0s\0k\0-\0a\0n\0t\0-\0h\0\xe9\0l\0l\0o\0"
	                  "4\0"
	                  "2\0!";
	_cleanup_free_ char *out_le = NULL, *out_be = NULL;
	size_t n;

	/* Both byte orders match in either text, one code unit apart: their union is masked. */
	out_le = scrub_string(s, le, sizeof(le) - 1, &n);
	ck_assert_uint_eq(n, 3 + strlen(SCRUB_REDACTED) + 2);
	ck_assert_mem_eq(out_le, "x\0=[REDACTED]!\0", n);
	out_be = scrub_string(s, be, sizeof(be) - 1, &n);
	ck_assert_uint_eq(n, 4 + strlen(SCRUB_REDACTED) + 1);
	ck_assert_mem_eq(out_be, "\0x\0=[REDACTED]!", n);
}
END_TEST

static void lower_hex(char *p)
{
	for (; *p; p++)
		if (*p == '%' && p[1] && p[2]) {
			p[1] = (char)tolower((unsigned char)p[1]);
			p[2] = (char)tolower((unsigned char)p[2]);
		}
}

static void check_in_template(const struct scrubber *s, const char *fmt, const char *val,
                              const char *want)
{
	_cleanup_free_ char *in = NULL, *out = NULL;

	ck_assert(asprintf(&in, fmt, val, val) > 0);
	out = scrub(s, in);
	ck_assert_str_eq(out, want);
}

START_TEST(test_url_encoded)
{
	const char *sec = "p@ss w/rd+&=~x!*(y)";
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){sec, NULL});
	CURL *curl = curl_easy_init();
	char *esc = curl_easy_escape(curl, sec, 0);

	ck_assert_ptr_nonnull(esc);
	ck_assert_ptr_nonnull(strstr(esc, "%40"));
	check_in_template(s, "url=https://x:%s@h/ q=%s", esc,
	                  "url=https://x:[REDACTED]@h/ q=[REDACTED]");
	lower_hex(esc);
	check_in_template(s, "q=%s&%s", esc, "q=[REDACTED]&[REDACTED]");
	curl_free(esc);
	curl_easy_cleanup(curl);

	/* A form encoder: '+' for the space; JavaScript's encodeURIComponent keeps !'()*. */
	ck_scrub(s, "f=p%40ss+w%2Frd%2B%26%3D~x%21%2A%28y%29;", "f=[REDACTED];");
	ck_scrub(s, "f=p%40ss%20w%2Frd%2B%26%3D~x!*(y);", "f=[REDACTED];");
	/* Python's quote keeps '/'. */
	ck_scrub(s, "f=p%40ss%20w/rd%2B%26%3D~x%21%2A%28y%29;", "f=[REDACTED];");
	/* Java's URLEncoder: '*' kept, '~' encoded, '+' for the space. */
	ck_scrub(s, "f=p%40ss+w%2Frd%2B%26%3D%7Ex%21*%28y%29;", "f=[REDACTED];");
}
END_TEST

static void b64(const void *bin, size_t n, int variant, char *out, size_t outlen)
{
	ck_assert_ptr_nonnull(sodium_bin2base64(out, outlen, bin, n, variant));
}

START_TEST(test_base64_whole)
{
	/* 0xfb 0xff bytes give '+' and '/' in the standard alphabet, '-' and '_' in URL-safe. */
	const char sec[] = "\xfb\xff\xfe secret-value\xfb\xff";
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){sec, NULL});
	const int variants[] = {
	    sodium_base64_VARIANT_ORIGINAL, sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
	    sodium_base64_VARIANT_URLSAFE, sodium_base64_VARIANT_URLSAFE_NO_PADDING};

	for (size_t v = 0; v < ELEMENTSOF(variants); v++) {
		char enc[128], in[160];
		_cleanup_free_ char *out = NULL;

		b64(sec, strlen(sec), variants[v], enc, sizeof(enc));
		snprintf(in, sizeof(in), "Authorization: %s\n", enc);
		out = scrub(s, in);
		ck_assert_msg(strcmp(out, "Authorization: [REDACTED]\n") == 0, "variant %d: %s",
		              variants[v], out);
	}
}
END_TEST

/*
 * A secret inside a longer base64 stream, at every alignment: every character that depends on
 * the secret alone must be masked.
 */
START_TEST(test_base64_embedded_every_alignment)
{
	const char *sec = "s3cr3t-p4ss:w0rd";
	size_t n = strlen(sec);
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){sec, NULL});

	for (size_t pre = 0; pre < 9; pre++)
		for (size_t post = 0; post < 4; post++)
			for (int url = 0; url < 2; url++) {
				uint8_t bin[64];
				char enc[128];
				_cleanup_free_ char *out = NULL;
				const char *red;
				size_t first = (8 * pre + 5) / 6, end = (8 * (pre + n)) / 6;
				size_t a, tail;

				memset(bin, 0, sizeof(bin));
				memcpy(bin, "user:pass", pre < 9 ? pre : 9);
				memcpy(bin + pre, sec, n);
				memcpy(bin + pre + n, "\xfa\x01\x02", post);
				b64(bin, pre + n + post,
				    url ? sodium_base64_VARIANT_URLSAFE
				        : sodium_base64_VARIANT_ORIGINAL,
				    enc, sizeof(enc));
				out = scrub(s, enc);
				red = strstr(out, SCRUB_REDACTED);
				ck_assert_msg(red, "pre %zu post %zu: %s -> %s", pre, post, enc,
				              out);
				a = (size_t)(red - out);
				tail = strlen(red + strlen(SCRUB_REDACTED));
				/* Kept before: at most the characters not fully inside the secret.
				 */
				ck_assert_msg(a <= first, "pre %zu: %s -> %s", pre, enc, out);
				ck_assert_msg(strncmp(out, enc, a) == 0, "prefix changed: %s", out);
				ck_assert_msg(strlen(enc) - tail >= end, "post %zu: %s -> %s", post,
				              enc, out);
				ck_assert_str_eq(red + strlen(SCRUB_REDACTED),
				                 enc + strlen(enc) - tail);
			}
}
END_TEST

START_TEST(test_github_tokens)
{
	_cleanup_scrubber_ struct scrubber *s = make(NULL);
	const char *prefixes[] = {"ghp_", "gho_", "ghu_", "ghs_", "ghr_"};
	char in[512], want[512];

	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		snprintf(in, sizeof(in), "token=%s%s;", prefixes[i], TOKEN36);
		ck_scrub(s, in, "token=[REDACTED];");
		/* 35 characters: not a token. */
		snprintf(in, sizeof(in), "token=%s%.35s;", prefixes[i], TOKEN36);
		ck_scrub(s, in, in);
	}
	snprintf(in, sizeof(in), "gha_%s ghp-%s", TOKEN36, TOKEN36);
	ck_scrub(s, in, in);
	ck_scrub(s, "x github_pat_11ABCDEFG0123456789_ab y", "x [REDACTED] y");
	ck_scrub(s, "x github_pat_11ABCDEFG0123456789_a y", "x github_pat_11ABCDEFG0123456789_a y");
	/* Masked to the end of the run, however long; the text before the prefix stays. */
	memset(in, 'A', sizeof(in));
	memcpy(in, "xyghs_", 6);
	memcpy(in + 400, "-end", 5);
	ck_scrub(s, in, "xy[REDACTED]-end");
	snprintf(in, sizeof(in), "https://x-access-token:ghs_%s@github.com/o/r.git", TOKEN36);
	snprintf(want, sizeof(want), "https://x-access-token:[REDACTED]@github.com/o/r.git");
	ck_scrub(s, in, want);
}
END_TEST

/* ---- streams ---- */

struct collect {
	char *buf;
	size_t len;
	int fail_after; /* fail the n-th call (1-based), 0 never */
	int calls;
};

static int collect_sink(void *userdata, const char *buf, size_t len)
{
	struct collect *c = userdata;

	c->calls++;
	if (c->fail_after && c->calls >= c->fail_after)
		return -EIO;
	c->buf = realloc(c->buf, c->len + len + 1);
	ck_assert_ptr_nonnull(c->buf);
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	c->buf[c->len] = '\0';
	return 0;
}

/* Stream in at the given cut points (sorted), return what the sink got. */
static char *stream_cuts(const struct scrubber *s, const char *in, size_t len, const size_t *cuts,
                         size_t ncuts, size_t *ret_len)
{
	struct collect c = {0};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, collect_sink, &c);
	size_t prev = 0;

	ck_assert_ptr_nonnull(st);
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		ck_assert_int_eq(scrub_stream_write(st, in + prev, end - prev), 0);
		prev = end;
	}
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	*ret_len = c.len;
	return c.buf ? c.buf : strdup("");
}

static void assert_stream_equals_string(const struct scrubber *s, const char *in, size_t len,
                                        const size_t *cuts, size_t ncuts)
{
	size_t wn, gn;
	_cleanup_free_ char *want = scrub_string(s, in, len, &wn);
	_cleanup_free_ char *got = stream_cuts(s, in, len, cuts, ncuts, &gn);

	ck_assert_msg(wn == gn && memcmp(want, got, wn) == 0, "cuts %zu first %zu: '%s' vs '%s'",
	              ncuts, ncuts ? cuts[0] : 0, want, got);
}

START_TEST(test_stream_every_split)
{
	const char *sec = "correct horse battery staple";
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){sec, "abcdefgh", NULL});
	char in[512];
	size_t len;

	len = (size_t)snprintf(
	    in, sizeof(in),
	    "a=correct horse battery staple b=correct%%20horse%%20battery%%20"
	    "staple c=Y29ycmVjdCBob3JzZSBiYXR0ZXJ5IHN0YXBsZQ== d=ghp_%s e=abcdefgh!",
	    TOKEN36);
	for (size_t i = 0; i <= len; i++) {
		size_t one[1] = {i};
		_cleanup_free_ char *got = NULL;
		size_t gn;

		assert_stream_equals_string(s, in, len, one, 1);
		got = stream_cuts(s, in, len, one, 1, &gn);
		ck_assert_str_eq(got, "a=[REDACTED] b=[REDACTED] c=[REDACTED] d=[REDACTED] "
		                      "e=[REDACTED]!");
		for (size_t j = i; j <= len; j += 7) {
			size_t two[2] = {i, j};
			assert_stream_equals_string(s, in, len, two, 2);
		}
	}
}
END_TEST

START_TEST(test_stream_holdback_bound)
{
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){"0123456789abcdef", NULL});
	struct collect c = {0};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, collect_sink, &c);
	size_t hold = scrub_holdback(s), total = 0;
	char chunk[7] = "zzzzzz\n";

	/* The longest pattern (URL-safe base64 of 16 bytes, 24 chars) is under 40. */
	ck_assert_uint_eq(hold, 39);
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(scrub_stream_write(st, chunk, sizeof(chunk)), 0);
		total += sizeof(chunk);
		ck_assert_uint_ge(c.len + hold, total);
	}
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	ck_assert_uint_eq(c.len, total);

	/* A longer secret raises the bound, also for a stream already running. */
	char big[200];
	memset(big, 'q', sizeof(big));
	ck_assert_int_eq(scrub_add(s, big, sizeof(big)), 0);
	hold = scrub_holdback(s);
	ck_assert_uint_ge(hold, 199);
	ck_assert_uint_le(hold, 4 * sizeof(big));
	c.len = 0;
	for (int i = 0; i < 100; i++) {
		ck_assert_int_eq(scrub_stream_write(st, chunk, sizeof(chunk)), 0);
		ck_assert_uint_ge(c.len + hold, (size_t)(i + 1) * sizeof(chunk));
	}
	ck_assert_int_eq(scrub_stream_write(st, big, 100), 0);
	ck_assert_int_eq(scrub_stream_write(st, big, 100), 0);
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	ck_assert_ptr_nonnull(strstr(c.buf, "z\n[REDACTED]"));
	free(c.buf);
}
END_TEST

/* A complete line passes at once; a partial one waits for its end or for the flush. */
START_TEST(test_stream_passes_whole_lines_at_once)
{
	_cleanup_scrubber_ struct scrubber *s = make((const char *[]){"0123456789abcdef", NULL});
	struct collect c = {0};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, collect_sink, &c);

	ck_assert_int_eq(scrub_stream_write(st, "listening on 3000\n", 18), 0);
	ck_assert_uint_eq(c.len, 18);
	ck_assert_int_eq(scrub_stream_write(st, "key 01234567", 12), 0);
	ck_assert_uint_eq(c.len, 18);
	ck_assert_int_eq(scrub_stream_write(st, "89abcdef done\n", 14), 0);
	ck_assert_str_eq(c.buf, "listening on 3000\nkey [REDACTED] done\n");
	free(c.buf);
}
END_TEST

/* With a secret that spans lines, a line end is not a safe point: output is held back. */
START_TEST(test_stream_holds_lines_for_multiline_secrets)
{
	_cleanup_scrubber_ struct scrubber *s =
	    make((const char *[]){"-----BEGIN KEY-----\nabcdefgh\n-----END KEY-----", NULL});
	struct collect c = {0};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, collect_sink, &c);

	ck_assert_int_eq(scrub_stream_write(st, "-----BEGIN KEY-----\n", 20), 0);
	ck_assert_int_eq(scrub_stream_write(st, "abcdefgh\n", 9), 0);
	ck_assert_int_eq(scrub_stream_write(st, "-----END KEY-----\n", 18), 0);
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	ck_assert_str_eq(c.buf, "[REDACTED]\n");
	free(c.buf);
}
END_TEST

START_TEST(test_stream_sink_error)
{
	_cleanup_scrubber_ struct scrubber *s = make(NULL);
	struct collect c = {.fail_after = 2};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, collect_sink, &c);
	char line[100];

	memset(line, 'x', sizeof(line));
	ck_assert_int_eq(scrub_stream_write(st, line, sizeof(line)), 0);
	ck_assert_int_eq(scrub_stream_write(st, line, sizeof(line)), -EIO);
	ck_assert_int_eq(scrub_stream_write(st, line, sizeof(line)), -EIO);
	ck_assert_int_eq(scrub_stream_flush(st), -EIO);
	free(c.buf);
}
END_TEST

/*
 * The scrubber keeps its regions and rebuilds its index over the old one while it fits: every
 * secret added so far is still masked after each add, through sizes that grow the regions (a
 * secret of 3000 bytes among short ones), and one not added yet is not.
 */
START_TEST(test_secrets_added_one_by_one)
{
	_cleanup_scrubber_ struct scrubber *s = make(NULL);
	char secrets[40][3001];

	for (int i = 0; i < 40; i++) {
		size_t n = i == 20 ? 3000 : 8 + (size_t)(i * 37) % 300;
		for (size_t k = 0; k < n; k++)
			secrets[i][k] = (char)('a' + (i * 7 + k * 13 + k / 26) % 26);
		memcpy(secrets[i], "S", 1);
		secrets[i][1] = (char)('A' + i % 26);
		secrets[i][2] = (char)('0' + i / 26);
		secrets[i][n] = '\0';
	}
	for (int i = 0; i < 40; i++) {
		ck_assert_int_eq(scrub_add(s, secrets[i], strlen(secrets[i])), 0);
		ck_assert_uint_eq(scrub_count(s), (size_t)i + 1);
		for (int j = 0; j < 40; j++) {
			_cleanup_free_ char *in = NULL, *out = NULL;
			ck_assert_int_gt(asprintf(&in, "<%s>", secrets[j]), 0);
			out = scrub(s, in);
			if (j <= i)
				ck_assert_str_eq(out, "<" SCRUB_REDACTED ">");
			else
				ck_assert_str_eq(out, in);
		}
	}
}
END_TEST

/*
 * A stream freed is kept for the next one made from the same scrubber: nothing of the first
 * reaches the second, neither the half of a secret it held back (which, carried over, would
 * join the second's bytes into the whole secret and mask them), nor its sink's failure, nor its
 * sink. (The window's wipe itself is not visible through the API.)
 */
START_TEST(test_stream_reused_carries_nothing)
{
	static const char secret[] = "s3cr3t-value-0123456789";
	const char *const secrets[] = {secret, NULL};
	_cleanup_scrubber_ struct scrubber *s = make(secrets);
	struct collect a = {0}, b = {.fail_after = 2}, c = {0};
	struct scrub_stream *first, *second, *third;
	char line[200];

	first = scrub_stream_new(s, collect_sink, &a);
	ck_assert_ptr_nonnull(first);
	ck_assert_int_eq(scrub_stream_write(first, "held:s3cr3t-val", 15), 0); /* all held back */
	ck_assert_ptr_null(a.buf);
	scrub_stream_free(first);

	second = scrub_stream_new(s, collect_sink, &b);
	ck_assert_ptr_eq(second, first); /* the same stream, made new: what this test is about */
	memset(line, 'x', sizeof(line));
	ck_assert_int_eq(scrub_stream_write(second, "ue-0123456789 then ", 19), 0);
	scrub_stream_write(second, line, sizeof(line)); /* its sink's second call fails */
	ck_assert_int_eq(scrub_stream_flush(second), -EIO);
	/* Unmasked: the first stream's "s3cr3t-val" did not come before its bytes. */
	ck_assert_ptr_nonnull(b.buf);
	ck_assert_int_eq(strncmp(b.buf, "ue-0123456789 then ", 19), 0);
	free(b.buf);
	scrub_stream_free(second);

	third = scrub_stream_new(s, collect_sink, &c);
	ck_assert_ptr_eq(third, first);
	ck_assert_int_eq(scrub_stream_write(third, "ue-0123456789 then ", 19), 0);
	ck_assert_int_eq(scrub_stream_write(third, secret, strlen(secret)), 0);
	ck_assert_int_eq(scrub_stream_flush(third), 0);
	/* Nothing of the second's (its held bytes, its failure) came before the third's. */
	ck_assert_str_eq(c.buf, "ue-0123456789 then " SCRUB_REDACTED);
	ck_assert_ptr_null(a.buf);
	scrub_stream_free(third);
	free(c.buf);
}
END_TEST

struct adding_sink {
	struct scrubber *s;
	int added;
};

static int adding_sink(void *userdata, const char *buf, size_t len)
{
	struct adding_sink *a = userdata;

	(void)buf;
	(void)len;
	a->added = scrub_add(a->s, "a-secret-added-meanwhile", 24);
	return 0;
}

/* A secret added while a scrub runs (here by its sink) is refused: the index stays whole. */
START_TEST(test_add_during_a_scrub_is_refused)
{
	const char *const secrets[] = {"first-secret-value", NULL};
	_cleanup_scrubber_ struct scrubber *s = make(secrets);
	struct adding_sink a = {.s = s};
	_cleanup_stream_ struct scrub_stream *st = scrub_stream_new(s, adding_sink, &a);
	char line[100];

	memset(line, 'y', sizeof(line));
	line[sizeof(line) - 1] = '\n';
	ck_assert_int_eq(scrub_stream_write(st, line, sizeof(line)), 0);
	ck_assert_int_eq(scrub_stream_flush(st), 0);
	ck_assert_int_eq(a.added, -EBUSY);
	ck_assert_uint_eq(scrub_count(s), 1);
	ck_scrub(s, "first-secret-value", SCRUB_REDACTED);
	/* Outside a scrub the same add goes in. */
	ck_assert_int_eq(scrub_add(s, "a-secret-added-meanwhile", 24), 0);
	ck_scrub(s, "a-secret-added-meanwhile", SCRUB_REDACTED);
}
END_TEST

/* ---- property: random inputs, random splits, against a plain reference ---- */

static bool word(uint8_t c)
{
	return isalnum(c) || c == '_';
}

/* Mark raw occurrences of secrets and token shapes, the slow and obvious way. */
static char *reference(char *const *secrets, size_t nsec, const char *in, size_t len,
                       size_t *ret_len)
{
	bool *cov = calloc(len + 1, 1);
	char *out = malloc(len * 10 + 16);
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		for (size_t k = 0; k < nsec; k++) {
			size_t n = strlen(secrets[k]);
			if (i + n <= len && memcmp(in + i, secrets[k], n) == 0)
				memset(cov + i, 1, n);
		}
		size_t skip = 0, need = 0, run = 0;
		if (i + 4 <= len && in[i] == 'g' && in[i + 1] == 'h' &&
		    strchr("pousr", in[i + 2]) && in[i + 2] && in[i + 3] == '_')
			skip = 4, need = 36;
		else if (i + 11 <= len && memcmp(in + i, "github_pat_", 11) == 0)
			skip = 11, need = 22;
		if (skip) {
			while (i + skip + run < len && word((uint8_t)in[i + skip + run]))
				run++;
			if (run >= need)
				memset(cov + i, 1, skip + run);
		}
	}
	for (size_t i = 0; i < len; i++) {
		if (!cov[i])
			out[o++] = in[i];
		else if (i == 0 || !cov[i - 1])
			o += (size_t)sprintf(out + o, "%s", SCRUB_REDACTED);
	}
	free(cov);
	*ret_len = o;
	return out;
}

START_TEST(test_property_random_splits)
{
	char *secrets[6];
	const char *pieces[] = {"ghp_", "gho_", "github_pat_", "_",   "a", "Z9",
	                        " ",    "-",    "\n",          "%20", "g", "h"};
	_cleanup_scrubber_ struct scrubber *s = scrub_new();
	unsigned seed = 12345;

	/* Alphanumeric secrets: their URL forms are themselves, their base64 never occurs. */
	for (size_t k = 0; k < ELEMENTSOF(secrets); k++) {
		size_t n = 8 + (size_t)(rand_r(&seed) % 40);
		secrets[k] = calloc(n + 1, 1);
		for (size_t i = 0; i < n; i++)
			secrets[k][i] = "abcXYZ019"[rand_r(&seed) % 9];
		ck_assert_int_eq(scrub_add(s, secrets[k], n), 0);
	}
	for (int iter = 0; iter < 3000; iter++) {
		char in[1024];
		size_t len = 0, cuts[16], ncuts = (size_t)(rand_r(&seed) % 16);
		size_t rn, gn;
		_cleanup_free_ char *ref = NULL, *got = NULL, *str = NULL;

		while (len < 700) {
			unsigned pick = (unsigned)rand_r(&seed) % 10;
			const char *p;
			size_t n;
			if (pick < 3) {
				p = secrets[rand_r(&seed) % ELEMENTSOF(secrets)];
				n = strlen(p);
				if (pick == 0) /* a fragment */
					n = (size_t)rand_r(&seed) % n;
			} else if (pick < 5) {
				p = TOKEN36;
				n = (size_t)rand_r(&seed) % sizeof(TOKEN36);
			} else {
				p = pieces[rand_r(&seed) % ELEMENTSOF(pieces)];
				n = strlen(p);
			}
			memcpy(in + len, p, n);
			len += n;
		}
		for (size_t i = 0; i < ncuts; i++)
			cuts[i] = (size_t)rand_r(&seed) % (len + 1);
		for (size_t i = 1; i < ncuts; i++) /* insertion sort */
			for (size_t j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				size_t t = cuts[j];
				cuts[j] = cuts[j - 1];
				cuts[j - 1] = t;
			}
		ref = reference(secrets, ELEMENTSOF(secrets), in, len, &rn);
		str = scrub_string(s, in, len, &gn);
		ck_assert_msg(rn == gn && memcmp(ref, str, rn) == 0, "iter %d:\n%.*s\n%.*s\n%.*s",
		              iter, (int)len, in, (int)rn, ref, (int)gn, str);
		got = stream_cuts(s, in, len, cuts, ncuts, &gn);
		ck_assert_msg(rn == gn && memcmp(ref, got, rn) == 0, "iter %d stream", iter);
	}
	for (size_t k = 0; k < ELEMENTSOF(secrets); k++)
		free(secrets[k]);
}
END_TEST

static Suite *scrub_suite(void)
{
	Suite *s = suite_create("scrub");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_raw_secret);
	tcase_add_test(tc, test_short_and_duplicate_secrets_ignored);
	tcase_add_test(tc, test_longest_first_and_overlaps);
	tcase_add_test(tc, test_binary_secret);
	tcase_add_test(tc, test_url_encoded);
	tcase_add_test(tc, test_base64_whole);
	tcase_add_test(tc, test_base64_embedded_every_alignment);
	tcase_add_test(tc, test_github_tokens);
	tcase_add_test(tc, test_stream_every_split);
	tcase_add_test(tc, test_stream_holdback_bound);
	tcase_add_test(tc, test_stream_sink_error);
	tcase_add_test(tc, test_secrets_added_one_by_one);
	tcase_add_test(tc, test_stream_reused_carries_nothing);
	tcase_add_test(tc, test_add_during_a_scrub_is_refused);
	tcase_add_test(tc, test_stream_passes_whole_lines_at_once);
	tcase_add_test(tc, test_stream_holds_lines_for_multiline_secrets);
	tcase_add_test(tc, test_property_random_splits);
	tcase_add_test(tc, test_utf16);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(scrub_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
