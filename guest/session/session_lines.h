/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CLI's stdout as events.jsonl (docs/sessions.md, "Events"): cut into lines, each line
 * scrubbed, a line that is a JSON object kept as it came (scrubbed), anything else wrapped as
 * {"type":"raw","text":...}. A line longer than the cap is not kept whole: it becomes
 * {"type":"raw","truncated":true,"bytes":N,"text":<its first SESSION_LINE_KEEP bytes>}.
 * Text put into JSON by us is made valid UTF-8 first (a bad byte or a NUL becomes U+FFFD).
 *
 * A secret hidden behind \u escapes inside a JSON string is caught too: a line with such an
 * escape is compared with json-c's own rendering of it, and when only the rendering shows a
 * secret, the scrubbed rendering is written instead of the line.
 */
#ifndef SA_SESSION_LINES_H
#define SA_SESSION_LINES_H

#include <stddef.h>
#include <stdint.h>

#include "scrub.h"

#define SESSION_LINE_MAX (8 * 1024 * 1024)
#define SESSION_LINE_KEEP 4096

/*
 * Frame one line (without its '\n'; a trailing '\r' is dropped). total is the line's real
 * length when only its first len bytes are given (total > len: it was over the cap), else len.
 * Returns a heap string ending in '\n' (its length in *ret_len), or NULL when out of memory.
 */
char *session_lines_frame(const struct scrubber *s, const char *line, size_t len, size_t total,
                          size_t *ret_len);
/*
 * Events of type SESSION_LINES_OWN_TYPE are the supervisor's own (its answers, user turns,
 * errors): a line of the CLI's that claims that type is kept as a raw event, so nothing the
 * agent prints can pass for an answer. session_lines_frame_own() frames one of ours.
 */
#define SESSION_LINES_OWN_TYPE "sandbox"
char *session_lines_frame_own(const struct scrubber *s, const char *line, size_t len,
                              size_t *ret_len);

typedef int (*session_lines_sink_fn)(void *userdata, const char *buf, size_t len);
struct session_lines;

/* max_line 0: SESSION_LINE_MAX. */
struct session_lines *session_lines_new(const struct scrubber *s, size_t max_line,
                                        session_lines_sink_fn sink, void *userdata);
/* Returns 0, -ENOMEM, or what the sink returned (negative). */
int session_lines_feed(struct session_lines *l, const char *buf, size_t len);
/* The last line, when it had no newline. */
int session_lines_finish(struct session_lines *l);
/* Lines written so far. */
uint64_t session_lines_count(const struct session_lines *l);
void session_lines_free(struct session_lines *l);

#endif
