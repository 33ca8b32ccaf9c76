/* SPDX-License-Identifier: MIT */
/*
 * modify_qp: the state machine of vfab_qp_state.c, the attribute checks the
 * kernel and firmware make, and the effects of entering RESET or ERR.
 * Responder attributes go to the region slot under its lock, so a requester
 * of another process sees a consistent QP.
 */
#include "provider/vfab_comp.h"
#include "provider/vfab_raw.h"
#include "provider/vfab_qp_state.h"
#include "provider/vfab_wire.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/*
 * ON_DEMAND means nothing to a QP, but mlx5 takes a QP's access flags that
 * carry it (applications, pyverbs' ODP tests among them, pass their MR's
 * flags) and uses the remote-access bits.
 */
#define QP_ACCESS_FLAGS                                                                            \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND)

static uint32_t mtu_bytes(uint32_t mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128u << mtu : 1024;
}

/*
 * What the kernel's uverbs drops from an XRC QP's mask before any check
 * (modify_qp_mask): the attributes of the half the QP does not have, which
 * programs written for RC pass anyway (perftest's XRC tests do).
 */
static int xrc_mask(enum ibv_qp_type type, int mask)
{
	if (type == IBV_QPT_XRC_SEND)
		return mask & ~(IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (type == IBV_QPT_XRC_RECV)
		return mask & ~(IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY);
	return mask;
}

static int check_attrs(struct vfab_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct vfab_context *ctx = qp->ctx;
	uint32_t port = (mask & IBV_QP_PORT) ? a->port_num : qp->s->port;

	if ((mask & IBV_QP_PORT) && (a->port_num < 1 || a->port_num > ctx->hca->nports))
		return EINVAL;
	/* mlx5 bounds it by the firmware's table (max_pkeys), not the port's RoCE view of 1. */
	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index >= VFAB_MAX_PKEYS)
		return EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~QP_ACCESS_FLAGS))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return EINVAL;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) && a->max_rd_atomic > VFAB_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > VFAB_MAX_RD_ATOM)
		return EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > VFAB_PSN_MASK)
		return EINVAL;
	if (mask & IBV_QP_AV) {
		/*
		 * RoCE addresses by GID only. The AV's own port_num is not
		 * used: the QP's port is (NCCL passes the peer's port there).
		 * An empty source GID index is the kernel's ENODATA
		 * (rdma_get_gid_attr, through rdma_fill_sgid_attr).
		 */
		if (!a->ah_attr.is_global || !port)
			return EINVAL;
		if (vfab_sgid_type(ctx->r, ctx->hca_idx, port, a->ah_attr.grh.sgid_index) ==
		    VFAB_GID_EMPTY)
			return ENODATA;
	}
	return 0;
}

/* Stores the attributes; the responder's share under the slot lock. */
static void apply_attrs(struct vfab_qp *qp, const struct ibv_qp_attr *a, int mask)
{
	struct vfab_qp_slot *s = qp->s;
	struct ibv_qp_attr *c = &qp->attr;

	if (mask & IBV_QP_PORT) {
		c->port_num = a->port_num;
		s->port = a->port_num;
		if (qp->vqp.qp.qp_type == IBV_QPT_UD)
			qp->req.mtu_bytes =
			    mtu_bytes(qp->ctx->hca->ports[a->port_num - 1].active_mtu);
	}
	if (mask & IBV_QP_PKEY_INDEX) {
		c->pkey_index = a->pkey_index;
		s->pkey_index = a->pkey_index;
	}
	if (mask & IBV_QP_ACCESS_FLAGS) {
		c->qp_access_flags = a->qp_access_flags;
		s->access = a->qp_access_flags;
	}
	if (mask & IBV_QP_QKEY) {
		c->qkey = a->qkey;
		s->qkey = a->qkey;
	}
	if (mask & IBV_QP_PATH_MTU) {
		c->path_mtu = a->path_mtu;
		s->path_mtu = a->path_mtu;
		qp->req.mtu_bytes = mtu_bytes(a->path_mtu);
	}
	if (mask & IBV_QP_AV) {
		c->ah_attr = a->ah_attr;
		memcpy(s->dgid, a->ah_attr.grh.dgid.raw, sizeof(s->dgid));
		s->sgid_index = a->ah_attr.grh.sgid_index;
		qp->req.dest.valid = false;
	}
	if (mask & IBV_QP_DEST_QPN) {
		c->dest_qp_num = a->dest_qp_num;
		s->dest_qpn = a->dest_qp_num;
		qp->req.dest.valid = false;
	}
	if (mask & IBV_QP_RQ_PSN) {
		c->rq_psn = a->rq_psn & VFAB_PSN_MASK;
		atomic_store(&s->epsn, c->rq_psn);
	}
	if (mask & IBV_QP_SQ_PSN) {
		c->sq_psn = a->sq_psn & VFAB_PSN_MASK;
		qp->req.psn = c->sq_psn;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER) {
		c->min_rnr_timer = a->min_rnr_timer;
		s->min_rnr_timer = a->min_rnr_timer;
	}
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		c->max_dest_rd_atomic = a->max_dest_rd_atomic;
		s->max_dest_rd_atomic = a->max_dest_rd_atomic;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		c->max_rd_atomic = a->max_rd_atomic;
	if (mask & IBV_QP_TIMEOUT)
		c->timeout = a->timeout;
	if (mask & IBV_QP_RETRY_CNT)
		c->retry_cnt = a->retry_cnt;
	if (mask & IBV_QP_RNR_RETRY)
		c->rnr_retry = a->rnr_retry;
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		c->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_ALT_PATH) {
		c->alt_ah_attr = a->alt_ah_attr;
		c->alt_pkey_index = a->alt_pkey_index;
		c->alt_port_num = a->alt_port_num;
		c->alt_timeout = a->alt_timeout;
	}
}

