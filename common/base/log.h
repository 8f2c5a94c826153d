/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging to stderr. Under systemd (JOURNAL_STREAM set) each line gets the "<N>" prefix that
 * journald maps to a priority (sd-daemon(3)); elsewhere lines read "sandbox-agent: message".
 * The level is the one piece of global state besides parsed options. errno is preserved.
 * Library code logs at debug only; user-facing text is written by the main programs.
 */
#ifndef SA_LOG_H
#define SA_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h>

#include "cleanup.h"

extern int log_max_level;

void log_setup(const char *program);
void log_printf(int level, const char *fmt, ...) _printf_(2, 3);

#define log_err(...) log_printf(LOG_ERR, __VA_ARGS__)
#define log_warn(...) log_printf(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_printf(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_printf(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_printf(LOG_DEBUG, __VA_ARGS__)

/*
 * A limit on how often one kind of message is written: at most LOG_RATELIMIT_BURST lines per
 * LOG_RATELIMIT_WINDOW_MS. A peer that can make the program log (a connection flood) cannot
 * fill the disk or the journal. Zero-initialise one per kind of message.
 */
#define LOG_RATELIMIT_BURST 10u
#define LOG_RATELIMIT_WINDOW_MS 10000u
struct log_ratelimit {
	uint64_t window_start;
	unsigned in_window;
	unsigned suppressed; /* since the last line written */
};
/*
 * True when a line may be written now; *ret_suppressed gets how many were dropped since the
 * last one written (say so in the line), and is reset.
 */
bool log_ratelimit_pass(struct log_ratelimit *rl, unsigned *ret_suppressed);

#endif
