/* SPDX-License-Identifier: MIT */
/*
 * Transfers straight into or out of another process (see vfab_xfer.h):
 * process_vm_writev/readv, or a pwrite/pread of /proc/<pid>/mem for small
 * ones; within the process too, process_vm_writev/readv on its own pid.
 *
 * Within the process a memcpy would be cheaper, but an HCA pins registered
 * pages and vfab cannot: a registered buffer the process has since
 * munmapped (or made read-only) is then a SIGSEGV in whichever thread
 * copies. The kernel's copy answers -EFAULT instead, which is what a copy
 * into another process gives, and the responder turns into the status of an
 * access outside any MR (docs/DESIGN.md "Where vfab differs").
 */
#include "provider/vfab_xfer.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

static uint64_t iov_total(const struct iovec *v, unsigned int n)
{
	uint64_t t = 0;
	unsigned int i;

	for (i = 0; i < n; i++)
		t += v[i].iov_len;
	return t;
}

/* Drops the first `done` bytes of an iovec array in place; returns the new count. */
static unsigned int iov_advance(struct iovec *v, unsigned int n, size_t done)
{
	unsigned int i = 0, k;

	while (i < n && done >= v[i].iov_len) {
		done -= v[i].iov_len;
		i++;
	}
	if (i < n) {
		v[i].iov_base = (char *)v[i].iov_base + done;
		v[i].iov_len -= done;
	}
	for (k = 0; i + k < n; k++)
		v[k] = v[i + k];
	return k;
}

/* Keeps at most `limit` bytes of an iovec array; returns the new count. */
static unsigned int iov_truncate(struct iovec *v, unsigned int n, uint64_t limit)
{
	unsigned int i;

	for (i = 0; i < n && limit; i++) {
		if (v[i].iov_len > limit)
			v[i].iov_len = limit;
		limit -= v[i].iov_len;
	}
	return i;
}

/*
 * One step of a walk: n bytes from s to d, both inside one segment; tail:
 * they are among the last bytes, which pollers watch. The bytes moved, or
 * -errno.
 */
typedef ssize_t (*seg_step)(void *arg, char *d, const char *s, size_t n, bool tail);

/*
 * Walks total bytes of dst[] against src[] in order, cutting at every
 * segment boundary and at body, so that the bytes from body on (the last
 * ones) move in steps of their own, after the rest.
 */
static int walk_segments(const struct iovec *dst, unsigned int ndst, const struct iovec *src,
			 unsigned int nsrc, uint64_t total, uint64_t body, seg_step step, void *arg)
{
	unsigned int di = 0, si = 0;
	size_t doff = 0, soff = 0;
	uint64_t done = 0;

	while (done < total) {
		size_t n;
		ssize_t k;

		while (di < ndst && doff == dst[di].iov_len)
			di++, doff = 0;
		while (si < nsrc && soff == src[si].iov_len)
			si++, soff = 0;
		n = dst[di].iov_len - doff;
		if (src[si].iov_len - soff < n)
			n = src[si].iov_len - soff;
		if (n > total - done)
			n = total - done;
		if (done < body && done + n > body)
			n = body - done;
		k = step(arg, (char *)dst[di].iov_base + doff,
			 (const char *)src[si].iov_base + soff, n, done >= body);
		if (k < 0)
			return (int)k;
		done += (uint64_t)k;
		doff += (size_t)k;
		soff += (size_t)k;
	}
	return 0;
}

/* Moves total bytes between arrays the caller lets us consume. */
static int xfer_inplace(pid_t pid, bool write, struct iovec *l, unsigned int nlocal,
			struct iovec *rm, unsigned int nremote, uint64_t total)
{
	ssize_t n;

	while (total) {
		n = write ? process_vm_writev(pid, l, nlocal, rm, nremote, 0)
			  : process_vm_readv(pid, l, nlocal, rm, nremote, 0);
		if (n < 0)
			return -errno;
		/* A partial transfer stops at the first page that is not there. */
		if (n == 0)
			return -EFAULT;
		total -= (uint64_t)n;
		if (!total)
			break;
		nlocal = iov_advance(l, nlocal, (size_t)n);
		nremote = iov_advance(rm, nremote, (size_t)n);
	}
	return 0;
}

