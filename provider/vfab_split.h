/* SPDX-License-Identifier: MIT */
/*
 * How one large copy is shared between copy engines: the pure arithmetic,
 * no state (provider/vfab_dma.c runs it).
 *
 * A transfer of len_bytes is cut into contiguous byte ranges, one per
 * engine, each at least min_chunk_bytes, their boundaries on page
 * boundaries of the destination (two engines never store into one page).
 * The last range belongs to the posting thread and is followed by the tail:
 * its final VFAB_SPLIT_TAIL_BYTES, written only after every other range
 * has landed, so that a poller of the last bytes of a buffer (NCCL's flags)
 * sees them last, as with one ascending copy.
 */
#ifndef VFAB_SPLIT_H
#define VFAB_SPLIT_H

#include <stdint.h>

#define VFAB_SPLIT_MAX 16	    /* ranges at most: VFAB_MAX_COPY_ENGINES */
#define VFAB_SPLIT_ALIGN_BYTES 4096 /* boundaries on destination pages */
#define VFAB_SPLIT_TAIL_BYTES 64    /* one cache line, stored last */
#define VFAB_SPLIT_MIN_CHUNK_FLOOR (4 * VFAB_SPLIT_ALIGN_BYTES)

struct vfab_split_range {
	uint64_t off_bytes; /* from the start of the transfer */
	uint64_t len_bytes;
};

struct vfab_split {
	/* Ranges in address order; part[n - 1] is the poster's, ending before the tail. */
	unsigned n;
	struct vfab_split_range part[VFAB_SPLIT_MAX];
	struct vfab_split_range tail; /* the transfer's last bytes; empty when n == 1 */
};

/*
 * Splits len_bytes whose destination starts at address dst_addr over at
 * most `engines` ranges of at least min_chunk_bytes (raised to
 * VFAB_SPLIT_MIN_CHUNK_FLOOR). n == 1 (the whole transfer, no tail): too
 * small to gain, or one engine.
 */
void vfab_split_plan(uint64_t len_bytes, uint64_t dst_addr, unsigned engines,
		     uint64_t min_chunk_bytes, struct vfab_split *out);

#endif /* VFAB_SPLIT_H */
