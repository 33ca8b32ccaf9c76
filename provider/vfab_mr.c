/* SPDX-License-Identifier: MIT */
/*
 * Memory registration. The HCA of a real node pins the pages; here the
 * region slot records where the bytes live in the owner process, and peers
 * reach them with process_vm_writev/readv after checking the key.
 */
#include "provider/vfab.h"
#include "provider/vfab_mr_check.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define MINCORE_CHUNK_PAGES 4096

/* Whether every page of [addr, addr+len) is mapped, as pinning would require. */
static int range_mapped(const void *addr, size_t len)
{
	long psz = sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)addr & ~((uintptr_t)psz - 1);
	uintptr_t end = (uintptr_t)addr + len;
	unsigned char vec[MINCORE_CHUNK_PAGES];

	while (start < end) {
		/* Without rounding up first: a range to the top of memory would wrap to 0 pages. */
		size_t n = (end - start) / (size_t)psz + ((end - start) % (size_t)psz != 0);

		if (n > MINCORE_CHUNK_PAGES)
			n = MINCORE_CHUNK_PAGES;
		/* ENOMEM: part of the range is not mapped at all. */
		if (mincore((void *)start, n * (size_t)psz, vec) < 0)
			return -EFAULT;
		start += n * (size_t)psz;
	}
	return 0;
}

/*
 * Whether every page of [addr, addr+len) is mapped writable. Pinning with
 * write access fails on read-only memory (EFAULT); peers may write through
 * /proc/<pid>/mem, which would not refuse, so the check is made here.
 */
static int range_writable(const void *addr, size_t len)
{
	uintptr_t cur = (uintptr_t)addr, end = (uintptr_t)addr + len;
	unsigned long lo, hi;
	char perms[8], line[512];
	FILE *f = fopen("/proc/self/maps", "re");
	int rc = -EFAULT;

	if (!f)
		return 0; /* no procfs: nothing to check against, as before */
	while (cur < end && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || hi <= cur)
			continue;
		if (lo > cur || perms[1] != 'w')
			break;
		cur = hi;
	}
	if (cur >= end)
		rc = 0;
	fclose(f);
	return rc;
}

/* Checks a registration as pinning would: 0 or -errno. */
static int check_range(void *addr, size_t length, int access)
{
	int rc = vfab_mr_access_valid((unsigned int)access);

	if (rc)
		return rc;
	if (!length || (uintptr_t)addr + length < (uintptr_t)addr)
		return -EINVAL;
	/*
	 * On demand (the implicit MR, NULL and SIZE_MAX, included): the pages
	 * are found when a copy reaches them, as an ODP MR faults them in
	 * (vfab_odp.c).
	 */
	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	rc = range_mapped(addr, length);
	if (!rc && (access & IBV_ACCESS_LOCAL_WRITE))
		rc = range_writable(addr, length);
	return rc;
}

/* Fills a revoked or new slot; a zero length matches no key check, so it goes last. */
static void publish(struct vfab_mr_slot *s, const struct vfab_pd *pd, void *addr, size_t length,
		    uint64_t iova, int access)
{
	s->pd = (uint32_t)pd->slot;
	s->access = (uint32_t)access;
	s->addr = (uint64_t)(uintptr_t)addr;
	s->iova = iova;
	atomic_thread_fence(memory_order_release);
	s->length = length;
}

struct ibv_mr *vfab_reg_mr(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
			   int access)
{
	int rc = check_range(addr, length, access);

	if (rc) {
		errno = -rc;
		return NULL;
	}
	return vfab_mr_register(ibpd, addr, length, hca_va, access);
}

struct ibv_mr *vfab_mr_register(struct ibv_pd *ibpd, void *addr, size_t length, uint64_t hca_va,
				int access)
{
	struct vfab_context *ctx = to_vctx(ibpd->context);
	struct vfab_pd *pd = to_vpd(ibpd);
	struct vfab_mr *mr;
	uint32_t key;
	int rc, slot;

	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		rc = -ENOMEM;
		goto fail;
	}
	slot = vfab_mr_alloc(ctx->r, &ctx->owner);
	if (slot < 0) {
		free(mr);
		rc = slot;
		goto fail;
	}
	key = ctx->r->mrs[slot].key;
	ctx->r->mrs[slot].hca = ctx->hca_idx;
	publish(&ctx->r->mrs[slot], pd, addr, length, hca_va, access);
	rc = vfab_mr_seal(ctx, slot,
			  &(struct vfab_mr_slot){.key = key,
						 .pd = (uint32_t)pd->slot,
						 .access = (uint32_t)access,
						 .addr = (uint64_t)(uintptr_t)addr,
						 .length = length,
						 .iova = hca_va});
	if (rc) {
		vfab_mr_free(ctx->r, slot);
		free(mr);
		goto fail;
	}
	mr->slot = slot;
	mr->pd = pd;
	mr->vmr.ibv_mr.lkey = key;
	mr->vmr.ibv_mr.rkey = key;
	mr->vmr.ibv_mr.handle = (uint32_t)slot;
	mr->vmr.mr_type = VABI_MR_TYPE_MR;
	mr->vmr.access = access;
	atomic_fetch_add(&pd->users, 1);
	return &mr->vmr.ibv_mr;
