/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Scrubber throughput: 64 MiB of log-like text with 50 secrets (a few occurrences of each,
 * plus GitHub tokens), through scrub_string() and through a stream fed 64 KiB writes and
 * 4 KiB writes. Prints MiB/s for each. Usage: scrub_bench [MiB] [secrets]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "scrub.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng_next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static int count_sink(void *userdata, const char *buf, size_t len)
{
	(void)buf;
	*(size_t *)userdata += len;
	return 0;
}

static double run_stream(const struct scrubber *s, const char *text, size_t len, size_t chunk,
                         size_t *ret_out)
{
	struct scrub_stream *st;
	double t0 = now();

	*ret_out = 0;
	st = scrub_stream_new(s, count_sink, ret_out);
	if (!st)
		return -1;
	for (size_t off = 0; off < len; off += chunk)
		if (scrub_stream_write(st, text + off, len - off < chunk ? len - off : chunk) < 0)
			return -1;
	if (scrub_stream_flush(st) < 0)
		return -1;
	scrub_stream_free(st);
	return now() - t0;
}

int main(int argc, char **argv)
{
	size_t mib = argc > 1 ? (size_t)atoi(argv[1]) : 64;
	size_t nsec = argc > 2 ? (size_t)atoi(argv[2]) : 50;
	size_t len = mib << 20, out_len = 0, planted = 0;
	const char charset[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	                       "+/=-_.:;, %@!()[]{}";
	char secrets[64][48];
	char *text = malloc(len), *out;
	struct scrubber *s = scrub_new();
	uint64_t x = 0x1234567887654321ULL;
	double t;

	if (!text || !s || nsec > 64)
		return 1;
	for (size_t k = 0; k < nsec; k++) {
		size_t n = 12 + rng_next(&x) % 32;
		for (size_t i = 0; i < n; i++)
			secrets[k][i] = charset[rng_next(&x) % (sizeof(charset) - 1)];
		secrets[k][n] = '\0';
		if (scrub_add(s, secrets[k], n) < 0)
			return 1;
	}
	/* Lines of words; every ~4 KiB a secret or a token. */
	for (size_t off = 0; off < len;) {
		uint64_t r = rng_next(&x);
		if (r % 4096 == 0 && off + 64 < len) {
			const char *p = secrets[rng_next(&x) % nsec];
			memcpy(text + off, p, strlen(p));
			off += strlen(p);
			planted++;
		} else if (r % 4096 == 1 && off + 64 < len) {
			memcpy(text + off, "ghp_0123456789abcdefghijABCDEFGHIJ0123456789 ", 45);
			off += 45;
			planted++;
		} else if (r % 61 == 0) {
			text[off++] = '\n';
		} else if (r % 7 == 0) {
			text[off++] = ' ';
		} else {
			text[off++] = charset[(r >> 16) % 62];
		}
	}
	printf("scrub bench: %zu MiB, %zu secrets, %zu planted, streams hold back at most %zu "
	       "bytes\n",
	       mib, scrub_count(s), planted, scrub_holdback(s));

	t = now();
	out = scrub_string(s, text, len, &out_len);
	t = now() - t;
	if (!out)
		return 1;
	printf("scrub_string:           %8.1f MiB/s (%zu bytes out)\n", (double)mib / t, out_len);
	free(out);
	t = run_stream(s, text, len, 64 * 1024, &out_len);
	if (t < 0)
		return 1;
	printf("stream, 64 KiB writes:  %8.1f MiB/s (%zu bytes out)\n", (double)mib / t, out_len);
	t = run_stream(s, text, len, 4096, &out_len);
	if (t < 0)
		return 1;
	printf("stream, 4 KiB writes:   %8.1f MiB/s (%zu bytes out)\n", (double)mib / t, out_len);
	printf("figure: the scrubber, %zu MiB through %zu secrets, streamed in 4 KiB writes | "
	       "%.0f MiB/s | \n",
	       mib, scrub_count(s), (double)mib / t);
	scrub_free(s);
	free(text);
	return 0;
}
