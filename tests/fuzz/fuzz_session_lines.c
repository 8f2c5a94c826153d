/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The CLI's stdout framed into events.jsonl lines (guest/session/session_lines.c), over
 * arbitrary bytes fed in pieces whose sizes come from the input itself (so a finding replays
 * exactly), with a small line cap so the over-the-cap path is reached. Checked:
 *   - every output line is one JSON object (json_strict_parse) and ends in '\n';
 *   - as many lines come out as the sink was called, and no more than non-blank input lines;
 *   - the fixed secret never appears in the output, raw or behind \u escapes (json-c's
 *     rendering of each line is scrubbed too).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"
#include "scrub.h"
#include "session_lines.h"

#define SECRET "sk-ant-fuzz-secret-42"
#define CAP 512

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct out {
	uint64_t lines;
};

static int check_line(void *userdata, const char *buf, size_t len)
{
	struct out *o = userdata;
	struct json_object *obj = NULL;
	enum json_tokener_error jerr;
	const char *js;
	size_t off;

	if (len < 3 || buf[len - 1] != '\n' || memchr(buf, '\n', len - 1))
		abort();
	if (json_strict_parse(buf, len - 1, &obj, &off, &jerr) != JSON_STRICT_OK ||
	    !json_object_is_type(obj, json_type_object))
		abort();
	if (memmem(buf, len, SECRET, strlen(SECRET)))
		abort();
	js = json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN);
	if (strstr(js, SECRET))
		abort();
	json_object_put(obj);
	o->lines++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scrubber *s = scrub_new();
	struct out o = {0};
	struct session_lines *l;
	uint64_t nonblank = 0;
	size_t i = 0, seg = 0;

	if (!s || scrub_add(s, SECRET, strlen(SECRET)) < 0)
		abort();
	l = session_lines_new(s, CAP, check_line, &o);
	if (!l)
		abort();
	for (size_t k = 0; k < size; k++) {
		if (data[k] != '\n')
			seg++;
		if (data[k] == '\n' || k + 1 == size) {
			nonblank += seg > 0;
			seg = 0;
		}
	}
	while (i < size) {
		size_t n = 1 + (data[i] % 97);

		if (n > size - i)
			n = size - i;
		if (session_lines_feed(l, (const char *)data + i, n) < 0)
			abort();
		i += n;
	}
	if (session_lines_finish(l) < 0)
		abort();
	if (o.lines != session_lines_count(l) || o.lines > nonblank)
		abort();
	session_lines_free(l);
	scrub_free(s);
	return 0;
}