fail:
	errno = -rc;
	return NULL;
}

int vfab_mr_seal(struct vfab_context *ctx, int slot, const struct vfab_mr_slot *m)
{
	return vfab_ctl_seal(ctx, VFAB_OBJ_MR, (uint32_t)slot,
			     "key=%u pd=%u access=%u addr=%" PRIu64 " len=%" PRIu64 " iova=%" PRIu64
			     " kind=%u parent=%u qpn=%u",
			     m->key, m->pd, m->access, m->addr, m->length, m->iova, m->kind,
			     m->parent_key, m->qpn);
}

/*
 * ibv_rereg_mr, in place as a ConnectX modifies its mkey: the keys stay.
 * The new translation, PD or rights are checked first (a failure leaves
 * the registration as it was and its errno goes back: libibverbs answers
 * IBV_REREG_MR_ERR_CMD); then vfabd's record is withdrawn and the slot
 * revoked, which waits for the copies past its check, and both published
 * again, so a peer sees the old registration, none (an access error, as
 * during a rereg on hardware) or the new one, never a mix.
 */
int vfab_rereg_mr(struct vabi_mr *vmr, int flags, struct ibv_pd *ibpd, void *addr, size_t length,
		  int access)
{
	struct vfab_mr *mr = (struct vfab_mr *)vmr;
	struct vfab_context *ctx = to_vctx(vmr->ibv_mr.context);
	struct vfab_mr_slot *s = &ctx->r->mrs[mr->slot];
	bool translate = flags & IBV_REREG_MR_CHANGE_TRANSLATION;
	struct vfab_pd *pd = (flags & IBV_REREG_MR_CHANGE_PD) ? to_vpd(ibpd) : mr->pd;
	int acc = (flags & IBV_REREG_MR_CHANGE_ACCESS) ? access : vmr->access, rc;
	void *a = translate ? addr : vmr->ibv_mr.addr;
	size_t len = translate ? length : vmr->ibv_mr.length;
	uint64_t iova = translate ? (uint64_t)(uintptr_t)addr : s->iova;

	if (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED || !flags ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && (!ibpd || ibpd->context != vmr->ibv_mr.context)))
		return errno = EINVAL;
	rc = check_range(a, len, acc);
	if (rc)
		return errno = -rc;
	rc = vfab_ctl_unseal(ctx, VFAB_OBJ_MR, (uint32_t)mr->slot);
	if (rc)
		return errno = -rc;
	vfab_mr_revoke(ctx->r, mr->slot);
	publish(s, pd, a, len, iova, acc);
	rc = vfab_mr_seal(ctx, mr->slot,
			  &(struct vfab_mr_slot){.key = vmr->ibv_mr.lkey,
						 .pd = (uint32_t)pd->slot,
						 .access = (uint32_t)acc,
						 .addr = (uint64_t)(uintptr_t)a,
						 .length = len,
						 .iova = iova});
	if (rc)
		return errno = -rc; /* registered nowhere: every key check fails */
	if (pd != mr->pd) {
		atomic_fetch_add(&pd->users, 1);
		atomic_fetch_sub(&mr->pd->users, 1);
		mr->pd = pd;
	}
	vmr->access = acc;
	return 0;
}

int vfab_dereg_mr(struct vabi_mr *vmr)
{
	struct vfab_mr *mr = (struct vfab_mr *)vmr;
	struct vfab_context *ctx = to_vctx(vmr->ibv_mr.context);

	/* vfabd's record first: from then on no check passes, and the free waits for those before.
	 */
	vfab_ctl_unseal(ctx, VFAB_OBJ_MR, (uint32_t)mr->slot);
	vfab_mr_free(ctx->r, mr->slot);
	atomic_fetch_sub(&mr->pd->users, 1);
	if (mr->dm)
		atomic_fetch_sub(&mr->dm->users, 1);
	free(mr);
	return 0;
}

const struct vfab_mr_slot *vfab_mr_find(struct vfab_region *r, const struct vfab_ktab *k,
					uint32_t key, struct vfab_mr_slot *out)
{
	const struct vfab_mr_slot *rs = vfab_mr_lookup(r, key);

	/* A region slot revoked (length 0) or invalidated: gone, whatever vfabd still holds. */
	if (!rs || !rs->length)
		return NULL;
	return vfab_kmr_copy(k, key, out);
}
