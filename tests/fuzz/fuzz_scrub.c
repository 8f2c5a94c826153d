/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the secret scrubber (common/scrub.c).
 *
 * Input: a header line, then the text to scrub.
 *   header  the bytes before the first '\n': up to 8 secrets separated by \x01 (each cut to
 *           256 bytes; shorter than 8 bytes are ignored by the scrubber itself)
 *   text    the rest, where two-byte escapes splice in a secret so the fuzzer need not guess
 *           one: \x02 K the raw secret K (K modulo the number of secrets), \x03 K its base64
 *           (K / 16 picks standard or URL-safe, padded or not), \x04 K its curl_easy_escape
 *           form, \x05 K base64 of "user:" + the secret (another alignment)
 * The text goes through scrub_string() and through a stream at split points drawn from a hash
 * of the input (so a finding replays exactly). Checked:
 *   - the stream's output equals scrub_string()'s;
 *   - no secret, nor its base64 or curl_easy_escape form, is left in the output (for secrets
 *     without '[' or ']', which could straddle a "[REDACTED]" marker, and other than
 *     "REDACTED" itself);
 *   - nothing shaped like a GitHub token is left in the output.
 */
#include <curl/curl.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "scrub.h"

#define MAX_SECRETS 8
#define MAX_SECRET_LEN 256
#define MAX_TEXT (256 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct secret {
	const uint8_t *p;
	size_t n;
};

struct buf {
	uint8_t *p;
	size_t len, cap;
};

static void buf_add(struct buf *b, const void *p, size_t n)
{
	if (n == 0)
		return;
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p)
			abort();
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

static int buf_sink(void *userdata, const char *p, size_t n)
{
	buf_add(userdata, p, n);
	return 0;
}

static const int variants[] = {
    sodium_base64_VARIANT_ORIGINAL,
    sodium_base64_VARIANT_ORIGINAL_NO_PADDING,
    sodium_base64_VARIANT_URLSAFE,
    sodium_base64_VARIANT_URLSAFE_NO_PADDING,
};

static void add_base64(struct buf *b, const uint8_t *p, size_t n, int variant)
{
	size_t cap = sodium_base64_ENCODED_LEN(n, variant);
	char *enc = malloc(cap);

	if (!enc)
		abort();
	sodium_bin2base64(enc, cap, p, n, variant);
	buf_add(b, enc, strlen(enc));
	free(enc);
}

static void add_escaped(struct buf *b, const uint8_t *p, size_t n)
{
	char *e;

	if (n == 0) /* curl would take 0 as "use strlen" */
		return;
	e = curl_easy_escape(NULL, (const char *)p, (int)n);
	if (!e)
		abort();
	buf_add(b, e, strlen(e));
	curl_free(e);
}

static bool is_word(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '_';
}

static bool contains(const struct buf *hay, const void *needle, size_t n)
{
	return n > 0 && hay->len >= n && memmem(hay->p, hay->len, needle, n) != NULL;
}

static void check_no_token(const struct buf *out)
{
	for (size_t i = 0; i < out->len; i++) {
		const uint8_t *p = out->p + i;
		size_t rest = out->len - i, skip = 0, need = 0, run = 0;

		if (rest >= 4 && p[0] == 'g' && p[1] == 'h' && memchr("pousr", p[2], 5) &&
		    p[3] == '_')
			skip = 4, need = 36;
		else if (rest >= 11 && memcmp(p, "github_pat_", 11) == 0)
			skip = 11, need = 22;
		if (!skip)
			continue;
		while (skip + run < rest && run < need && is_word(p[skip + run]))
			run++;
		if (run >= need)
			abort(); /* a token survived */
	}
}

