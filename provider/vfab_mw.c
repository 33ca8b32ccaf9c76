/* SPDX-License-Identifier: MIT */
/*
 * Memory windows. A window is a key of the MR table (its slot's kind says
 * type 1 or 2): a remote requester finds it by rkey like an MR and checks
 * it, and through it its parent MR, with vfab_key_check_remote. A bind
 * moves the key (its low byte is the consumer's, ibv_inc_rkey) and the
 * range; an invalidation (LOCAL_INV, a peer's SEND_WITH_INV) leaves length
 * 0, which matches no check. The rules are vfab_mr_check.c's.
 */
#include "provider/vfab.h"
#include "provider/vfab_mr_check.h"

#include <errno.h>
#include <stdlib.h>

static inline struct vfab_mw *to_vmw(struct ibv_mw *mw)
{
	return (struct vfab_mw *)mw;
}

struct ibv_mw *vfab_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct vfab_context *ctx = to_vctx(ibpd->context);
	struct vfab_pd *pd = to_vpd(ibpd);
	struct vfab_mr_slot *s;
	struct vfab_mw *mw;
	int slot;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	/* Windows and MRs share one key space, as mkeys do on a ConnectX. */
	slot = vfab_mr_alloc(ctx->r, &ctx->owner);
	if (slot < 0) {
		free(mw);
		errno = -slot;
		return NULL;
	}
	s = &ctx->r->mrs[slot];
	s->hca = ctx->hca_idx;
	s->pd = (uint32_t)pd->slot;
	s->kind = type == IBV_MW_TYPE_1 ? VFAB_MKEY_MW1 : VFAB_MKEY_MW2;
	mw->slot = slot;
	mw->pd = pd;
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.rkey = s->key;
	mw->mw.handle = (uint32_t)slot;
	mw->mw.type = type;
	atomic_fetch_add(&pd->users, 1);
	return &mw->mw;
}

int vfab_dealloc_mw(struct ibv_mw *ibmw)
{
	struct vfab_mw *mw = to_vmw(ibmw);
	struct vfab_context *ctx = to_vctx(ibmw->context);

	vfab_mr_free(ctx->r, mw->slot);
	atomic_fetch_sub(&mw->pd->users, 1);
	free(mw);
	return 0;
}

/* A window of this context, or NULL (a pointer of another device's). */
static struct vfab_mr_slot *own_window(struct vfab_qp *qp, struct ibv_mw *ibmw)
{
	struct vfab_mw *mw = to_vmw(ibmw);

	if (!ibmw || ibmw->context != qp->vqp.qp.context)
		return NULL;
	return &qp->ctx->r->mrs[mw->slot];
}

static enum ibv_wc_status bind(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_region *r = qp->ctx->r;
	struct vfab_mr_slot *s = own_window(qp, w->mw), *mr = NULL;
	enum ibv_wc_status st;

	if (!s)
		return IBV_WC_MW_BIND_ERR;
	if (w->bind_mr) {
		mr = vfab_mr_lookup(r, w->bind_mr->lkey);
		if (!mr || mr->hca != qp->ctx->hca_idx)
			return IBV_WC_MW_BIND_ERR;
	}
	st = vfab_mw_check_bind(s, mr, qp->s->pd, w->rkey, w->bind_addr, mr ? w->bind_len : 0,
				w->bind_access);
	if (st != IBV_WC_SUCCESS)
		return st;
	/* Unbound first, so that a peer's check never sees half of each binding. */
	s->length = 0;
	atomic_thread_fence(memory_order_seq_cst);
	s->key = w->rkey;
	if (!mr)
		return IBV_WC_SUCCESS;
	s->iova = w->bind_addr;
	s->access = w->bind_access;
	s->parent_key = mr->key;
	s->qpn = qp->qpn;
	atomic_thread_fence(memory_order_release);
	s->length = w->bind_len;
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status vfab_mw_exec(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_mr_slot *s;

	if (w->opcode == IBV_WR_BIND_MW)
		return bind(qp, w);
	/* LOCAL_INV: a type 2 window bound through this QP (as Linux rxe fails others). */
	s = vfab_mr_lookup(qp->ctx->r, w->inv_rkey);
	if (!vfab_mw_check_invalidate(s, w->inv_rkey, qp->ctx->hca_idx, qp->s->pd, qp->qpn))
		return IBV_WC_LOC_QP_OP_ERR;
	s->length = 0;
	atomic_thread_fence(memory_order_seq_cst);
	return IBV_WC_SUCCESS;
}

bool vfab_mw_remote_inv(struct vfab_region *r, uint32_t hca, const struct vfab_qp_slot *d,
			uint32_t rkey, bool apply)
{
	struct vfab_mr_slot *s = vfab_mr_lookup(r, rkey);

	if (!vfab_mw_check_invalidate(s, rkey, hca, d->pd, d->qpn))
		return false;
	if (apply) {
		s->length = 0;
		atomic_thread_fence(memory_order_seq_cst);
	}
	return true;
}
