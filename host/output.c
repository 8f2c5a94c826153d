/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The JSON document on stdout and the progress on stderr. Text from the guest (log lines,
 * error messages) reaches the terminal with control characters replaced, so a log line cannot
 * move the cursor or retitle the window.
 */
#include "output.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LINE_MAX_BYTES 4096

int output_exit_of(const struct err *e)
{
	return e->cls == ERR_REFUSED ? CTL_EXIT_REFUSED : CTL_EXIT_FAILED;
}

void output_init(struct output *o, FILE *out, FILE *err, int level)
{
	memset(o, 0, sizeof(*o));
	o->out = out;
	o->err = err;
	o->level = level;
	liveline_init(&o->line, err);
	o->tty = o->line.tty;
	o->pretty = isatty(fileno(out)) == 1;
}

void output_json(struct output *o, struct json_object *doc)
{
	int flags = JSON_C_TO_STRING_NOSLASHESCAPE |
	            (o->pretty ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
	                       : JSON_C_TO_STRING_PLAIN);

	const char *text;

	output_live_done(o);
	text = json_object_to_json_string_ext(doc, flags);
	output_json_text(o->out, text, strlen(text));
	fputc('\n', o->out);
	fflush(o->out);
}

void output_json_text(FILE *out, const char *text, size_t len)
{
	size_t from = 0;

	for (size_t i = 0; i + 1 < len; i++) {
		unsigned char b = (unsigned char)text[i + 1];

		if ((unsigned char)text[i] != 0xc2 || b < 0x80 || b > 0x9f)
			continue;
		fwrite(text + from, 1, i - from, out);
		fprintf(out, "\\u%04x", b);
		from = i + 2;
		i++;
	}
	fwrite(text + from, 1, len - from, out);
}

static size_t utf8_seq(const unsigned char *p, size_t left);

size_t output_clean(char *out, const char *in, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t o = 0;

	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);
		if (n == 1 && p[i] == '\t') {
			out[o++] = ' ';
		} else if (n == 0 || (n == 1 && (p[i] < 0x20 || p[i] == 0x7f)) ||
		           (n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)) {
			/* a C0 or C1 control, or a byte that is no UTF-8 */
			out[o++] = '?';
			n = n ? n : 1;
		} else {
			memmove(out + o, p + i, n);
			o += n;
		}
		i += n;
	}
	return o;
}

/* Format into line, replacing control characters (and cutting at max bytes when max > 0). */
static void format_line(char *line, size_t cap, size_t max, const char *fmt, va_list ap)
{
	size_t n;

	vsnprintf(line, cap, fmt, ap);
	line[output_clean(line, line, strlen(line))] = '\0';
	n = strlen(line);
	if (max > 0 && n > max) {
		/* Cut on a character boundary: back off continuation bytes of UTF-8. */
		n = max;
		while (n > 0 && ((unsigned char)line[n] & 0xc0) == 0x80)
			n--;
		line[n] = '\0';
	}
}

static void vprint(struct output *o, const char *fmt, va_list ap)
{
	char line[LINE_MAX_BYTES];

	format_line(line, sizeof(line), 0, fmt, ap);
	output_live_done(o);
	fprintf(o->err, "sandbox-ctl: %s\n", line);
	fflush(o->err);
}

void output_note(struct output *o, const char *fmt, ...)
{
	va_list ap;

	if (o->level < OUTPUT_NORMAL)
		return;
	va_start(ap, fmt);
	vprint(o, fmt, ap);
	va_end(ap);
}

void output_detail(struct output *o, const char *fmt, ...)
{
	va_list ap;

	if (o->level < OUTPUT_VERBOSE)
		return;
	va_start(ap, fmt);
	vprint(o, fmt, ap);
	va_end(ap);
}

void output_live(struct output *o, const char *fmt, ...)
{
	char line[LINE_MAX_BYTES];
	va_list ap;

	if (o->level < OUTPUT_NORMAL)
		return;
	va_start(ap, fmt);
	if (!o->tty) {
		vprint(o, fmt, ap);
		va_end(ap);
		return;
	}
	format_line(line, sizeof(line), 0, fmt, ap);
	va_end(ap);
	liveline_show(&o->line, line);
}

void output_live_done(struct output *o)
{
	liveline_done(&o->line);
}

void output_error(struct output *o, const struct err *e)
{
	char line[LINE_MAX_BYTES];

	output_live_done(o);
	snprintf(line, sizeof(line), "%s", e->msg[0] ? e->msg : "failed");
	line[output_clean(line, line, strlen(line))] = '\0';
	fprintf(o->err, "sandbox-ctl: %s\n", line);
	fflush(o->err);
}

struct json_object *output_error_doc(const struct err *e)
{
	struct json_object *doc = json_object_new_object();
	struct json_object *inner = json_object_new_object();

	if (!doc || !inner) {
		json_object_put(doc);
		json_object_put(inner);
		return NULL;
	}
	json_object_object_add(inner, "code", json_object_new_int(e->code));
	json_object_object_add(
	    inner, "class", json_object_new_string(e->cls == ERR_REFUSED ? "refused" : "failed"));
	json_object_object_add(inner, "msg", json_object_new_string(e->msg));
	json_object_object_add(doc, "error", inner);
	return doc;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t left)
{
	size_t n;
	uint32_t cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	/* overlong forms, surrogates, beyond U+10FFFF */
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

bool output_utf8_valid(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;

	for (size_t i = 0, n; i < len; i += n)
		if (!(n = utf8_seq(p + i, len - i)))
			return false;
	return true;
}

struct json_object *output_string_lossy(const char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)buf;
	struct json_object *s;
	char *clean, *q;

	/* Each invalid byte (1) becomes U+FFFD (3). */
	clean = malloc(len * 3 + 1);
	if (!clean)
		return NULL;
	q = clean;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);
		if (n == 0) {
			memcpy(q, "\xef\xbf\xbd", 3);
			q += 3;
			i++;
			continue;
		}
		memcpy(q, p + i, n);
		q += n;
		i += n;
	}
	s = json_object_new_string_len(clean, (int)(q - clean));
	free(clean);
	return s;
}
