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
	{
		extern void prof_mark(void);
		prof_mark();
	}
	while (total) {
		n = write ? process_vm_writev(pid, l, nlocal, rm, nremote, 0)
			  : process_vm_readv(pid, l, nlocal, rm, nremote, 0);
		{
			extern void prof_mark2(void);
			prof_mark2();
		}
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

#include <stdio.h>
__thread unsigned long long prof_t0;
static unsigned long long prof_hist[64];
void prof_mark(void)
{
	unsigned long long d = __builtin_ia32_rdtsc() - prof_t0;
	if (prof_t0 && d < 64 * 16)
		prof_hist[d / 16]++;
	prof_t0 = __builtin_ia32_rdtsc();
}
static unsigned long long prof_hist2[64];
void prof_mark2(void)
{
	unsigned long long d = __builtin_ia32_rdtsc() - prof_t0;
	if (prof_t0 && d < 64 * 128)
		prof_hist2[d / 128]++;
	prof_t0 = 0;
}
__attribute__((destructor)) static void prof_dump2(void)
{
	for (int i = 0; i < 64; i++)
		if (prof_hist2[i] > 1000)
			fprintf(stderr, "syscall %d-%d cycles: %llu\n", i * 128, i * 128 + 127, prof_hist2[i]);
}
__attribute__((destructor)) static void prof_dump(void)
{
	for (int i = 0; i < 64; i++)
		if (prof_hist[i] > 1000)
			fprintf(stderr, "precopy %d-%d cycles: %llu\n", i * 16, i * 16 + 15, prof_hist[i]);
}
