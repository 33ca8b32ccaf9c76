/* SPDX-License-Identifier: MIT */
/*
 * Receive rings, for a QP's RQ and an SRQ alike: the owner produces WQEs
 * (post_recv) and requesters of any process consume them under the owning
 * slot's lock when a message arrives.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <string.h>

/* A ring's place and shape as read once from the region, checked before it is touched. */
static bool rq_geo(const struct vfab_rmap *map, const struct vfab_rq *rq, struct vfab_rq_geo *g)
{
	g->off = __atomic_load_n(&rq->ring_off, __ATOMIC_RELAXED);
	g->cap = __atomic_load_n(&rq->cap, __ATOMIC_RELAXED);
	g->wqe_size = __atomic_load_n(&rq->wqe_size, __ATOMIC_RELAXED);
	g->max_sge = __atomic_load_n(&rq->max_sge, __ATOMIC_RELAXED);
	return g->off && g->cap && !(g->cap & (g->cap - 1)) && g->max_sge <= VFAB_MAX_SRQ_SGE &&
	       g->wqe_size >= sizeof(struct vfab_rwqe) + g->max_sge * sizeof(struct vfab_sge) &&
	       vfab_pool_holds(map->map_bytes, vfab_shard_of_ptr(map->r, rq), g->off,
			       (uint64_t)g->cap * g->wqe_size);
}

static struct vfab_rwqe *rq_at(const struct vfab_rmap *map, const struct vfab_rq_geo *g,
			       uint64_t pos)
{
	return vfab_at(map->r, g->off + (pos & (g->cap - 1)) * g->wqe_size);
}

/*
 * limit: WQEs that may be outstanding (the queue depth granted at create).
 * The ring's shape is the one the owner saw at its first post: only it
 * posts, and a ring never moves while its QP or SRQ lives.
 */
int vfab_rq_post(const struct vfab_rmap *map, struct vfab_rq *rq, struct vfab_rq_own *own,
		 const struct ibv_recv_wr *wr, uint32_t limit)
{
	uint64_t tail = atomic_load_explicit(&rq->tail, memory_order_relaxed);
	struct vfab_sge *sge;
	struct vfab_rwqe *w;
	int i;

	if (!own->known)
		own->known = rq_geo(map, rq, &own->g);
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > (own->known ? own->g.max_sge : rq->max_sge))
		return EINVAL;
	if (!own->known)
		return ENOMEM;
	if (tail - own->head_seen >= limit) {
		uint64_t polled = atomic_load_explicit(&own->polled, memory_order_acquire);

		if (polled > own->head_seen && polled <= tail)
			own->head_seen = polled;
	}
	if (tail - own->head_seen >= limit) {
		own->head_seen = atomic_load_explicit(&rq->head, memory_order_acquire);
		if (tail - own->head_seen >= limit)
			return ENOMEM;
	}
	w = rq_at(map, &own->g, tail);
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	sge = (struct vfab_sge *)(w + 1);
	for (i = 0; i < wr->num_sge; i++) {
		sge[i].addr = wr->sg_list[i].addr;
		sge[i].length = wr->sg_list[i].length;
		sge[i].lkey = wr->sg_list[i].lkey;
	}
	atomic_store_explicit(&w->seq, (uint32_t)(tail + 1), memory_order_release);
	atomic_store_explicit(&rq->tail, tail + 1, memory_order_release);
	return 0;
}

void vfab_rq_reset(const struct vfab_rmap *map, struct vfab_rq *rq, struct vfab_rq_own *own)
{
	struct vfab_rq_geo g;

	if (rq_geo(map, rq, &g))
		for (uint32_t i = 0; i < g.cap; i++)
			atomic_store_explicit(&rq_at(map, &g, i)->seq, 0, memory_order_relaxed);
	atomic_store(&rq->head, 0);
	atomic_store(&rq->tail, 0);
	own->head_seen = 0;
	atomic_store(&own->polled, 0);
}

