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
	if (slot < 0) {
		free(pd);
		errno = -slot;
		return NULL;
	}
	pd->slot = slot;
	pd->ibv.handle = (uint32_t)slot;
	return &pd->ibv;
}

/* Like the kernel: a PD still used by an MR, QP, SRQ or AH is busy. */
int vfab_dealloc_pd(struct ibv_pd *ibpd)
{
	struct vfab_pd *pd = to_vpd(ibpd);

	if (atomic_load(&pd->users))
		return EBUSY;
	vfab_pd_free(to_vctx(ibpd->context)->r, pd->slot);
	free(pd);
	return 0;
}
