/* SPDX-License-Identifier: Apache-2.0 */
#include "clock.h"

#include <time.h>

uint64_t clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

uint64_t clock_now_ms(void)
{
	return clock_now_us() / 1000;
}

int64_t clock_realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool clock_pause_until(int64_t deadline, int ms)
{
	int64_t now = (int64_t)clock_now_ms();
	struct timespec ts;

	if (deadline >= 0) {
		if (now >= deadline)
			return false;
		if (deadline - now < ms)
			ms = (int)(deadline - now);
	}
	ts.tv_sec = ms / 1000;
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	nanosleep(&ts, NULL);
	return true;
}
