/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Logging to stderr. Under systemd (JOURNAL_STREAM set) each line gets the "<N>" prefix that
 * journald maps to a priority (sd-daemon(3)); elsewhere lines read "sandbox-agent: message".
 * The level is the one piece of global state besides parsed options. errno is preserved.
 * Library code logs at debug only; user-facing text is written by the main programs.
 */
#ifndef SA_LOG_H
#define SA_LOG_H

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

#endif
