/* SPDX-License-Identifier: MIT */
#include "base/clock.h"

#include <time.h>

uint64_t vfab_mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

long long vfab_now_ms(void)
{
	return (long long)(vfab_mono_ns() / 1000000u);
}

void vfab_sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}
