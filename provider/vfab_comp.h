/* SPDX-License-Identifier: MIT */
/*
 * The completer, after Linux rxe's rxe_comp.c: it alone writes send CQEs,
 * retires the send queue in order once each WR's ACK is due, and takes the
 * requester side of a QP to ERR with the flush of its send queue. Everything
 * here runs under the QP's sq.lock.
 */
#ifndef VFAB_COMP_H
#define VFAB_COMP_H

#include "provider/vfab.h"
#include "provider/vfab_resp.h"

#include <string.h>

static inline enum ibv_wc_opcode vfab_comp_opcode(uint32_t wr_opcode)
{
	switch (wr_opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	default:
		return IBV_WC_SEND;
	}
}

/*
 * The send CQE of one WR (none for an unsignaled success). It carries the
 * WR's send queue index in src_qp: poll_cq uses it to free the send queue
 * slots up to it, like hardware's WQE counter. Inline: post_send completes
 * most WRs at once through it.
 */
static inline void vfab_comp_send(struct vfab_qp *qp, const struct vfab_swqe *w,
				  enum ibv_wc_status status, uint32_t byte_len)
{
	struct vfab_cqe e;

	if (status != IBV_WC_SUCCESS || qp->sq_sig_all || (w->flags & IBV_SEND_SIGNALED)) {
		memset(&e, 0, sizeof(e));
		e.wr_id = w->wr_id;
		e.status = status;
		e.opcode = vfab_comp_opcode(w->opcode);
		e.vendor_err = vfab_vendor_err(status);
		e.byte_len = byte_len;
		e.qp_num = qp->qpn;
		e.src_qp = w->sq_index;
		vfab_cq_push(qp->ctx->map, qp->k->send_cq, NULL, &e, false);
	}
	/* The responder's FIN comes after the SEND's own completion, as on the wire. */
	if (__builtin_expect(w->tm_fin, 0))
		vfab_resp_tm_fin(qp, w->tm_fin_tag);
}

/* Completes every queued WR with WR_FLUSH_ERR. */
void vfab_comp_flush(struct vfab_qp *qp);
/* Moves a QP to ERR from the requester side and flushes both queues. */
void vfab_comp_error(struct vfab_qp *qp);
/* Picks up an ERR state set by a remote requester: the send queue flushes. */
void vfab_comp_sync_state(struct vfab_qp *qp);
/*
 * Runs what is due: the send queue advances, then acknowledged WRs complete
 * in order, and a failed one completes and breaks the QP. Returns when the
 * next event is due, 0: none.
 */
uint64_t vfab_comp_progress(struct vfab_qp *qp);

#endif /* VFAB_COMP_H */
