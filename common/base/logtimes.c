/* SPDX-License-Identifier: Apache-2.0 */
#include "logtimes.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cleanup.h"

void logtimes_format(char buf[LOGTIMES_RECORD], uint64_t pos, int64_t ms)
{
	char tmp[LOGTIMES_RECORD + 1];

	if (ms < 0)
		ms = 0;
	if (ms > INT64_C(9999999999999))
		ms = INT64_C(9999999999999);
	snprintf(tmp, sizeof(tmp), "%016" PRIx64 " %013" PRId64 "\n", pos, ms);
	memcpy(buf, tmp, LOGTIMES_RECORD);
}

int logtimes_parse(const char *buf, struct logtimes_rec *ret)
{
	uint64_t pos = 0;
	int64_t ms = 0;

	for (int i = 0; i < 16; i++) {
		char ch = buf[i];
		int d = ch >= '0' && ch <= '9'   ? ch - '0'
		        : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
		                                 : -1;
		if (d < 0)
			return -1;
		pos = pos << 4 | (uint64_t)d;
	}
	if (buf[16] != ' ' || buf[LOGTIMES_RECORD - 1] != '\n')
		return -1;
	for (int i = 17; i < LOGTIMES_RECORD - 1; i++) {
		if (buf[i] < '0' || buf[i] > '9')
			return -1;
		ms = ms * 10 + (buf[i] - '0');
	}
	ret->pos = pos;
	ret->ms = ms;
	return 0;
}

static int read_rec(int fd, size_t i, struct logtimes_rec *ret)
{
	char buf[LOGTIMES_RECORD];

	if (pread(fd, buf, sizeof(buf), (off_t)(i * LOGTIMES_RECORD)) != (ssize_t)sizeof(buf))
		return -1;
	return logtimes_parse(buf, ret);
}

size_t logtimes_lookup(const char *index_path, uint64_t from, uint64_t to, struct logtimes_rec *ret,
                       size_t max)
{
	_cleanup_close_ int fd = open(index_path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct logtimes_rec r;
	struct stat st;
	size_t n, lo = 0, hi, got = 0;

	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || max == 0)
		return 0;
	n = (size_t)st.st_size / LOGTIMES_RECORD;
	/* The first record after from: lo. Records are in position order. */
	hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (read_rec(fd, mid, &r) < 0)
			return 0; /* not an index we wrote */
		if (r.pos <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Record lo - 1 is at or before from; the later ones count while before to. */
	for (size_t i = lo > 0 ? lo - 1 : 0; i < n && got < max; i++) {
		if (read_rec(fd, i, &r) < 0 || (r.pos > from && r.pos >= to))
			break;
		ret[got++] = r;
	}
	return got;
}
