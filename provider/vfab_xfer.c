/* SPDX-License-Identifier: MIT */
/* Single-copy transfers with process_vm_writev/readv (see vfab_xfer.h). */
#include "provider/vfab_xfer.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <string.h>

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
 * In-process copy. memcpy may store the tail of a buffer before its middle,
 * so the last 8 bytes of the transfer are stored after a full fence.
 */
static void copy_segments(const struct iovec *dst, unsigned int ndst, const struct iovec *src,
			  unsigned int nsrc, uint64_t total)
{
	unsigned int di = 0, si = 0;
	size_t doff = 0, soff = 0;
	uint64_t body = total > 8 ? total - 8 : 0, done = 0;

	while (done < total) {
		size_t n = dst[di].iov_len - doff;
		char *d = (char *)dst[di].iov_base + doff;
		const char *s = (const char *)src[si].iov_base + soff;

		if (src[si].iov_len - soff < n)
			n = src[si].iov_len - soff;
		if (done < body && done + n > body)
			n = body - done;
		if (done >= body) {
			if (done == body)
				atomic_thread_fence(memory_order_seq_cst);
			for (size_t k = 0; k < n; k++)
				((volatile char *)d)[k] = s[k];
		} else {
			memcpy(d, s, n);
		}
		done += n;
		doff += n;
		soff += n;
		if (doff == dst[di].iov_len) {
			di++;
			doff = 0;
		}
		if (soff == src[si].iov_len) {
			si++;
			soff = 0;
		}
		while (done < total && di < ndst && dst[di].iov_len == 0)
			di++;
		while (done < total && si < nsrc && src[si].iov_len == 0)
			si++;
	}
}

/* Moves total bytes between arrays the caller lets us consume. */
static int xfer_inplace(pid_t pid, bool self, bool write, struct iovec *l, unsigned int nlocal,
			struct iovec *rm, unsigned int nremote, uint64_t total)
{
	ssize_t n;

	if (self) {
		if (write)
			copy_segments(rm, nremote, l, nlocal, total);
		else
			copy_segments(l, nlocal, rm, nremote, total);
		return 0;
	}
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

static int xfer(pid_t pid, bool self, bool write, const struct iovec *local, unsigned int nlocal,
		const struct iovec *remote, unsigned int nremote)
{
	struct iovec l[VFAB_XFER_MAX_IOV], rm[VFAB_XFER_MAX_IOV];
	uint64_t total;

	/*
	 * One segment each way, the size of most latency-bound messages: every
	 * instruction before the system call delays the bytes.
	 */
	if (nlocal == 1 && nremote == 1 && !self && local->iov_len == remote->iov_len) {
		ssize_t n = write ? process_vm_writev(pid, local, 1, remote, 1, 0)
				  : process_vm_readv(pid, local, 1, remote, 1, 0);

		if (n == (ssize_t)local->iov_len)
			return 0;
		if (n < 0)
			return -errno;
		/* Partial (a page went away midway): the general loop says why. */
	}
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
	return xfer_inplace(pid, self, write, l, nlocal, rm, nremote, total);
}

int vfab_xfer_writev(pid_t pid, struct iovec *src, unsigned int nsrc, struct iovec *dst,
		     unsigned int ndst)
{
	uint64_t total = iov_total(src, nsrc);

	if (nsrc > IOV_MAX || ndst > IOV_MAX || iov_total(dst, ndst) != total)
		return -EINVAL;
	return xfer_inplace(pid, false, true, src, nsrc, dst, ndst, total);
}

int vfab_xfer_write(pid_t pid, bool self, const struct iovec *src, unsigned int nsrc,
		    const struct iovec *dst, unsigned int ndst)
{
	return xfer(pid, self, true, src, nsrc, dst, ndst);
}

int vfab_xfer_read(pid_t pid, bool self, const struct iovec *dst, unsigned int ndst,
		   const struct iovec *src, unsigned int nsrc)
{
	return xfer(pid, self, false, dst, ndst, src, nsrc);
}
