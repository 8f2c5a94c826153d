/* SPDX-License-Identifier: Apache-2.0 */
#include "liveline.h"

#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#define LIVELINE_MAX_BYTES 4096

void liveline_init(struct liveline *l, FILE *f)
{
	struct winsize ws;

	memset(l, 0, sizeof(*l));
	l->f = f;
	l->tty = f && isatty(fileno(f)) == 1;
	l->columns = 80;
	if (l->tty && ioctl(fileno(f), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 10)
		l->columns = ws.ws_col;
}

void liveline_show(struct liveline *l, const char *text)
{
	char line[LIVELINE_MAX_BYTES];
	size_t n = 0, chars = 0, max = l->columns > 1 ? (size_t)l->columns - 1 : 1;

	if (!l->tty)
		return;
	/* Printable text only, cut after max characters (never inside a UTF-8 sequence). */
	for (const char *p = text; *p && n < sizeof(line) - 1; p++) {
		unsigned char c = (unsigned char)*p;
		bool lead = (c & 0xc0) != 0x80;

		if (lead && chars == max)
			break;
		if (lead)
			chars++;
		line[n++] = c == '\t' ? ' ' : (c < 0x20 || c == 0x7f) ? '?' : (char)c;
	}
	while (n > 0 && ((unsigned char)line[n - 1] & 0xc0) == 0xc0)
		n--; /* a lead byte whose sequence was cut by the buffer */
	line[n] = '\0';
	fprintf(l->f, "\r%s\033[K", line);
	fflush(l->f);
	l->shown = true;
}

void liveline_done(struct liveline *l)
{
	if (!l->shown)
		return;
	fputc('\n', l->f);
	fflush(l->f);
	l->shown = false;
}
