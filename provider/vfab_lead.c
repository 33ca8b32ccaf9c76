/* SPDX-License-Identifier: MIT */
/*
 * When a timed delivery starts. A message is due when the link model says
 * it arrives, but making it arrive takes the bookkeeping before the copy
 * (about a microsecond here) and the copy itself (80 us for 1 MiB), which
 * would add to every shaped latency and stretch every lone large message.
 * So a delivery starts that much before its due time and lands on it, as
 * the last byte of a message lands on hardware when its serialization ends.
 *
 * Both parts are learnt from lone messages (nothing behind them in the send
 * queue, so that queueing does not count): the fixed part from how late
 * small ones land, by an integral controller whose samples are clamped so
 * that a thread preempted once does not throw it off; the copy's part from
 * how long the copies of large ones take, per byte, as a moving average.
 * Per process, shared by its QPs.
 */
#include "provider/vfab_lead.h"

#include <stdatomic.h>

#define SMALL_BYTES 4096u
#define FIXED_MAX_NS 3000
#define FIXED_STEP_NS 500
#define COPY_PS_MAX 1000 /* 1 ns per byte: 1 GB/s, slower than any copy here */

static _Atomic int64_t lead_fixed_ns;
static _Atomic uint32_t lead_copy_ps_per_byte;

uint64_t vfab_lead_start_ns(uint32_t len, uint64_t due)
{
	uint64_t lead = (uint64_t)atomic_load_explicit(&lead_fixed_ns, memory_order_relaxed);

	if (len > SMALL_BYTES)
		lead += (uint64_t)len *
			atomic_load_explicit(&lead_copy_ps_per_byte, memory_order_relaxed) / 1000;
	return due > lead ? due - lead : due;
}

void vfab_lead_learn(uint32_t len, uint64_t due, uint64_t started, uint64_t landed)
{
	int64_t late = (int64_t)(landed - due), fixed;
	uint64_t ps, avg;

	if (len > SMALL_BYTES) {
		ps = (landed - started) * 1000 / len;
		if (ps > COPY_PS_MAX)
			ps = COPY_PS_MAX;
		avg = atomic_load_explicit(&lead_copy_ps_per_byte, memory_order_relaxed);
		avg = avg ? (avg * 3 + ps) / 4 : ps;
		atomic_store_explicit(&lead_copy_ps_per_byte, (uint32_t)avg, memory_order_relaxed);
		return;
	}
	if (late > FIXED_STEP_NS)
		late = FIXED_STEP_NS;
	if (late < -FIXED_STEP_NS)
		late = -FIXED_STEP_NS;
	fixed = atomic_load_explicit(&lead_fixed_ns, memory_order_relaxed) + late / 8;
	if (fixed < 0)
		fixed = 0;
	if (fixed > FIXED_MAX_NS)
		fixed = FIXED_MAX_NS;
	atomic_store_explicit(&lead_fixed_ns, fixed, memory_order_relaxed);
}

void vfab_lead_forget(void)
{
	atomic_store(&lead_fixed_ns, 0);
	atomic_store(&lead_copy_ps_per_byte, 0);
}
