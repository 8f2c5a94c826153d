/* SPDX-License-Identifier: Apache-2.0 */
/* The monotonic clock, in the units deadlines and timings use. */
#ifndef SA_CLOCK_H
#define SA_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in milliseconds and in microseconds. */
uint64_t clock_now_ms(void);
uint64_t clock_now_us(void);

#endif
