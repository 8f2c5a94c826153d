/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

int log_max_level = LOG_WARNING;
static const char *log_program = "sandbox";
static int log_journal = 0;

static int log_level_from_string(const char *s)
{
	static const char *const names[] = {"emerg",   "alert",  "crit", "err",
	                                    "warning", "notice", "info", "debug"};

	for (int i = 0; i < 8; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	if (strcmp(s, "error") == 0)
		return LOG_ERR;
	if (strcmp(s, "warn") == 0)
		return LOG_WARNING;
	if (s[0] >= '0' && s[0] <= '7' && s[1] == '\0')
		return s[0] - '0';
	return -1;
}

void log_setup(const char *program)
{
	const char *lvl = getenv("SANDBOX_LOG_LEVEL");

	log_program = program;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	if (lvl) {
		int l = log_level_from_string(lvl);
		if (l >= 0)
			log_max_level = l;
	}
}

void log_printf(int level, const char *fmt, ...)
{
	int saved = errno;
	char line[4096];
	va_list ap;

	if (level > log_max_level) {
		errno = saved;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (log_journal)
		fprintf(stderr, "<%d>%s\n", level, line);
	else
		fprintf(stderr, "%s: %s\n", log_program, line);
	errno = saved;
}

bool log_ratelimit_pass(struct log_ratelimit *rl, unsigned *ret_suppressed)
{
	uint64_t now = clock_now_ms();

	if (rl->window_start == 0 || now - rl->window_start >= LOG_RATELIMIT_WINDOW_MS) {
		rl->window_start = now ? now : 1;
		rl->in_window = 0;
	}
	if (rl->in_window >= LOG_RATELIMIT_BURST) {
		rl->suppressed++;
		return false;
	}
	rl->in_window++;
	*ret_suppressed = rl->suppressed;
	rl->suppressed = 0;
	return true;
}
