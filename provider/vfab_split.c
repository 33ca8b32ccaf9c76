/* SPDX-License-Identifier: MIT */
/* Ranges of a copy shared between copy engines (see vfab_split.h). */
#include "provider/vfab_split.h"

/* Offset of the page boundary of the destination nearest to offset `at`. */
static uint64_t nearest_boundary(uint64_t dst_addr, uint64_t at)
{
	uint64_t a = dst_addr + at + VFAB_SPLIT_ALIGN_BYTES / 2;

	return (a & ~(uint64_t)(VFAB_SPLIT_ALIGN_BYTES - 1)) - dst_addr;
}

void vfab_split_plan(uint64_t len_bytes, uint64_t dst_addr, unsigned engines,
		     uint64_t min_chunk_bytes, struct vfab_split *out)
{
	uint64_t n, prev = 0;

	if (min_chunk_bytes < VFAB_SPLIT_MIN_CHUNK_FLOOR)
		min_chunk_bytes = VFAB_SPLIT_MIN_CHUNK_FLOOR;
	n = len_bytes / min_chunk_bytes;
	if (n > engines)
		n = engines;
	if (n > VFAB_SPLIT_MAX)
		n = VFAB_SPLIT_MAX;
	out->tail.off_bytes = len_bytes;
	out->tail.len_bytes = 0;
	if (n < 2) {
		out->n = 1;
		out->part[0].off_bytes = 0;
		out->part[0].len_bytes = len_bytes;
		return;
	}
	/*
	 * Even shares moved to the nearest page boundary: at most half a
	 * page each way, so every range keeps more than min_chunk - 1 page,
	 * which is more than the tail.
	 */
	for (uint64_t i = 0; i < n; i++) {
		uint64_t end = i + 1 == n ? len_bytes - VFAB_SPLIT_TAIL_BYTES
					  : nearest_boundary(dst_addr, len_bytes / n * (i + 1));

		out->part[i].off_bytes = prev;
		out->part[i].len_bytes = end - prev;
		prev = end;
	}
	out->n = (unsigned)n;
	out->tail.off_bytes = prev;
	out->tail.len_bytes = VFAB_SPLIT_TAIL_BYTES;
}
