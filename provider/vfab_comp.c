/* SPDX-License-Identifier: MIT */
/*
 * The completer (see vfab_comp.h): send completions in posting order, and
 * the requester's way into ERR. The receive side of a QP breaks through
 * vfab_qp_slot_error; the send queue's own order lives in vfab_sq.c.
 */
#include "provider/vfab_comp.h"

void vfab_comp_flush(struct vfab_qp *qp)
{
	struct vfab_swqe *w;

	while ((w = vfab_sq_pop(qp))) {
		vfab_comp_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		vfab_sq_recycle(qp, w);
	}
}

void vfab_comp_error(struct vfab_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		return;
	if (!vfab_lock(&qp->s->lock)) {
		vfab_qp_slot_error(qp->ctx->map, qp->s, qp->k, false, 0);
		vfab_unlock(&qp->s->lock);
	}
	qp->state = IBV_QPS_ERR;
	vfab_comp_flush(qp);
}

void vfab_comp_sync_state(struct vfab_qp *qp)
{
	if (qp->state != IBV_QPS_ERR && atomic_load(&qp->s->qp_state) == IBV_QPS_ERR) {
		qp->state = IBV_QPS_ERR;
		vfab_comp_flush(qp);
	}
}

uint64_t vfab_comp_progress(struct vfab_qp *qp)
{
	uint64_t now = vfab_mono_ns();
	struct vfab_swqe *w;

	vfab_comp_sync_state(qp);
	if (qp->state == IBV_QPS_ERR) {
		vfab_comp_flush(qp);
		return 0;
	}
	vfab_sq_advance(qp, now);
	while ((w = qp->sq.head)) {
		if (w->stage == VFAB_ST_ACKED && w->due_ns <= now) {
			vfab_sq_pop(qp);
			vfab_comp_send(qp, w, IBV_WC_SUCCESS, w->byte_len);
			vfab_sq_recycle(qp, w);
		} else if (w->stage == VFAB_ST_FAILED) {
			/* Every WR before it has completed: now the QP breaks. */
			vfab_sq_pop(qp);
			vfab_comp_send(qp, w, (enum ibv_wc_status)w->status, 0);
			vfab_sq_recycle(qp, w);
			vfab_comp_error(qp);
			return 0;
		} else {
			break;
		}
	}
	return vfab_sq_next_due(qp);
}
