/* SPDX-License-Identifier: MIT */
/*
 * On-demand paging, as a ConnectX offers it. vfab never pins: a copy finds
 * the owner's pages when it reaches them (process_vm_writev/readv), which is
 * what an ODP MR's page faults do on hardware. So an ODP registration is an
 * ordinary one whose pages need not exist yet (vfab_mr.c skips the mapping
 * checks for IBV_ACCESS_ON_DEMAND), the implicit ODP MR (NULL, SIZE_MAX)
 * covers the whole address space, and a copy into a page that is still not
 * mapped gives the requester the access error an unresolvable fault gives.
 * Here: ibv_advise_mr, whose prefetch faults the pages in now.
 */
#include "provider/vfab.h"
#include "provider/vfab_mr_check.h"

#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#define MADV_POPULATE_WRITE 23
#endif

/* Faults [addr, addr+len) in for reading or writing: 0 or -EFAULT. */
static int populate(uint64_t addr, uint64_t len, bool write)
{
	uint64_t psz = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = addr & ~(psz - 1), end = addr + len;

	if (!len)
		return 0;
	end = (end + psz - 1) & ~(psz - 1);
	if (madvise((void *)(uintptr_t)start, end - start,
		    write ? MADV_POPULATE_WRITE : MADV_POPULATE_READ))
		return -EFAULT;
	return 0;
}

/*
 * What mlx5's kernel driver answers: an advice other than the three
 * prefetches or an unknown flag EOPNOTSUPP; a key that names no ODP MR
 * ENOENT, a memory window's EINVAL; an MR of another PD, or PREFETCH_WRITE into a read-only one,
 * EPERM. Only a flushed (synchronous) prefetch reports the range: outside
 * the MR or not in the address space, EFAULT; without the flag the faults
 * are the kernel's background work and their failures are not returned.
 */
int vfab_advise_mr(struct ibv_pd *ibpd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg, uint32_t num_sge)
{
	struct vfab_context *ctx = to_vctx(ibpd->context);
	struct vfab_pd *pd = to_vpd(ibpd);
	bool flush = flags & IBV_ADVISE_MR_FLAG_FLUSH, write;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return EOPNOTSUPP;
	if (flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH)
		return EOPNOTSUPP;
	if (!num_sge || !sg)
		return EINVAL;
	write = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE;
	if (pd->protection)
		pd = pd->protection;
	for (uint32_t i = 0; i < num_sge; i++) {
		const struct vfab_mr_slot *mr = vfab_mr_own(ctx, sg[i].lkey);
		uint64_t va;

		if (!mr || mr->hca != ctx->hca_idx || !(mr->access & IBV_ACCESS_ON_DEMAND))
			return ENOENT;
		if (mr->kind != VFAB_MKEY_MR)
			return EINVAL; /* a window's key: a valid key of the wrong kind */
		if (mr->pd != (uint32_t)pd->slot ||
		    (write && !(mr->access & IBV_ACCESS_LOCAL_WRITE)))
			return EPERM;
		if (vfab_mr_check_local(
			mr, sg[i].lkey, ctx->hca_idx, (uint32_t)pd->slot, sg[i].addr, sg[i].length,
			write ? IBV_ACCESS_LOCAL_WRITE : 0, &va) != IBV_WC_SUCCESS) {
			if (flush)
				return EFAULT;
			continue;
		}
		if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT &&
		    populate(va, sg[i].length, write) && flush)
			return EFAULT;
	}
	return 0;
}
