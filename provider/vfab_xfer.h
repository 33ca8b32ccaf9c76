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
 * Largest transfer that goes through /proc/<pid>/mem: opened once per
 * connection, a pwrite there skips the pid lookup and access check that
 * process_vm_writev makes on every call (0.4 us of a 1.4 us round on the
 * development VM). Past two pages the kernel's bounce page through which it
 * copies costs more than it saves.
 */
#define VFAB_XFER_MEM_MAX 4096

/*
 * The process a transfer reaches. process_vm_writev takes a pid number, which
 * a new process may hold once the owner died: a copy by pid goes only after
 * the owner's pidfd (opened while the registered start time matched) says
 * it still runs. The memfd names the owner's address space itself and needs
 * no check. A foreign peer's pid is a number of another PID namespace,
 * naming someone else or no one here: every copy goes through the memfd.
 */
struct vfab_peer {
	pid_t pid;
	int memfd;    /* its /proc/<pid>/mem (vfab_xfer_open), or -1 */
	int pidfd1;   /* its pidfd + 1; 0: none (this process, or not resolved so) */
	bool self;    /* this process: a plain copy */
	bool foreign; /* pid of another PID namespace: memfd only (-ESRCH without) */
};

/* Whether the process behind a pidfd has not exited (one poll, no wait). */
bool vfab_xfer_alive(int pidfd);

/*
 * The same through its /proc/<pid>/mem, for a peer this process has no
 * pidfd on (pids of another PID namespace): one byte read at address 0.
 */
bool vfab_xfer_mem_alive(int memfd);

/*
 * Opens /proc/<pid>/mem for the small transfers of a connection: the fd or
 * -errno (then process_vm_writev does everything). VFAB_XFER=pvm in the
 * environment turns this path off.
 */
int vfab_xfer_open(pid_t pid);

/*
 * Writes the local segments into the remote ones of the peer. Copies
 * min(total src, total dst) bytes. 0 or -errno: -ESRCH when the peer is
 * gone, -EFAULT for an unmapped range.
 */
int vfab_xfer_write(const struct vfab_peer *p, const struct iovec *src, unsigned int nsrc,
		    const struct iovec *dst, unsigned int ndst);

/*
 * Writes into another process (never this one) segments of equal total
 * length, at most IOV_MAX on each side, in one system call when nothing
 * faults: the copy of a chain of WRITEs. Consumes both arrays.
 */
int vfab_xfer_writev(pid_t pid, struct iovec *src, unsigned int nsrc, struct iovec *dst,
		     unsigned int ndst);

/* Reads the remote segments of the peer into the local ones. */
int vfab_xfer_read(const struct vfab_peer *p, const struct iovec *dst, unsigned int ndst,
		   const struct iovec *src, unsigned int nsrc);

/*
 * Moves bytes [off_bytes, off_bytes + len_bytes) of the transfer that
 * vfab_xfer_write (write) or vfab_xfer_read would make: the share of one
 * copy engine. The same owner checks as the whole transfer; at most
 * VFAB_XFER_MAX_IOV segments each way.
 */
int vfab_xfer_part(const struct vfab_peer *p, bool write, const struct iovec *local,
		   unsigned int nlocal, const struct iovec *remote, unsigned int nremote,
		   uint64_t off_bytes, uint64_t len_bytes);

#endif /* VFAB_XFER_H */
