/* SPDX-License-Identifier: MIT */
/*
 * Memory windows. A window is a key of the MR table (its slot's kind says
 * type 1 or 2): a remote requester finds it by rkey like an MR and checks
 * it, and through it its parent MR, with vfab_key_check_remote. A bind
 * moves the key (its low byte is the consumer's, ibv_inc_rkey) and the
 * range, and vfabd seals the new binding (the bind's owner and parent MR
 * checked, fabric/ktab.h); an invalidation (LOCAL_INV, a peer's
 * SEND_WITH_INV) leaves the region slot's length 0, which no key check
 * passes (vfab_mr_find). The rules are vfab_mr_check.c's.
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
	int slot, rc;

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
	mw->mw.rkey = s->key;
	rc = vfab_mr_seal(
	    ctx, slot,
	    &(struct vfab_mr_slot){.key = mw->mw.rkey,
				   .pd = (uint32_t)pd->slot,
				   .kind = type == IBV_MW_TYPE_1 ? VFAB_MKEY_MW1 : VFAB_MKEY_MW2});
	if (rc) {
		vfab_mr_free(ctx->r, slot);
		free(mw);
		errno = -rc;
		return NULL;
	}
	mw->slot = slot;
	mw->pd = pd;
	mw->mw.context = ibpd->context;
	mw->mw.pd = ibpd;
	mw->mw.handle = (uint32_t)slot;
	mw->mw.type = type;
	atomic_fetch_add(&pd->users, 1);
	return &mw->mw;
}

int vfab_dealloc_mw(struct ibv_mw *ibmw)
{
	struct vfab_mw *mw = to_vmw(ibmw);
	struct vfab_context *ctx = to_vctx(ibmw->context);

	vfab_ctl_unseal(ctx, VFAB_OBJ_MR, (uint32_t)mw->slot);
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
	struct vfab_context *ctx = qp->ctx;
	struct vfab_mr_slot *s = own_window(qp, w->mw);
	const struct vfab_mr_slot *mr = NULL;
	enum ibv_wc_status st;

	if (!s)
		return IBV_WC_MW_BIND_ERR;
	if (w->bind_mr) {
		mr = vfab_mr_own(ctx, w->bind_mr->lkey);
		if (!mr || mr->hca != ctx->hca_idx)
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
	if (mr) {
		s->iova = w->bind_addr;
		s->access = w->bind_access;
		s->parent_key = mr->key;
		s->qpn = qp->qpn;
		atomic_thread_fence(memory_order_release);
		s->length = w->bind_len;
	}
	if (vfab_mr_seal(ctx, to_vmw(w->mw)->slot,
			 &(struct vfab_mr_slot){
			     .key = w->rkey,
			     .pd = (uint32_t)to_vmw(w->mw)->pd->slot,
			     .access = mr ? w->bind_access : 0,
			     .length = mr ? w->bind_len : 0,
			     .iova = mr ? w->bind_addr : 0,
			     .kind = w->mw->type == IBV_MW_TYPE_1 ? VFAB_MKEY_MW1 : VFAB_MKEY_MW2,
			     .parent_key = mr ? mr->key : 0,
			     .qpn = mr ? qp->qpn : 0})) {
		s->length = 0;
		return IBV_WC_MW_BIND_ERR;
	}
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

bool vfab_mw_remote_inv(const struct vfab_rmap *map, uint32_t hca, const struct vfab_qp_slot *kq,
			uint32_t rkey, bool apply)
{
	struct vfab_mr_slot *s = vfab_mr_lookup(map->r, rkey), snap;

	/* The window as vfabd sealed its binding; the region slot only says it still holds. */
	if (!vfab_mw_check_invalidate(vfab_mr_find(map->r, map->k, rkey, &snap), rkey, hca, kq->pd,
				      kq->qpn) ||
	    !vfab_owner_same(&snap.owner, &kq->owner))
		return false;
	if (apply) {
		s->length = 0;
		atomic_thread_fence(memory_order_seq_cst);
	}
	return true;
}