/* RESET: both queues empty, counters and PSNs back to zero, no completions. */
static void enter_reset(struct vfab_qp *qp)
{
	struct vfab_qp_slot *s = qp->s;

	vfab_sq_drop(qp);
	qp->sq.posted = 0;
	atomic_store(&qp->sq.retired, 0);
	qp->req.psn = 0;
	qp->req.dest.valid = false;
	memset(&qp->attr, 0, sizeof(qp->attr));
	s->port = 0;
	s->access = 0;
	s->qkey = 0;
	s->dest_qpn = 0;
	atomic_store(&s->epsn, 0);
	if (qp->k->srq < 0) {
		pthread_spin_lock(&qp->rq.lock);
		vfab_rq_reset(qp->ctx->map, &s->rq, &qp->rq.own);
		pthread_spin_unlock(&qp->rq.lock);
	}
}

int vfab_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_qp_slot *s = qp->s;
	enum ibv_qp_state cur, next;
	bool reset = false;
	int rc;

	pthread_mutex_lock(&qp->sq.lock);
	vfab_comp_sync_state(qp);
	cur = qp->state;
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != cur) {
		rc = EINVAL;
		goto out;
	}
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	mask = xrc_mask(ibqp->qp_type, mask);
	rc = -vfab_qp_modify_ok(ibqp->qp_type, cur, next, (uint32_t)mask);
	if (!rc)
		rc = check_attrs(qp, attr, mask);
	/* A raw packet QP's frames go to its port's netdev (vfab_raw.c). */
	if (!rc && qp->raw && (mask & IBV_QP_PORT))
		rc = vfab_raw_bind(qp, attr->port_num);
	if (rc)
		goto out;

	if (vfab_lock(&s->lock)) {
		rc = EIO;
		goto out;
	}
	if (next == IBV_QPS_RESET) {
		enter_reset(qp);
		reset = true;
	} else {
		apply_attrs(qp, attr, mask);
	}
	if (next == IBV_QPS_ERR && cur != IBV_QPS_ERR)
		vfab_qp_slot_error(qp->ctx->map, s, qp->k, false, 0);
	else
		atomic_store(&s->qp_state, next);
	vfab_unlock(&s->lock);

	/* A peer on another machine: the RoCE wire (vfab_wire.h). */
	if (next == IBV_QPS_RTR && cur == IBV_QPS_INIT &&
	    (ibqp->qp_type == IBV_QPT_RC || ibqp->qp_type == IBV_QPT_UD)) {
		if (!vfab_wire_rtr(qp))
			vfab_engine_wire_start();
	} else if (next == IBV_QPS_RTS && cur == IBV_QPS_RTR)
		vfab_wire_rts(qp);
	else if (next == IBV_QPS_ERR || next == IBV_QPS_RESET)
		vfab_wire_close(qp);

	if (next == IBV_QPS_ERR)
		vfab_comp_flush(qp);
	if (next == IBV_QPS_SQD && cur == IBV_QPS_RTS && (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY) &&
	    attr->en_sqd_async_notify && !qp->sq.head)
		vfab_async_event(qp->ctx->r, qp->k->async_pid, qp->k->async_id, qp->k->user_qp,
				 IBV_EVENT_SQ_DRAINED);
	qp->state = next;
out:
	pthread_mutex_unlock(&qp->sq.lock);
	if (reset) {
		vfab_engine_cancel(qp);
		if (qp->scq)
			vfab_cq_clean(qp->scq, qp->qpn);
		if (qp->rcq != qp->scq)
			vfab_cq_clean(qp->rcq, qp->qpn);
	}
	return rc;
}
