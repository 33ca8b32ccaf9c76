/* SPDX-License-Identifier: MIT */
/*
 * Shared receive queues: a receive ring in the region that every QP attached
 * to it consumes from, with the limit event that tells the owner to refill.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>

static uint32_t ring_size(uint32_t max_wr)
{
	uint32_t c = 2;

	/* One entry more than granted, like mlx5's SRQ: max_wr = size - 1. */
	while (c < max_wr + 1)
		c <<= 1;
	return c;
}

/*
 * A basic SRQ (xrcd NULL, tm_tags 0), an XRC SRQ of domain xrcd or a tag
 * matching SRQ of tm_tags tagged buffers, the last two completing into cq.
 */
static struct ibv_srq *srq_create(struct vfab_pd *pd, struct ibv_srq_attr *a,
				  struct vfab_xrcd *xrcd, struct vfab_cq *cq, uint32_t tm_tags)
{
	struct vfab_context *ctx = to_vctx(pd->ibv.context);
	struct vfab_srq_slot *s;
	struct vfab_srq *srq;
	uint32_t size;
	int slot, slot_rc;

	/* max_wr 0 is legal (mlx5 rounds the queue up), pyverbs relies on it. */
	if (a->max_wr > VFAB_MAX_SRQ_WR || a->max_sge > VFAB_MAX_SRQ_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	size = ring_size(a->max_wr);
	slot = vfab_srq_alloc(ctx->r, &ctx->owner, size, a->max_sge ? a->max_sge : 1, tm_tags);
	if (slot < 0) {
		free(srq);
		errno = -slot;
		return NULL;
	}
	s = &ctx->r->srqs[slot];
	if (tm_tags && vfab_tm_table(srq, ctx, s, tm_tags)) {
		vfab_srq_free(ctx->r, slot);
		free(srq);
		errno = EIO;
		return NULL;
	}
	s->hca = ctx->hca_idx;
	s->pd = (uint32_t)pd->slot;
	s->cq = cq ? (uint32_t)cq->slot : VFAB_SLOT_NONE;
	s->xrcd = xrcd ? xrcd->id : 0;
	s->user_srq = (uint64_t)(uintptr_t)&srq->vsrq.srq;
	s->async_pid = ctx->owner.pid;
	s->async_id = ctx->async_id;
	slot_rc = vfab_ctl_seal(ctx, VFAB_OBJ_SRQ, (uint32_t)slot,
				"pd=%d cookie=%" PRIu64 " async=%u cq=%u xrcd=%u tm=%u", pd->slot,
				(uint64_t)(uintptr_t)&srq->vsrq.srq, ctx->async_id, s->cq, s->xrcd,
				tm_tags);
	if (slot_rc) {
		vfab_srq_free(ctx->r, slot);
		free(srq);
		errno = -slot_rc;
		return NULL;
	}
	srq->ctx = ctx;
	srq->pd = pd;
	srq->xrcd = xrcd;
	srq->cq = cq;
	srq->slot = slot;
	srq->s = s;
	srq->max_wr = size - 1;
	srq->max_sge = s->rq.max_sge;
	pthread_mutex_init(&srq->post_lock, NULL);
	srq->vsrq.srq.handle = (uint32_t)slot;
	srq->vsrq.srq_type = xrcd ? IBV_SRQT_XRC : tm_tags ? IBV_SRQT_TM : IBV_SRQT_BASIC;
	srq->vsrq.xrcd = xrcd ? (struct verbs_xrcd *)&xrcd->vxrcd : NULL;
	srq->vsrq.cq = cq ? &cq->vcq.cq : NULL;
	srq->vsrq.srq_num = (uint32_t)slot;
	/* The limit is armed by modify_srq only. */
	a->max_wr = srq->max_wr;
	a->max_sge = srq->max_sge;
	a->srq_limit = 0;
	atomic_fetch_add(&pd->users, 1);
	if (xrcd)
		atomic_fetch_add(&xrcd->users, 1);
	if (cq)
		atomic_fetch_add(&cq->users, 1);
	return &srq->vsrq.srq;
}

struct ibv_srq *vfab_create_srq(struct ibv_pd *ibpd, struct ibv_srq_init_attr *init)
{
	struct ibv_srq *srq = srq_create(to_vpd(ibpd), &init->attr, NULL, NULL, 0);

