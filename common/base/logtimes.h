/* SPDX-License-Identifier: Apache-2.0 */
/*
 * A log's time index: PATH.times beside the log PATH (and PATH.1.times beside PATH.1), so a
 * reader can tell when each line was written without a byte of the log itself changing: the
 * log stays the scrubbed output addressed by offset (docs/daemon.md, "Log offsets").
 *
 * The index holds fixed-width records "POS MS\n" (POS: 16 hex digits, the position in the log
 * file of the first byte of a write; MS: 13 decimal digits, Unix milliseconds), at most one per
 * second of wall time, so a line's time is the time of the last record at or before its first
 * byte, to the second. Records are fixed-width so a reader finds one by binary search. The
 * index is capped (LOGTIMES_MAX_BYTES): a log whose index is full is rotated with it.
 */
#ifndef SA_LOGTIMES_H
#define SA_LOGTIMES_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

#define LOGTIMES_SUFFIX ".times"
#define LOGTIMES_RECORD 31                           /* 16 hex + ' ' + 13 digits + '\n' */
#define LOGTIMES_MAX_BYTES (LOGTIMES_RECORD * 65536) /* about 18 hours of output each second */

struct logtimes_rec {
	uint64_t pos; /* position in the log file */
	int64_t ms;   /* Unix ms of the write that began there */
};

/*
 * Format one record into buf (LOGTIMES_RECORD bytes, no NUL) / parse one; parse returns -1 for
 * bytes that are not a record.
 */
void logtimes_format(char buf[LOGTIMES_RECORD], uint64_t pos, int64_t ms);
int logtimes_parse(const char *buf, struct logtimes_rec *ret);

/*
 * The records of the index at index_path that describe log positions [from, to): the last
 * record at or before from (when there is one), then every record before to; at most max. A
 * missing index gives none. Returns how many were stored in ret.
 */
size_t logtimes_lookup(const char *index_path, uint64_t from, uint64_t to, struct logtimes_rec *ret,
                       size_t max);

#endif
