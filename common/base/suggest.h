/* SPDX-License-Identifier: Apache-2.0 */
/*
 * "Did you mean ...?": the closest of a few known words to one that is not known, for a
 * sandbox.yml key, a sandbox-ctl command or an option. One implementation for every tool.
 */
#ifndef SA_SUGGEST_H
#define SA_SUGGEST_H

#include <stddef.h>

/*
 * The optimal-string-alignment distance (insertions, deletions, substitutions and swaps of
 * two neighbours, each costing 1), compared case-insensitively, or SIZE_MAX when either
 * string is longer than 64 bytes.
 */
size_t suggest_distance(const char *a, const char *b);

/*
 * The candidate closest to word when it is near enough to be a typo (distance 1 for words of
 * up to 4 characters, 2 for longer ones, never the whole word), else NULL. candidates ends with
 * NULL; a tie goes to the first.
 */
const char *suggest_closest(const char *word, const char *const *candidates);

#endif
