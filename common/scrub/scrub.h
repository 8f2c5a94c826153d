/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The secret scrubber (docs/platform-contract.md, "Failure"): known secret values of 8 characters
 * or more (longest first), their URL-encoded, base64 and UTF-16 forms, and anything shaped like a
 * GitHub token (gh[pousr]_..., github_pat_...) become "[REDACTED]". Secret values are held in
 * libsodium's guarded memory. What is not caught (an ANSI escape inserted in the middle of a
 * secret, double encodings, ...) is listed in scrub.c.
 *
 * The stream form holds back just enough bytes that a secret split across two writes is still
 * caught; it never holds back more than the longest pattern.
 */
#ifndef SA_SCRUB_H
#define SA_SCRUB_H

#include <stddef.h>
#include <sys/types.h>

#include "err.h"

#define SCRUB_MIN_SECRET 8
#define SCRUB_MAX_SECRET (64 * 1024)
#define SCRUB_REDACTED "[REDACTED]"

struct scrubber;

struct scrubber *scrub_new(void);
void scrub_free(struct scrubber *s);
/*
 * Add a secret value (shorter than SCRUB_MIN_SECRET: ignored, returns 0; a value already added:
 * returns 0). Values over SCRUB_MAX_SECRET bytes: -E2BIG; out of memory: -ENOMEM (the scrubber
 * stays as it was); while a scrub with s runs (a sink adding a secret, another thread): -EBUSY.
 */
int scrub_add(struct scrubber *s, const char *value, size_t len);
size_t scrub_count(const struct scrubber *s);
/* The most bytes a stream holds back: max(longest pattern, 40) - 1 (scrub.c explains). */
size_t scrub_holdback(const struct scrubber *s);
/* Scrub a whole buffer: a new heap string. */
char *scrub_string(const struct scrubber *s, const char *in, size_t len, size_t *ret_len);

typedef int (*scrub_sink_fn)(void *userdata, const char *buf, size_t len);
struct scrub_stream;
/* Scrubbed bytes go to sink; s must outlive the stream. */
struct scrub_stream *scrub_stream_new(const struct scrubber *s, scrub_sink_fn sink, void *userdata);
/* Returns what the sink returned on failure (negative), else 0. */
int scrub_stream_write(struct scrub_stream *st, const char *buf, size_t len);
/* Push out what is held back (end of stream); a later write starts a new stream. */
int scrub_stream_flush(struct scrub_stream *st);
void scrub_stream_free(struct scrub_stream *st);

#endif
