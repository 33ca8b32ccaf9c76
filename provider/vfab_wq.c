/* SPDX-License-Identifier: MIT */
/*
 * Work queues (ibv_create_wq, IBV_WQT_RQ) and receive work queue
 * indirection tables: the receive side over which an RSS QP (a raw packet
 * QP made with IBV_QP_INIT_ATTR_IND_TABLE and _RX_HASH, vfab_raw.c) spreads
 * frames. A WQ's ring is that of a basic SRQ no QP attaches to
 * (vfab_srq.c), so the responder's rules take its receives as any SRQ's;
 * its completions go to its own CQ, with the WQ's number as wc.qp_num.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ConnectX-6: indirection tables of up to 2^16 entries (log_max_rqt_size). */
#define VFAB_MAX_IND_TBL_LOG 16

/* Table numbers, this process's (a table is used only by its own QPs). */
static atomic_int table_nums = 1;

static struct vfab_wq *to_vwq(struct ibv_wq *wq)
{
	return (struct vfab_wq *)wq;
}

static int wq_post_recv(struct ibv_wq *ibwq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return vfab_post_srq_recv(&to_vwq(ibwq)->rq->vsrq.srq, wr, bad);
}

struct ibv_wq *vfab_create_wq(struct ibv_context *ibctx, struct ibv_wq_init_attr *a)
{
	struct ibv_srq_init_attr init = {.attr = {.max_wr = a->max_wr, .max_sge = a->max_sge}};
	struct ibv_srq *srq;
	struct vfab_wq *wq;

	/* No VLAN stripping, FCS scatter, delay drop or end padding (raw_packet_caps 0). */
	if (a->wq_type != IBV_WQT_RQ ||
	    ((a->comp_mask & IBV_WQ_INIT_ATTR_FLAGS) && a->create_flags) ||
	    (a->comp_mask & ~(uint32_t)IBV_WQ_INIT_ATTR_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!a->pd || !a->cq || a->pd->context != ibctx || a->cq->context != ibctx) {
		errno = EINVAL;
		return NULL;
	}
	wq = calloc(1, sizeof(*wq));
	if (!wq) {
		errno = ENOMEM;
		return NULL;
	}
	srq = vfab_create_srq(a->pd, &init);
	if (!srq) {
		free(wq);
		return NULL;
	}
	wq->rq = to_vsrq(srq);
	wq->cq = to_vcq(a->cq);
	atomic_store(&wq->state, IBV_WQS_RESET);
	atomic_fetch_add(&wq->cq->users, 1);
	wq->ib.context = ibctx;
	wq->ib.wq_context = a->wq_context;
	wq->ib.pd = a->pd;
	wq->ib.cq = a->cq;
	wq->ib.wq_num = wq->rq->vsrq.srq_num;
	wq->ib.handle = (uint32_t)wq->rq->slot;
	wq->ib.state = IBV_WQS_RESET;
	wq->ib.wq_type = IBV_WQT_RQ;
	wq->ib.post_recv = wq_post_recv;
	a->max_wr = init.attr.max_wr;
	a->max_sge = init.attr.max_sge;
	return &wq->ib;
}

/* What the WQ's flushes are made as: its owner, its CQ, its number. */
static void wq_as_qp(const struct vfab_wq *wq, struct vfab_qp_slot *kq)
{
	memset(kq, 0, sizeof(*kq));
	kq->owner = wq->rq->ctx->owner;
	kq->recv_cq = (uint32_t)wq->cq->slot;
	kq->qpn = wq->ib.wq_num;
	kq->srq = -1;
}

/*
 * RESET drops what is posted without completions; ERR flushes it into the
 * CQ; RDY takes frames. As mlx5: RESET <-> RDY, any state to ERR or RESET.
 */
int vfab_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct vfab_wq *wq = to_vwq(ibwq);
	struct vfab_srq_slot *s = wq->rq->s;
	uint32_t cur = atomic_load(&wq->state), next;
	struct vfab_qp_slot kq;

	if (attr->attr_mask &
	    ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE | IBV_WQ_ATTR_FLAGS))
		return EINVAL;
	if ((attr->attr_mask & IBV_WQ_ATTR_FLAGS) && attr->flags_mask)
		return EOPNOTSUPP;
	if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && attr->curr_wq_state != cur)
		return EINVAL;
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	next = attr->wq_state;
	if (next > IBV_WQS_ERR || (next == IBV_WQS_RDY && cur == IBV_WQS_ERR))
		return EINVAL;
	if (vfab_lock(&s->lock))
		return EIO;
	if (next == IBV_WQS_ERR && cur != IBV_WQS_ERR) {
		wq_as_qp(wq, &kq);
		vfab_rq_flush(wq->rq->ctx->map, &s->rq, &kq);
	} else if (next == IBV_WQS_RESET) {
		vfab_rq_consume_n(&s->rq,
				  (uint32_t)(atomic_load(&s->rq.tail) - atomic_load(&s->rq.head)));
	}
	atomic_store(&wq->state, next);
	ibwq->state = (enum ibv_wq_state)next;
	vfab_unlock(&s->lock);
	return 0;
}

int vfab_destroy_wq(struct ibv_wq *ibwq)
{
	struct vfab_wq *wq = to_vwq(ibwq);
	int rc;

	/* An indirection table holds it, as the kernel counts it. */
	if (atomic_load(&wq->users))
		return EBUSY;
	rc = vfab_destroy_srq(&wq->rq->vsrq.srq);
	if (rc)
		return rc;
	vfab_cq_clean(wq->cq, wq->ib.wq_num);
	atomic_fetch_sub(&wq->cq->users, 1);
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *vfab_create_rwq_ind_table(struct ibv_context *ibctx,
						    struct ibv_rwq_ind_table_init_attr *a)
{
	struct vfab_rwq_ind *t;
	uint32_t size;

	if (a->comp_mask) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->log_ind_tbl_size > VFAB_MAX_IND_TBL_LOG || !a->ind_tbl) {
		errno = EINVAL;
		return NULL;
	}
	size = 1u << a->log_ind_tbl_size;
	for (uint32_t i = 0; i < size; i++)
		if (!a->ind_tbl[i] || a->ind_tbl[i]->context != ibctx) {
			errno = EINVAL;
			return NULL;
		}
	t = calloc(1, sizeof(*t));
	if (t)
		t->wqs = calloc(size, sizeof(*t->wqs));
	if (!t || !t->wqs) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	t->size = size;
	for (uint32_t i = 0; i < size; i++) {
		t->wqs[i] = to_vwq(a->ind_tbl[i]);
		atomic_fetch_add(&t->wqs[i]->users, 1);
	}
	t->ib.context = ibctx;
	t->ib.ind_tbl_handle = t->ib.ind_tbl_num = atomic_fetch_add(&table_nums, 1);
	return &t->ib;
}

int vfab_destroy_rwq_ind_table(struct ibv_rwq_ind_table *ibt)
{
	struct vfab_rwq_ind *t = (struct vfab_rwq_ind *)ibt;

	if (atomic_load(&t->users))
		return EBUSY;
	for (uint32_t i = 0; i < t->size; i++)
		atomic_fetch_sub(&t->wqs[i]->users, 1);
	free(t->wqs);
	free(t);
	return 0;
}
