/* SPDX-License-Identifier: MIT */
/*
 * Moving bytes between processes the way a DMA engine would: once, straight
 * from the source buffers into the destination buffers, in ascending address
 * order (NCCL polls the last 8 bytes of a written entry and expects the rest
 * to be there).
 */
#ifndef VFAB_XFER_H
#define VFAB_XFER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

/* Most segments one transfer gathers: max SGEs plus a UD GRH. */
#define VFAB_XFER_MAX_IOV 33

/*
 * Writes the local segments into the remote ones of process pid (self: a
 * plain copy in this process). Copies min(total src, total dst) bytes.
 * 0 or -errno: -ESRCH when pid is gone, -EFAULT for an unmapped range.
 */
int vfab_xfer_write(pid_t pid, bool self, const struct iovec *src, unsigned int nsrc,
		    const struct iovec *dst, unsigned int ndst);

/*
 * Writes into another process (never this one) segments of equal total
 * length, at most IOV_MAX on each side, in one system call when nothing
 * faults: the copy of a chain of WRITEs. Consumes both arrays.
 */
int vfab_xfer_writev(pid_t pid, struct iovec *src, unsigned int nsrc, struct iovec *dst,
		     unsigned int ndst);

/* Reads the remote segments of process pid into the local ones. */
int vfab_xfer_read(pid_t pid, bool self, const struct iovec *dst, unsigned int ndst,
		   const struct iovec *src, unsigned int nsrc);

#endif /* VFAB_XFER_H */
