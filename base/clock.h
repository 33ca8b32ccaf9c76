/* SPDX-License-Identifier: MIT */
/*
 * The one monotonic clock of vfab (CLOCK_MONOTONIC: the same in every process
 * of the host, so times kept in the shared region compare across processes)
 * and the one short sleep.
 */
#ifndef VFAB_BASE_CLOCK_H
#define VFAB_BASE_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t vfab_mono_ns(void);

/* CLOCK_MONOTONIC in milliseconds, for timeouts and reported timings. */
long long vfab_now_ms(void);

/* Sleeps ms milliseconds (a signal may end it early: callers poll in loops). */
void vfab_sleep_ms(long ms);

#endif /* VFAB_BASE_CLOCK_H */
