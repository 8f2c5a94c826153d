/* SPDX-License-Identifier: Apache-2.0 */
#include "suggest.h"

#include <ctype.h>
#include <stdint.h>
#include <string.h>

#define SUGGEST_MAX_LEN 64

size_t suggest_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	/* Row i of the table lives in rows[i % 3]: swaps look two rows back. */
	size_t rows[3][SUGGEST_MAX_LEN + 1];

	if (n > SUGGEST_MAX_LEN || m > SUGGEST_MAX_LEN)
		return SIZE_MAX;
	for (size_t j = 0; j <= m; j++)
		rows[0][j] = j;
	for (size_t i = 1; i <= n; i++) {
		size_t *cur = rows[i % 3], *prev = rows[(i - 1) % 3];
		int ca = tolower((unsigned char)a[i - 1]);

		cur[0] = i;
		for (size_t j = 1; j <= m; j++) {
			int cb = tolower((unsigned char)b[j - 1]);
			size_t best = prev[j - 1] + (ca != cb);

			if (prev[j] + 1 < best)
				best = prev[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && ca == tolower((unsigned char)b[j - 2]) &&
			    tolower((unsigned char)a[i - 2]) == cb &&
			    rows[(i - 2) % 3][j - 2] + 1 < best)
				best = rows[(i - 2) % 3][j - 2] + 1;
			cur[j] = best;
		}
	}
	return rows[n % 3][m];
}

const char *suggest_closest(const char *word, const char *const *candidates)
{
	size_t len = strlen(word), limit = len <= 4 ? 1 : 2, best = SIZE_MAX;
	const char *found = NULL;

	if (len == 0)
		return NULL;
	for (size_t i = 0; candidates && candidates[i]; i++) {
		size_t d = suggest_distance(word, candidates[i]);
		if (d <= limit && d < len && d < best) {
			best = d;
			found = candidates[i];
		}
	}
	return found;
}
