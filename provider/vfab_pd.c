/* SPDX-License-Identifier: MIT */
/* Protection domains: a region slot, so peers can compare an MR's PD with a QP's. */
#include "provider/vfab.h"

#include <errno.h>
#include <stdlib.h>

struct ibv_pd *vfab_alloc_pd(struct ibv_context *ibctx)
{
	struct vfab_context *ctx = to_vctx(ibctx);
	struct vfab_pd *pd;
	int slot;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	slot = vfab_pd_alloc(ctx->r, &ctx->owner, ctx->hca_idx);
	if (slot >= 0) {
		int rc = vfab_ctl_seal(ctx, VFAB_OBJ_PD, (uint32_t)slot, "%s", "");

		if (rc) {
			vfab_pd_free(ctx->r, slot);
			slot = rc;
		}
	}
	if (slot < 0) {
		free(pd);
		errno = -slot;
		return NULL;
	}
	pd->slot = slot;
	pd->ibv.handle = (uint32_t)slot;
	return &pd->ibv;
}

/*
 * Like the kernel: a PD still used by an MR, QP, SRQ, AH or parent domain
 * is busy. A parent domain is a wrapper of this process only.
 */
int vfab_dealloc_pd(struct ibv_pd *ibpd)
{
	struct vfab_pd *pd = (struct vfab_pd *)ibpd;

	if (pd->protection) {
		atomic_fetch_sub(&pd->protection->users, 1);
		if (pd->td)
			atomic_fetch_sub(&((struct vfab_td *)pd->td)->users, 1);
		free(pd);
		return 0;
	}
	if (atomic_load(&pd->users))
		return EBUSY;
	vfab_ctl_unseal(to_vctx(ibpd->context), VFAB_OBJ_PD, (uint32_t)pd->slot);
	vfab_pd_free(to_vctx(ibpd->context)->r, pd->slot);
	free(pd);
	return 0;
}

/*
 * A parent domain: the PD with a thread domain and the application's
 * allocators. vfab's queues live in the fabric's shared region, where
 * peers reach them, so the allocators are accepted but never called (the
 * provider's default memory, as when an allocator answers
 * IBV_ALLOCATOR_USE_DEFAULT); a thread domain changes no locking.
 */
struct ibv_pd *vfab_alloc_parent_domain(struct ibv_context *ibctx,
					struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known =
	    IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS | IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct vfab_pd *base, *pd;

	if (!attr->pd || attr->pd->context != ibctx || attr->comp_mask & ~known ||
	    (attr->td && attr->td->context != ibctx)) {
		errno = EINVAL;
		return NULL;
	}
	base = (struct vfab_pd *)attr->pd;
	if (base->protection) {
		errno = EINVAL; /* a parent domain of a parent domain */
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	/* libibverbs sets the context of a PD, but not of a parent domain. */
	pd->ibv.context = ibctx;
	pd->slot = base->slot;
	pd->ibv.handle = base->ibv.handle;
	pd->protection = base;
	pd->td = attr->td;
	atomic_fetch_add(&base->users, 1);
	if (attr->td)
		atomic_fetch_add(&((struct vfab_td *)attr->td)->users, 1);
	return &pd->ibv;
}

struct ibv_td *vfab_alloc_td(struct ibv_context *ibctx, struct ibv_td_init_attr *attr)
{
	struct vfab_td *td;

	if (attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (!td) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv.context = ibctx;
	return &td->ibv;
}

int vfab_dealloc_td(struct ibv_td *ibtd)
{
	struct vfab_td *td = (struct vfab_td *)ibtd;

	if (atomic_load(&td->users))
		return EBUSY;
	free(td);
	return 0;
}