int vfab_rq_copy(const struct vfab_rmap *map, struct vfab_rq *rq, uint32_t i, uint64_t *wr_id,
		 struct vfab_sge *sge, uint32_t max, uint32_t *num_sge)
{
	uint64_t pos = atomic_load_explicit(&rq->head, memory_order_relaxed) + i;
	const struct vfab_rwqe *w;
	struct vfab_rq_geo g;
	uint32_t n;

	if (!rq_geo(map, rq, &g))
		return -ENOENT;
	w = rq_at(map, &g, pos);
	if (atomic_load_explicit(&w->seq, memory_order_acquire) != (uint32_t)(pos + 1))
		return -ENOENT;
	*wr_id = w->wr_id;
	n = __atomic_load_n(&w->num_sge, __ATOMIC_RELAXED);
	/* No more than the ring's WQEs hold, whatever the WQE says. */
	n = n < g.max_sge ? n : g.max_sge;
	n = n < max ? n : max;
	if (sge)
		memcpy(sge, w + 1, n * sizeof(*sge));
	*num_sge = n;
	return 0;
}

void vfab_rq_consume_n(struct vfab_rq *rq, uint32_t n)
{
	atomic_fetch_add_explicit(&rq->head, n, memory_order_release);
}

void vfab_rq_consume(struct vfab_rq *rq)
{
	vfab_rq_consume_n(rq, 1);
}

void vfab_rq_flush(const struct vfab_rmap *map, struct vfab_rq *rq, const struct vfab_qp_slot *kq)
{
	uint64_t wr_id;
	uint32_t n;

	while (!vfab_rq_copy(map, rq, 0, &wr_id, NULL, 0, &n)) {
		struct vfab_cqe e = {
		    .wr_id = wr_id,
		    .status = IBV_WC_WR_FLUSH_ERR,
		    .opcode = IBV_WC_RECV,
		    .vendor_err = vfab_vendor_err(IBV_WC_WR_FLUSH_ERR),
		    .qp_num = kq->qpn,
		};

		vfab_rq_consume(rq);
		vfab_cq_push(map, kq->recv_cq, &kq->owner, &e, false);
	}
}

/*
 * The receive side of a QP slot enters ERR (slot lock held), whoever breaks
 * it: its own modify_qp, its own requester's failed WR, or a remote
 * requester whose message broke a responder rule. Posted receives flush;
 * announce raises ev at the owner first; on an SRQ the owner learns that
 * the QP takes no more receives from it.
 */
void vfab_qp_slot_error(const struct vfab_rmap *map, struct vfab_qp_slot *d,
			const struct vfab_qp_slot *kq, bool announce, enum ibv_event_type ev)
{
	atomic_store(&d->qp_state, IBV_QPS_ERR);
	if (kq->srq < 0 && kq->recv_cq != VFAB_SLOT_NONE)
		vfab_rq_flush(map, &d->rq, kq);
	if (announce)
		vfab_async_event(map->r, kq->async_pid, kq->async_id, kq->user_qp, ev);
	if (kq->srq >= 0)
		vfab_async_event(map->r, kq->async_pid, kq->async_id, kq->user_qp,
				 IBV_EVENT_QP_LAST_WQE_REACHED);
}

int vfab_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_qp_slot *s = qp->s;
	int rc = 0;

	*bad = NULL;
	/*
	 * C10-97.2.1: no receives in RESET; an SRQ's QP has no RQ of its own,
	 * nor has either XRC QP.
	 */
	if (qp->srq || !qp->rcq || qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND ||
	    atomic_load(&s->qp_state) == IBV_QPS_RESET) {
		*bad = wr;
		return EINVAL;
	}
	pthread_spin_lock(&qp->rq.lock);
	for (; wr; wr = wr->next) {
		rc = vfab_rq_post(qp->ctx->map, &s->rq, &qp->rq.own, wr, qp->cap.max_recv_wr);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	pthread_spin_unlock(&qp->rq.lock);
	/* Receives posted to a QP in error complete at once, flushed. */
	if (atomic_load(&s->qp_state) == IBV_QPS_ERR && !vfab_lock(&s->lock)) {
		vfab_rq_flush(qp->ctx->map, &s->rq, qp->k);
		vfab_unlock(&s->lock);
	}
	return rc;
}