/* Any number of segments each way, lengths trimmed to the shorter side. */
static __attribute__((noinline)) int xfer_general(pid_t pid, bool write,
						  const struct iovec *local, unsigned int nlocal,
						  const struct iovec *remote, unsigned int nremote)
{
	struct iovec l[VFAB_XFER_MAX_IOV], rm[VFAB_XFER_MAX_IOV];
	uint64_t total;

	if (nlocal > VFAB_XFER_MAX_IOV || nremote > VFAB_XFER_MAX_IOV)
		return -EINVAL;
	total = iov_total(local, nlocal);
	if (iov_total(remote, nremote) < total)
		total = iov_total(remote, nremote);
	if (!total)
		return 0;
	memcpy(l, local, nlocal * sizeof(*l));
	memcpy(rm, remote, nremote * sizeof(*rm));
	nlocal = iov_truncate(l, nlocal, total);
	nremote = iov_truncate(rm, nremote, total);
	return xfer_inplace(pid, write, l, nlocal, rm, nremote, total);
}

/*
 * Whether the kernel's copy into another process's page (memcpy behind
 * /proc/<pid>/mem) stores in ascending order: with FSRM it is one rep movsb,
 * as copy_to_user behind process_vm_writev; without it, copies of 32 bytes
 * and more may run backwards, and a poller of the last 8 bytes would see
 * them first. Smaller copies always store in order.
 */
static bool kernel_copy_ascends(void)
{
	static int known = -1;
	int v = __atomic_load_n(&known, __ATOMIC_RELAXED);

	if (v < 0) {
#if defined(__x86_64__)
		unsigned int a, b, c, d;

		v = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 4)); /* FSRM */
#else
		v = 0;
#endif
		__atomic_store_n(&known, v, __ATOMIC_RELAXED);
	}
	return v;
}

bool vfab_xfer_alive(int pidfd)
{
	struct pollfd p = {.fd = pidfd, .events = POLLIN};

	/* Readable once the process has exited; an error says nothing is there. */
	return poll(&p, 1, 0) == 0;
}

bool vfab_xfer_mem_alive(int memfd)
{
	char b;

	/*
	 * The kernel answers 0 bytes once the address space is gone (exit,
	 * exec) and EIO for an unmapped page of a live one: page 0 is never
	 * mapped (mmap_min_addr), so a live owner gives EIO.
	 */
	return pread(memfd, &b, 1, 0) != 0;
}

