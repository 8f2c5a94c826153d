/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock, in the units deadlines and timings use. */
#ifndef SA_CLOCK_H
#define SA_CLOCK_H

#include <stdbool.h>
#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds and in microseconds. */
uint64_t clock_now_ms(void);
uint64_t clock_now_us(void);
/* Wall-clock time (CLOCK_REALTIME) in milliseconds since the epoch: for timestamps people read. */
int64_t clock_realtime_ms(void);

/*
 * Sleep ms milliseconds, or less when deadline (clock_now_ms() units; -1: none) comes first.
 * false, without sleeping, when the deadline has passed: the caller's retry loop ends.
 */
bool clock_pause_until(int64_t deadline, int ms);

#endif