static void check_secret_gone(const struct buf *out, const struct secret *s)
{
	struct buf enc = {0};

	if (s->n < SCRUB_MIN_SECRET || memchr(s->p, '[', s->n) || memchr(s->p, ']', s->n) ||
	    (s->n == 8 && memcmp(s->p, "REDACTED", 8) == 0))
		return;
	if (contains(out, s->p, s->n))
		abort();
	for (size_t v = 0; v < sizeof(variants) / sizeof(variants[0]); v++) {
		enc.len = 0;
		add_base64(&enc, s->p, s->n, variants[v]);
		if (contains(out, enc.p, enc.len))
			abort();
	}
	enc.len = 0;
	add_escaped(&enc, s->p, s->n);
	if (contains(out, enc.p, enc.len))
		abort();
	free(enc.p);
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct secret secrets[MAX_SECRETS];
	size_t nsec = 0, hdr, i;
	struct buf text = {0}, want = {0}, got = {0};
	struct scrubber *s;
	struct scrub_stream *st;
	char *str;
	size_t str_len, off;
	uint64_t seed = 0xcbf29ce484222325ULL;

	if (size > MAX_TEXT)
		return 0;
	s = scrub_new();
	if (!s)
		abort();
	/* The header: secrets separated by \x01. */
	for (hdr = 0; hdr < size && data[hdr] != '\n'; hdr++)
		;
	for (i = 0; i <= hdr && nsec < MAX_SECRETS;) {
		size_t j = i;
		while (j < hdr && data[j] != 1)
			j++;
		secrets[nsec].p = data + i;
		secrets[nsec].n = j - i > MAX_SECRET_LEN ? MAX_SECRET_LEN : j - i;
		if (scrub_add(s, (const char *)secrets[nsec].p, secrets[nsec].n) < 0)
			abort();
		nsec++;
		i = j + 1;
	}
	/* The text, with escapes expanded (never a NULL buffer, even when empty). */
	text.p = malloc(1);
	text.cap = 1;
	if (!text.p)
		abort();
	for (i = hdr + 1; i < size; i++) {
		uint8_t c = data[i];
		if (c >= 2 && c <= 5 && i + 1 < size && nsec > 0) {
			uint8_t k = data[++i];
			const struct secret *sec = &secrets[k % nsec];
			if (c == 2) {
				buf_add(&text, sec->p, sec->n);
			} else if (c == 3) {
				add_base64(&text, sec->p, sec->n, variants[(k / 16) % 4]);
			} else if (c == 4) {
				add_escaped(&text, sec->p, sec->n);
			} else {
				struct buf tmp = {0};
				buf_add(&tmp, "user:", 5);
				buf_add(&tmp, sec->p, sec->n);
				add_base64(&text, tmp.p, tmp.len, variants[(k / 16) % 4]);
				free(tmp.p);
			}
		} else {
			buf_add(&text, &c, 1);
		}
	}
	for (i = 0; i < size; i++)
		seed = (seed ^ data[i]) * 0x100000001b3ULL;
	seed |= 1;

	str = scrub_string(s, (const char *)text.p, text.len, &str_len);
	if (!str)
		abort();
	buf_add(&want, str, str_len);
	free(str);

	st = scrub_stream_new(s, buf_sink, &got);
	if (!st)
		abort();
	off = 0;
	for (int w = 0; w < 8 && off < text.len; w++) {
		size_t n = (size_t)(next(&seed) % (text.len - off + 1));
		if (n > 0 && next(&seed) % 4 == 0)
			n = 1 + n % 48; /* short writes around pattern lengths */
		if (n > text.len - off)
			n = text.len - off;
		if (scrub_stream_write(st, (const char *)text.p + off, n) < 0)
			abort();
		off += n;
	}
	if (scrub_stream_write(st, (const char *)text.p + off, text.len - off) < 0 ||
	    scrub_stream_flush(st) < 0)
		abort();
	scrub_stream_free(st);

	if (want.len != got.len || (want.len && memcmp(want.p, got.p, want.len) != 0))
		abort(); /* the stream differs from scrub_string */
	check_no_token(&want);
	for (i = 0; i < nsec; i++)
		check_secret_gone(&want, &secrets[i]);

	scrub_free(s);
	free(text.p);
	free(want.p);
	free(got.p);
	return 0;
}
