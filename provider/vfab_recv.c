/* SPDX-License-Identifier: MIT */
/*
 * Receive rings, for a QP's RQ and an SRQ alike: the owner produces WQEs
 * (post_recv) and requesters of any process consume them under the owning
 * slot's lock when a message arrives.
 */
#include "provider/vfab.h"

#include <errno.h>

static struct vfab_rwqe *rq_at(struct vfab_region *r, struct vfab_rq *rq, uint64_t pos)
{
	return vfab_at(r, rq->ring_off + (pos & (rq->cap - 1)) * rq->wqe_size);
}

/* limit: WQEs that may be outstanding (the queue depth granted at create). */
int vfab_rq_post(struct vfab_region *r, struct vfab_rq *rq, const struct ibv_recv_wr *wr,
		 uint32_t limit)
{
	uint64_t tail = atomic_load_explicit(&rq->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&rq->head, memory_order_acquire);
	struct vfab_sge *sge;
	struct vfab_rwqe *w;
	int i;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge)
		return EINVAL;
	if (!rq->ring_off || tail - head >= limit)
		return ENOMEM;
	w = rq_at(r, rq, tail);
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	sge = (struct vfab_sge *)(w + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	atomic_store_explicit(&rq->tail, tail + 1, memory_order_release);
	return 0;
}

struct vfab_rwqe *vfab_rq_peek_at(struct vfab_region *r, struct vfab_rq *rq, uint32_t i)
{
	uint64_t head = atomic_load_explicit(&rq->head, memory_order_relaxed);

	if (!rq->ring_off || atomic_load_explicit(&rq->tail, memory_order_acquire) - head <= i)
		return NULL;
	return rq_at(r, rq, head + i);
}

struct vfab_rwqe *vfab_rq_peek(struct vfab_region *r, struct vfab_rq *rq)
{
	return vfab_rq_peek_at(r, rq, 0);
}

void vfab_rq_consume_n(struct vfab_rq *rq, uint32_t n)
{
	atomic_fetch_add_explicit(&rq->head, n, memory_order_release);
}

void vfab_rq_consume(struct vfab_rq *rq)
{
	vfab_rq_consume_n(rq, 1);
}

void vfab_rq_flush(struct vfab_region *r, struct vfab_rq *rq, uint32_t cq_slot, uint32_t qpn)
{
	struct vfab_rwqe *w;

	while ((w = vfab_rq_peek(r, rq))) {
		struct vfab_cqe e = {
		    .wr_id = w->wr_id,
		    .status = IBV_WC_WR_FLUSH_ERR,
		    .opcode = IBV_WC_RECV,
		    .vendor_err = vfab_vendor_err(IBV_WC_WR_FLUSH_ERR),
		    .qp_num = qpn,
		};

		vfab_rq_consume(rq);
		vfab_cq_push(r, cq_slot, &e, false);
	}
}

/*
 * The receive side of a QP slot enters ERR (slot lock held), whoever breaks
 * it: its own modify_qp, its own requester's failed WR, or a remote
 * requester whose message broke a responder rule. Posted receives flush;
 * announce raises ev at the owner first; on an SRQ the owner learns that
 * the QP takes no more receives from it.
 */
void vfab_qp_slot_error(struct vfab_region *r, struct vfab_qp_slot *d, bool announce,
			enum ibv_event_type ev)
{
	atomic_store(&d->qp_state, IBV_QPS_ERR);
	if (d->srq < 0)
		vfab_rq_flush(r, &d->rq, d->recv_cq, d->qpn);
	if (announce)
		vfab_async_event(r, d->async_pid, d->async_id, d->user_qp, ev);
	if (d->srq >= 0)
		vfab_async_event(r, d->async_pid, d->async_id, d->user_qp,
				 IBV_EVENT_QP_LAST_WQE_REACHED);
}

int vfab_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_region *r = qp->ctx->r;
	struct vfab_qp_slot *s = qp->s;
	int rc = 0;

	*bad = NULL;
	/* C10-97.2.1: no receives in RESET; an SRQ's QP has no RQ of its own. */
	if (qp->srq || atomic_load(&s->qp_state) == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	pthread_mutex_lock(&qp->rq.lock);
	for (; wr; wr = wr->next) {
		rc = vfab_rq_post(r, &s->rq, wr, qp->cap.max_recv_wr);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	pthread_mutex_unlock(&qp->rq.lock);
	/* Receives posted to a QP in error complete at once, flushed. */
	if (atomic_load(&s->qp_state) == IBV_QPS_ERR && !vfab_lock(&s->lock)) {
		vfab_rq_flush(r, &s->rq, s->recv_cq, qp->qpn);
		vfab_unlock(&s->lock);
	}
	return rc;
}