	if (srq) {
		srq->context = ibpd->context;
		srq->pd = ibpd;
		srq->srq_context = init->srq_context;
	}
	return srq;
}

/*
 * ibv_create_srq_ex: libibverbs takes a basic SRQ with nothing but a PD
 * to create_srq; here come XRC SRQs (a PD, a domain and a CQ each) and tag
 * matching SRQs (a PD, a CQ and tm_cap within tm_caps, vfab_tm.c).
 */
struct ibv_srq *vfab_create_srq_ex(struct ibv_context *ibctx, struct ibv_srq_init_attr_ex *a)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_TM;
	bool typed = a->comp_mask & IBV_SRQ_INIT_ATTR_TYPE;
	bool xrc = typed && a->srq_type == IBV_SRQT_XRC, tm = typed && a->srq_type == IBV_SRQT_TM;
	bool with_cq = (a->comp_mask & IBV_SRQ_INIT_ATTR_CQ) && a->cq && a->cq->context == ibctx;
	struct ibv_srq *srq;

	if (a->comp_mask & ~known) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (typed && a->srq_type != IBV_SRQT_BASIC && !xrc && !tm) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!(a->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !a->pd || a->pd->context != ibctx ||
	    (xrc && (!(a->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !a->xrcd || !with_cq ||
		     a->xrcd->context != ibctx)) ||
	    (tm && (!with_cq || !(a->comp_mask & IBV_SRQ_INIT_ATTR_TM) ||
		    !vfab_tm_caps_ok(&a->tm_cap)))) {
		errno = EINVAL;
		return NULL;
	}
	srq = srq_create(to_vpd(a->pd), &a->attr, xrc ? to_vxrcd(a->xrcd) : NULL,
			 xrc || tm ? to_vcq(a->cq) : NULL, tm ? a->tm_cap.max_num_tags : 0);
	if (srq) {
		srq->context = ibctx;
		srq->pd = a->pd;
		srq->srq_context = a->srq_context;
	}
	return srq;
}

int vfab_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct vfab_srq *srq = to_vsrq(ibsrq);

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP; /* no SRQ resize, as IBV_DEVICE_SRQ_RESIZE says */
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->max_wr)
			return EINVAL;
		atomic_store(&srq->s->limit, attr->srq_limit);
	}
	return 0;
}

int vfab_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct vfab_srq *srq = to_vsrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	attr->srq_limit = atomic_load(&srq->s->limit);
	return 0;
}

int vfab_destroy_srq(struct ibv_srq *ibsrq)
{
	struct vfab_srq *srq = to_vsrq(ibsrq);

	if (atomic_load(&srq->users))
		return EBUSY;
	vfab_ctl_unseal(srq->ctx, VFAB_OBJ_SRQ, (uint32_t)srq->slot);
	vfab_srq_free(srq->ctx->r, srq->slot);
	atomic_fetch_sub(&srq->pd->users, 1);
	if (srq->xrcd)
		atomic_fetch_sub(&srq->xrcd->users, 1);
	if (srq->cq)
		atomic_fetch_sub(&srq->cq->users, 1);
	pthread_mutex_destroy(&srq->post_lock);
	free(srq);
	return 0;
}

int vfab_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vfab_srq *srq = to_vsrq(ibsrq);
	int rc = 0;

	*bad = NULL;
	pthread_mutex_lock(&srq->post_lock);
	for (; wr; wr = wr->next) {
		rc = vfab_rq_post(srq->ctx->map, &srq->s->rq, &srq->own, wr, srq->max_wr);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	pthread_mutex_unlock(&srq->post_lock);
	return rc;
}

int vfab_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	*srq_num = to_vsrq(ibsrq)->vsrq.srq_num;
	return 0;
}

/* Fires once when the WQEs left drop below the armed limit, then disarms. */
void vfab_srq_check_limit(struct vfab_region *r, struct vfab_srq_slot *s,
			  const struct vfab_srq_slot *ks)
{
	uint32_t limit = atomic_load(&s->limit);
	uint64_t left;

	if (!limit)
		return;
	left = atomic_load(&s->rq.tail) - atomic_load(&s->rq.head);
	if (left < limit) {
		atomic_store(&s->limit, 0);
		vfab_async_event(r, ks->async_pid, ks->async_id, ks->user_srq,
				 IBV_EVENT_SRQ_LIMIT_REACHED);
	}
}
