/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Capped, rotated log files (docs/design.md: "Logs are capped and rotated; a full disk is
 * reported as such") and reading the last lines of one for failure messages.
 *
 * A log is opened O_APPEND|O_CLOEXEC|O_NOFOLLOW, created with mode 0600 and owned by uid:gid:
 * it holds a step's or the server's output, which the scrubber cleaned as well as it could,
 * so only its owner may read it. Before a write would take the file past max_bytes it is
 * renamed to PATH.1 (replacing the previous PATH.1) and a new PATH is started; a single write
 * larger than max_bytes is spread over several files, so no file ever exceeds max_bytes. Only
 * regular files are rotated (a log opened on /dev/full or a pipe is just written).
 *
 * Offsets: logfile_offset() counts every byte in the log's history: the size PATH had when it
 * was opened plus every byte written since, across rotations. Offsets [logfile_file_start(),
 * logfile_offset()) are the bytes of the current PATH.
 */
#ifndef SA_LOGFILE_H
#define SA_LOGFILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "err.h"

struct logfile;

/* max_bytes 0: no cap, never rotated. uid (uid_t)-1: leave the owner as created. */
int logfile_open(const char *path, uint64_t max_bytes, uid_t uid, gid_t gid, struct logfile **ret,
                 struct err *err);
/*
 * Append len bytes, rotating first when needed. A full disk gives ERR_FAILED with code ENOSPC
 * and "disk full writing PATH"; the bytes that did reach the file are counted in the offset.
 */
int logfile_write(struct logfile *lf, const void *buf, size_t len, struct err *err);
/*
 * Keep a time index beside the log (PATH.times, logtimes.h), rotated with it, from the next
 * write on. Only regular files; a failure to write the index later stops the index, never
 * the log.
 */
int logfile_keep_times(struct logfile *lf, struct err *err);
/* The same where the log matters and its index does not: a failure is logged at debug. */
void logfile_keep_times_or_say(struct logfile *lf);
uint64_t logfile_offset(const struct logfile *lf);
uint64_t logfile_file_start(const struct logfile *lf);
void logfile_close(struct logfile *lf);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct logfile *, logfile_close)
#define _cleanup_logfile_ _cleanup_(logfile_closep)

/*
 * A scrub_sink_fn (scrub.h) writing to a logfile passed as userdata: returns what
 * logfile_write() returned; the error is kept for logfile_last_error().
 */
int logfile_sink(void *userdata, const char *buf, size_t len);
const struct err *logfile_last_error(const struct logfile *lf);

/*
 * The last nlines lines of the log at path as one heap string, each line cut to at most
 * max_line_chars characters (UTF-8 code points; never cut inside one) and ended by '\n'. A
 * trailing "\r" of a CRLF line is dropped, a NUL byte shows as '?'; a last line without a
 * newline counts as a line; an empty file gives "". Reads only the end of the file, at most 1 MiB +
 * nlines * (4 * max_line_chars + 2) bytes: a line whose start lies before that shows from where the
 * read began.
 */
int logfile_tail(const char *path, size_t nlines, size_t max_line_chars, char **ret,
                 struct err *err);
/*
 * The same, from the bytes at offset since or later only (the size the file had when a boot
 * began, so that earlier boots' lines are left out); since past the end of the file (it was
 * rotated or truncated) counts as 0.
 */
int logfile_tail_since(const char *path, uint64_t since, size_t nlines, size_t max_line_chars,
                       char **ret, struct err *err);

#endif
