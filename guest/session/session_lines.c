/* SPDX-License-Identifier: Apache-2.0 */
#include "session_lines.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "json_strict.h"

struct session_lines {
	const struct scrubber *scrub;
	size_t max_line;
	session_lines_sink_fn sink;
	void *userdata;
	char *buf; /* the line so far, at most max_line bytes */
	size_t len, cap;
	size_t total; /* its real length (more than len once over the cap) */
	uint64_t count;
};

/* Length of a valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t need;
	unsigned cp;

	if (p[0] == 0)
		return 0; /* a NUL would come out as \u0000, which strict readers refuse */
	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		need = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		need = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n < need)
		return 0;
	for (size_t i = 1; i < need; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((need == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (need == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return need;
}

/* A copy of in that is valid UTF-8 without NUL: each bad byte becomes U+FFFD. */
static char *utf8_clean(const char *in, size_t len, size_t *ret_len)
{
	const unsigned char *p = (const unsigned char *)in;
	char *out = malloc(len * 3 + 1);
	size_t o = 0;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (n == 0) {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(out + o, p + i, n);
		o += n;
		i += n;
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

static char *with_newline(const char *s, size_t len, size_t *ret_len)
{
	char *out = malloc(len + 2);

	if (!out)
		return NULL;
	memcpy(out, s, len);
	out[len] = '\n';
	out[len + 1] = '\0';
	*ret_len = len + 1;
	return out;
}

/* total > 0: the line had total bytes, more than the cap. */
static char *raw_event(const char *text, size_t len, size_t total, size_t *ret_len)
{
	_cleanup_json_ struct json_object *o = json_object_new_object();
	_cleanup_free_ char *clean = NULL;
	size_t clean_len;
	const char *js;
	size_t js_len;

	if (!o)
		return NULL;
	clean = utf8_clean(text, len, &clean_len);
	if (!clean)
		return NULL;
	json_object_object_add(o, "type", json_object_new_string("raw"));
	if (total > 0) {
		json_object_object_add(o, "truncated", json_object_new_boolean(1));
		json_object_object_add(o, "bytes", json_object_new_int64((int64_t)total));
	}
	json_object_object_add(o, "text", json_object_new_string_len(clean, (int)clean_len));
	js = json_object_to_json_string_length(
	    o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &js_len);
	if (!js)
		return NULL;
	return with_newline(js, js_len, ret_len);
}

/* s's rendering of obj, when it masks something the line's own bytes hid; else NULL. */
static char *escaped_secret(const struct scrubber *s, struct json_object *obj, size_t *ret_len)
{
	_cleanup_free_ char *scrubbed = NULL;
	const char *js;
	size_t js_len, sc_len;

	js = json_object_to_json_string_length(
	    obj, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &js_len);
	if (!js)
		return NULL;
	scrubbed = scrub_string(s, js, js_len, &sc_len);
	if (!scrubbed || (sc_len == js_len && memcmp(scrubbed, js, js_len) == 0))
		return NULL;
	return with_newline(scrubbed, sc_len, ret_len);
}

static bool typed_ours(json_object *obj)
{
	json_object *t;

	return json_object_object_get_ex(obj, "type", &t) &&
	       json_object_is_type(t, json_type_string) &&
	       strcmp(json_object_get_string(t), SESSION_LINES_OWN_TYPE) == 0;
}

static char *frame(const struct scrubber *s, const char *line, size_t len, size_t total, bool ours,
                   size_t *ret_len)
{
	_cleanup_free_ char *scrubbed = NULL;
	_cleanup_json_ struct json_object *obj = NULL;
	enum json_tokener_error jerr;
	size_t sc_len, off;
	bool over = total > len;

	if (!over && len > 0 && line[len - 1] == '\r')
		len--;
	if (s) {
		scrubbed = scrub_string(s, line, len, &sc_len);
		if (!scrubbed)
			return NULL;
	} else {
		scrubbed = malloc(len + 1);
		if (!scrubbed)
			return NULL;
		memcpy(scrubbed, line, len);
		scrubbed[len] = '\0';
		sc_len = len;
	}
	if (over)
		return raw_event(scrubbed, sc_len < SESSION_LINE_KEEP ? sc_len : SESSION_LINE_KEEP,
		                 total, ret_len);
	if (json_strict_parse(scrubbed, sc_len, &obj, &off, &jerr) == JSON_STRICT_OK &&
	    json_object_is_type(obj, json_type_object) && (ours || !typed_ours(obj))) {
		if (s && memmem(scrubbed, sc_len, "\\u", 2)) {
			char *r = escaped_secret(s, obj, ret_len);

			if (r)
				return r;
		}
		return with_newline(scrubbed, sc_len, ret_len);
	}
	return raw_event(scrubbed, sc_len, 0, ret_len);
}

char *session_lines_frame(const struct scrubber *s, const char *line, size_t len, size_t total,
                          size_t *ret_len)
{
	return frame(s, line, len, total, false, ret_len);
}

char *session_lines_frame_own(const struct scrubber *s, const char *line, size_t len,
                              size_t *ret_len)
{
	return frame(s, line, len, len, true, ret_len);
}

struct session_lines *session_lines_new(const struct scrubber *s, size_t max_line,
                                        session_lines_sink_fn sink, void *userdata)
{
	struct session_lines *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->scrub = s;
	l->max_line = max_line ? max_line : SESSION_LINE_MAX;
	l->sink = sink;
	l->userdata = userdata;
	return l;
}

static int emit(struct session_lines *l)
{
	_cleanup_free_ char *out = NULL;
	size_t out_len;
	int rc;

	/* Over the cap, only the kept part plus the scrubber's reach is looked at. */
	out = session_lines_frame(l->scrub, l->buf ? l->buf : "", l->len, l->total, &out_len);
	l->len = 0;
	l->total = 0;
	if (!out)
		return -ENOMEM;
	rc = l->sink(l->userdata, out, out_len);
	if (rc < 0)
		return rc;
	l->count++;
	return 0;
}

static int append(struct session_lines *l, const char *buf, size_t n)
{
	size_t room = l->max_line - l->len;
	size_t take = n < room ? n : room;

	l->total += n;
	if (take == 0)
		return 0;
	if (l->len + take > l->cap) {
		size_t cap = l->cap ? l->cap : 4096;
		char *nb;

		while (cap < l->len + take)
			cap *= 2;
		if (cap > l->max_line)
			cap = l->max_line;
		nb = realloc(l->buf, cap);
		if (!nb)
			return -ENOMEM;
		l->buf = nb;
		l->cap = cap;
	}
	memcpy(l->buf + l->len, buf, take);
	l->len += take;
	return 0;
}

int session_lines_feed(struct session_lines *l, const char *buf, size_t len)
{
	while (len > 0) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;
		int rc = append(l, buf, n);

		if (rc < 0)
			return rc;
		if (!nl)
			return 0;
		/* Blank lines carry no event. */
		rc = l->total ? emit(l) : 0;
		if (rc < 0)
			return rc;
		buf += n + 1;
		len -= n + 1;
	}
	return 0;
}

int session_lines_finish(struct session_lines *l)
{
	if (l->total == 0)
		return 0;
	return emit(l);
}

uint64_t session_lines_count(const struct session_lines *l)
{
	return l->count;
}

void session_lines_free(struct session_lines *l)
{
	if (!l)
		return;
	free(l->buf);
	free(l);
}
