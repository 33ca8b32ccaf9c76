/* SPDX-License-Identifier: MIT */
/*
 * The provider's ground floor: the debug log and the busy-wait pause, and
 * vfab's one clock (base/clock.h: vfab_mono_ns, the time base of the link
 * model). Every other provider file may use these; they call nothing of the
 * provider.
 */
#ifndef VFAB_UTIL_H
#define VFAB_UTIL_H

#include <stdint.h>

#include "base/clock.h"

/* A line on stderr, only when VFAB_DEBUG is set in the environment. */
void vfab_dbg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The HCA's free-running clock (hca_core_clock, completion timestamps,
 * ibv_query_rt_values_ex): the host's CLOCK_MONOTONIC at 1 GHz, one tick a
 * nanosecond, the same in every process and in the link model.
 */
#define VFAB_HCA_CORE_CLOCK_KHZ 1000000ull
#define VFAB_TIMESTAMP_MASK 0x7fffffffffffffffull /* 63 bits, as mlx5 reports */

static inline uint64_t vfab_device_clock_ns(void)
{
	return vfab_mono_ns() & VFAB_TIMESTAMP_MASK;
}

/* A device clock reading's low 48 bits, little-endian, as a CQE keeps it. */
static inline void vfab_ts48_store(uint8_t out[6], uint64_t ns)
{
	for (int i = 0; i < 6; i++)
		out[i] = (uint8_t)(ns >> (8 * i));
}

/* The full reading of a stamp taken before `now` (less than 2^48 ns before). */
static inline uint64_t vfab_ts48_load(const uint8_t in[6], uint64_t now)
{
	const uint64_t span = 1ull << 48;
	uint64_t lo = 0;

	for (int i = 0; i < 6; i++)
		lo |= (uint64_t)in[i] << (8 * i);
	return now - ((now - lo) & (span - 1));
}

/* A pause in busy-wait loops: lets the sibling hyperthread and the VM breathe. */
static inline void vfab_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

#endif /* VFAB_UTIL_H */