int vfab_xfer_open(pid_t pid)
{
	static int disabled = -1;
	char path[32];
	int fd;

	if (disabled < 0) {
		const char *e = getenv("VFAB_XFER");

		disabled = e && !strcmp(e, "pvm");
	}
	if (disabled)
		return -ENOTSUP;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/*
 * A small transfer through /proc/<pid>/mem: the remote side is one range at
 * least as long as the local segments. 1 when it did not apply.
 */
static int xfer_mem(const struct vfab_peer *p, bool write, const struct iovec *local,
		    unsigned int nlocal, const struct iovec *remote)
{
	uint64_t total = iov_total(local, nlocal);
	ssize_t n;

	if (total > VFAB_XFER_MEM_MAX || total > remote->iov_len ||
	    (write && total >= 32 && !kernel_copy_ascends()))
		return 1;
	if (!total)
		return 0;
	n = write ? pwritev(p->memfd, local, (int)nlocal, (off_t)(uintptr_t)remote->iov_base)
		  : preadv(p->memfd, local, (int)nlocal, (off_t)(uintptr_t)remote->iov_base);
	if (n == (ssize_t)total)
		return 0;
	/* Nothing at all: the address space behind the fd is gone (exit, exec). */
	if (n == 0)
		return -ESRCH;
	/* EIO: a page that is not there; short: the same, further on. */
	return n < 0 && errno != EIO ? -errno : -EFAULT;
}

/* A write or read of /proc/<pid>/mem; d or s (the other process's side) is an address there. */
struct mem_walk {
	int memfd;
	bool write;
};

static ssize_t mem_step(void *arg, char *d, const char *s, size_t n, bool tail)
{
	const struct mem_walk *m = arg;
	ssize_t k = m->write ? pwrite(m->memfd, s, n, (off_t)(uintptr_t)d)
			     : pread(m->memfd, d, n, (off_t)(uintptr_t)s);

	(void)tail;
	/* Nothing at all: the address space is gone; EIO: a page is not there. */
	if (k == 0)
		return -ESRCH;
	if (k < 0)
		return errno == EIO ? -EFAULT : -errno;
	return k;
}

/*
 * Any transfer through /proc/<pid>/mem alone, for a foreign peer (its pid
 * is of another namespace: process_vm_writev would name someone else).
 * One call per pair of segments; a write stores its last 8 bytes in a call
 * of their own, after the rest, so a poller of them sees the rest first.
 */
static int xfer_mem_only(int memfd, bool write, const struct iovec *local, unsigned int nlocal,
			 const struct iovec *remote, unsigned int nremote)
{
	struct mem_walk m = {.memfd = memfd, .write = write};
	uint64_t total = iov_total(local, nlocal);

	if (memfd < 0)
		return -ESRCH;
	if (iov_total(remote, nremote) < total)
		total = iov_total(remote, nremote);
	if (write)
		return walk_segments(remote, nremote, local, nlocal, total,
				     total > 8 ? total - 8 : total, mem_step, &m);
	return walk_segments(local, nlocal, remote, nremote, total, total, mem_step, &m);
}

static int xfer(const struct vfab_peer *p, bool write, const struct iovec *local,
		unsigned int nlocal, const struct iovec *remote, unsigned int nremote)
{
	int rc;

	if (p->self) /* getpid(): the pid of our own namespace, which the kernel reads */
		return xfer_general(getpid(), write, local, nlocal, remote, nremote);
	if (p->foreign)
		return xfer_mem_only(p->memfd, write, local, nlocal, remote, nremote);
	if (p->memfd >= 0 && nremote == 1) {
		rc = xfer_mem(p, write, local, nlocal, remote);
		if (rc <= 0)
			return rc;
	}
	if (p->pidfd1 && !vfab_xfer_alive(p->pidfd1 - 1))
		return -ESRCH; /* its pid may be someone else's now */
	/*
	 * One segment each way, the shape of most latency-bound messages: every
	 * instruction before the system call delays the bytes.
	 */
	if (nlocal == 1 && nremote == 1 && local->iov_len == remote->iov_len) {
		ssize_t n = write ? process_vm_writev(p->pid, local, 1, remote, 1, 0)
				  : process_vm_readv(p->pid, local, 1, remote, 1, 0);

		if (n == (ssize_t)local->iov_len)
			return 0;
		if (n < 0)
			return -errno;
		/* Partial (a page went away midway): the general loop says why. */
	}
	return xfer_general(p->pid, write, local, nlocal, remote, nremote);
}

int vfab_xfer_writev(pid_t pid, struct iovec *src, unsigned int nsrc, struct iovec *dst,
		     unsigned int ndst)
{
	uint64_t total = iov_total(src, nsrc);

	if (nsrc > IOV_MAX || ndst > IOV_MAX || iov_total(dst, ndst) != total)
		return -EINVAL;
	return xfer_inplace(pid, true, src, nsrc, dst, ndst, total);
}

int vfab_xfer_write(const struct vfab_peer *p, const struct iovec *src, unsigned int nsrc,
		    const struct iovec *dst, unsigned int ndst)
{
	return xfer(p, true, src, nsrc, dst, ndst);
}

int vfab_xfer_read(const struct vfab_peer *p, const struct iovec *dst, unsigned int ndst,
		   const struct iovec *src, unsigned int nsrc)
{
	return xfer(p, false, dst, ndst, src, nsrc);
}

int vfab_xfer_part(const struct vfab_peer *p, bool write, const struct iovec *local,
		   unsigned int nlocal, const struct iovec *remote, unsigned int nremote,
		   uint64_t off_bytes, uint64_t len_bytes)
{
	struct iovec l[VFAB_XFER_MAX_IOV], rm[VFAB_XFER_MAX_IOV];

	if (nlocal > VFAB_XFER_MAX_IOV || nremote > VFAB_XFER_MAX_IOV)
		return -EINVAL;
	memcpy(l, local, nlocal * sizeof(*l));
	memcpy(rm, remote, nremote * sizeof(*rm));
	nlocal = iov_truncate(l, iov_advance(l, nlocal, off_bytes), len_bytes);
	nremote = iov_truncate(rm, iov_advance(rm, nremote, off_bytes), len_bytes);
	return xfer(p, write, l, nlocal, rm, nremote);
}
