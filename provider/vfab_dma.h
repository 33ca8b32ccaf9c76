/* SPDX-License-Identifier: MIT */
/*
 * Copy engines: a large copy into or out of another process shared between
 * the posting thread and a small pool of this process's threads, as a NIC
 * moves one message with several DMA engines. The link model has already
 * decided when the bytes move; engines only move them, and the copy returns
 * once every range has landed (so ibv_dereg_mr's pin covers all of it).
 *
 * The pool is per process, started on the first split copy and sized by
 * the largest copy_engines of the HCAs the process opened; its threads
 * sleep on a futex when idle. A child of fork() starts its own. One split
 * copy at a time: a thread that finds the pool busy copies alone.
 */
#ifndef VFAB_DMA_H
#define VFAB_DMA_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "provider/vfab_xfer.h"

/*
 * Smallest range one engine gets by default. Below it the hand-over (a
 * second pidfd poll and page walk per range, the tail's own copy, waking or
 * polling threads) costs about what it saves: on the 2-CPU development VM
 * a 512 KiB WRITE split into 2 x 256 KiB ran at 0.9x the unsplit one,
 * 1 MiB in 2 x 512 KiB at 1.05-1.3x, 4 MiB at 1.7x (ib_write_bw, noisy).
 */
#define VFAB_DMA_MIN_CHUNK_BYTES (512u << 10)

/* Transfers shorter than this (2 x the smallest range) never split. */
extern uint64_t vfab_dma_split_from_bytes;

/*
 * A context of an HCA whose copy_engines is hca_engines opens: raises the
 * pool's bound and returns the engines its copies use. Environment, for
 * experiments: VFAB_COPY_ENGINES=N (1..16) replaces the HCA's value,
 * VFAB_COPY_SPLIT_MIN=BYTES the smallest range.
 */
unsigned vfab_dma_configure(unsigned hca_engines);

/*
 * Moves len_bytes (the transfer's total) as vfab_xfer_write (write) or
 * vfab_xfer_read would, over at most `engines` threads. 0 or the -errno of
 * the first range that failed; a failed copy may have moved some ranges.
 */
int vfab_dma_copy(const struct vfab_peer *p, bool write, unsigned engines, uint64_t len_bytes,
		  const struct iovec *local, unsigned int nlocal, const struct iovec *remote,
		  unsigned int nremote);

/* vfab_xfer_write with engines: costs small transfers one comparison. */
static inline int vfab_dma_write(const struct vfab_peer *p, unsigned engines, uint64_t len_bytes,
				 const struct iovec *src, unsigned int nsrc,
				 const struct iovec *dst, unsigned int ndst)
{
	if (len_bytes < vfab_dma_split_from_bytes || engines < 2)
		return vfab_xfer_write(p, src, nsrc, dst, ndst);
	return vfab_dma_copy(p, true, engines, len_bytes, src, nsrc, dst, ndst);
}

/* vfab_xfer_read with engines. */
static inline int vfab_dma_read(const struct vfab_peer *p, unsigned engines, uint64_t len_bytes,
				const struct iovec *dst, unsigned int ndst, const struct iovec *src,
				unsigned int nsrc)
{
	if (len_bytes < vfab_dma_split_from_bytes || engines < 2)
		return vfab_xfer_read(p, dst, ndst, src, nsrc);
	return vfab_dma_copy(p, false, engines, len_bytes, dst, ndst, src, nsrc);
}

#endif /* VFAB_DMA_H */
