/* SPDX-License-Identifier: MIT */
/*
 * Queue pairs: creation with the capabilities a ConnectX would grant,
 * queries, destruction. The QP's shared half (state, responder attributes,
 * receive ring) is a region slot that requesters of other processes reach by
 * QPN; the send side lives in this process.
 */
#include "provider/vfab_comp.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_raw.h"
#include "provider/vfab_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint32_t round_pow2(uint32_t v)
{
	uint32_t c = 1;

	if (!v)
		return 0;
	while (c < v)
		c <<= 1;
	return c;
}

/*
 * The inline capacity a ConnectX reports through libmlx5 (mlx5_calc_sq_size):
 * the send WQE that the SGE count or the inline data asked for makes, in
 * 64-byte basic blocks, less the overhead of the largest operation the QP
 * may post (RC without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS counts memory-window
 * binds: 192 bytes; RDMA 32, atomics 48; UD adds its datagram segment) and
 * the inline header. Programs post inline sends up to the reported size
 * without asking for any (rdma_xclient -c r: 16 bytes).
 */
#define WQE_BB_BYTES 64
#define WQE_SEG_BYTES 16
#define WQE_INLINE_HDR_BYTES 4
#define WQE_CTRL_BYTES 16
#define WQE_RDMA_BYTES (WQE_CTRL_BYTES + 16)
#define WQE_ATOMIC_BYTES (WQE_CTRL_BYTES + 32)
#define WQE_UMR_BYTES (WQE_CTRL_BYTES + 48 + 64 + 64)
#define WQE_DATAGRAM_BYTES 48
#define WQE_ETH_BYTES 32

static uint32_t wqe_overhead(enum ibv_qp_type type, bool ops_given, uint64_t ops)
{
	uint32_t size = WQE_CTRL_BYTES;

	if (type == IBV_QPT_UD)
		return size + WQE_DATAGRAM_BYTES;
	if (type == IBV_QPT_RAW_PACKET)
		return size + WQE_ETH_BYTES;
	if (!ops_given)
		return WQE_UMR_BYTES; /* libmlx5's default RC ops include BIND_MW */
	if (ops & (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		   IBV_QP_EX_WITH_RDMA_READ))
		size = WQE_RDMA_BYTES;
	if (ops & (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD))
		size = WQE_ATOMIC_BYTES;
	if (ops & (IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_LOCAL_INV))
		size = WQE_UMR_BYTES;
	return size;
}

static uint32_t inline_cap(const struct ibv_qp_init_attr_ex *a)
{
	bool given = a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	uint32_t overhead = wqe_overhead(a->qp_type, given, a->send_ops_flags);
	uint32_t size = overhead + a->cap.max_send_sge * WQE_SEG_BYTES, cap;

	if (a->cap.max_inline_data) {
		uint32_t inl =
		    overhead + (WQE_INLINE_HDR_BYTES + a->cap.max_inline_data + WQE_SEG_BYTES - 1) /
				   WQE_SEG_BYTES * WQE_SEG_BYTES;

		if (inl > size)
			size = inl;
	}
	size = (size + WQE_BB_BYTES - 1) / WQE_BB_BYTES * WQE_BB_BYTES;
	cap = size - overhead - WQE_INLINE_HDR_BYTES;
	return cap < VFAB_MAX_INLINE ? cap : VFAB_MAX_INLINE;
}

static int check_caps(const struct ibv_qp_cap *cap, bool srq)
{
	if (cap->max_send_wr > VFAB_MAX_QP_WR || cap->max_send_sge > VFAB_MAX_SGE ||
	    cap->max_inline_data > VFAB_MAX_INLINE)
		return EINVAL;
	if (!srq && (cap->max_recv_wr > VFAB_MAX_QP_WR || cap->max_recv_sge > VFAB_MAX_SGE))
		return EINVAL;
	return 0;
}

static uint64_t supported_send_ops(enum ibv_qp_type type)
{
	uint64_t ud = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM;
	/* Windows: a connected QP binds and invalidates (as libmlx5's RC and UC). */
	uint64_t uc = ud | IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
		      IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_BIND_MW |
		      IBV_QP_EX_WITH_LOCAL_INV;

	if (type == IBV_QPT_UD)
		return ud;
	if (type == IBV_QPT_RAW_PACKET)
		return IBV_QP_EX_WITH_SEND;
	if (type == IBV_QPT_UC)
		return uc;
	return uc | IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
	       IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
}

/*
 * An XRC_RECV QP: a domain and nothing else (no PD, CQ or queue: it delivers
 * to the domain's SRQs, completing into theirs). A PD, CQs or an SRQ passed
 * along are ignored, as uverbs ignores them (librdmacm passes its own).
 */
static int check_xrc_recv(struct vfab_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	if (a->comp_mask &
	    ~(IBV_QP_INIT_ATTR_XRCD | IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS))
		return EOPNOTSUPP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd ||
	    a->xrcd->context != &ctx->vctx.context ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags))
		return EINVAL;
	return 0;
}

/*
 * An RSS QP: a raw packet QP with an indirection table and a hash, and no
 * queue or CQ of its own (its WQs receive; it sends nothing), as mlx5's.
 */
static int check_rss(struct vfab_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const uint32_t rss = IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH;

	if (a->comp_mask & ~(rss | IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS))
		return EOPNOTSUPP;
	if ((a->comp_mask & rss) != rss || a->qp_type != IBV_QPT_RAW_PACKET ||
	    !(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || !a->rwq_ind_tbl ||
	    a->rwq_ind_tbl->context != &ctx->vctx.context || a->srq || a->cap.max_send_wr ||
	    a->cap.max_recv_wr || a->cap.max_inline_data)
		return EINVAL;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags)
		return EOPNOTSUPP;
	return 0;
}

static int check_init_attr(struct vfab_context *ctx, const struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known =
	    IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	bool xrc_send = a->qp_type == IBV_QPT_XRC_SEND;

	if (a->qp_type == IBV_QPT_XRC_RECV)
		return check_xrc_recv(ctx, a);
	if (a->comp_mask & (IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH))
		return check_rss(ctx, a);
	if (a->comp_mask & ~known)
		return EOPNOTSUPP;
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd)
		return EINVAL;
	/* XRC_SEND: a send queue only; its receive CQ, if given, is never used. */
	if (xrc_send) {
		if (a->srq || a->cap.max_recv_wr || a->cap.max_recv_sge || !a->send_cq ||
		    a->send_cq->context != &ctx->vctx.context)
			return EINVAL;
		if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
		    (a->send_ops_flags & ~supported_send_ops(a->qp_type)))
			return EOPNOTSUPP;
		return check_caps(&a->cap, true);
	}
	/*
	 * UD and raw packet QPs: no multicast loopback to the sending QP itself
	 * (vfab_mcast.c; a raw packet QP never receives its own frames).
	 */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags &&
	    ((a->qp_type != IBV_QPT_UD && a->qp_type != IBV_QPT_RAW_PACKET) ||
	     a->create_flags != IBV_QP_CREATE_BLOCK_SELF_MCAST_LB))
		return EOPNOTSUPP;
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC && a->qp_type != IBV_QPT_UD &&
	    a->qp_type != IBV_QPT_RAW_PACKET)
		return EOPNOTSUPP;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~supported_send_ops(a->qp_type)))
		return EOPNOTSUPP;
	if (!a->send_cq || !a->recv_cq || a->send_cq->context != &ctx->vctx.context ||
	    a->recv_cq->context != &ctx->vctx.context)
		return EINVAL;
	if (a->srq && a->srq->context != &ctx->vctx.context)
		return EINVAL;
	return check_caps(&a->cap, a->srq != NULL);
}

static void fill_slot(struct vfab_qp *qp, const struct ibv_qp_init_attr_ex *a)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_qp_slot *s = qp->s;

	s->hca = ctx->hca_idx;
	s->port = 0;
	s->pd = qp->pd ? (uint32_t)qp->pd->slot : VFAB_SLOT_NONE;
	s->qp_type = a->qp_type;
	s->send_cq = qp->scq ? (uint32_t)qp->scq->slot : VFAB_SLOT_NONE;
	s->recv_cq = qp->rcq ? (uint32_t)qp->rcq->slot : VFAB_SLOT_NONE;
	s->srq = qp->srq ? qp->srq->slot : -1;
	s->xrcd = qp->xrcd ? qp->xrcd->id : 0;
	s->access = 0;
	s->qkey = 0;
	s->path_mtu = 0;
	s->dest_qpn = 0;
	memset(s->dgid, 0, sizeof(s->dgid));
	s->sgid_index = 0;
	s->min_rnr_timer = 0;
	s->max_dest_rd_atomic = 0;
	s->pkey_index = 0;
	s->user_qp = (uint64_t)(uintptr_t)&qp->vqp.qp;
	s->async_pid = ctx->owner.pid;
	s->async_id = ctx->async_id;
}

/* What a QP holds busy (its PD, CQs, SRQ, domain): by one more or one less. */
static void qp_hold(struct vfab_qp *qp, int by)
{
	if (qp->pd)
		atomic_fetch_add(&qp->pd->users, by);
	if (qp->scq)
		atomic_fetch_add(&qp->scq->users, by);
	if (qp->rcq)
		atomic_fetch_add(&qp->rcq->users, by);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->users, by);
	if (qp->xrcd)
		atomic_fetch_add(&qp->xrcd->users, by);
}

static void qp_free_scratch(struct vfab_qp *qp)
{
	free(qp->req.post_buf);
	free(qp->req.chain_iov);
}

static struct vfab_qp *qp_create(struct vfab_context *ctx, struct ibv_qp_init_attr_ex *a)
{
	struct vfab_qp *qp;
	struct ibv_qp *ib;
	int rc, slot;

	rc = check_init_attr(ctx, a);
	if (rc)
		goto fail;
	qp = calloc(1, sizeof(*qp));
	if (qp) {
		qp->req.post_buf = malloc(VFAB_CHAIN_MAX * sizeof(*qp->req.post_buf));
		qp->req.chain_iov = malloc(VFAB_CHAIN_IOV * sizeof(*qp->req.chain_iov));
	}
	if (!qp || !qp->req.post_buf || !qp->req.chain_iov) {
		if (qp)
			qp_free_scratch(qp);
		free(qp);
		rc = ENOMEM;
		goto fail;
	}
	qp->ctx = ctx;
	if (a->qp_type == IBV_QPT_XRC_RECV) {
		qp->xrcd = to_vxrcd(a->xrcd);
	} else {
		qp->pd = to_vpd(a->pd);
		qp->scq = to_vcq(a->send_cq);
		qp->rcq = a->qp_type == IBV_QPT_XRC_SEND ? qp->scq : to_vcq(a->recv_cq);
		/* An RSS QP completes nothing itself: CQs given along are not used. */
		if (a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)
			qp->scq = qp->rcq = NULL;
		qp->srq = a->srq ? to_vsrq(a->srq) : NULL;
		/* Queue depths round up to powers of two, as the HCA's rings do. */
		qp->cap.max_send_wr = round_pow2(a->cap.max_send_wr);
		qp->cap.max_send_sge = a->cap.max_send_sge;
		qp->cap.max_inline_data = inline_cap(a);
	}
	if (!qp->srq && qp->rcq && a->qp_type != IBV_QPT_XRC_SEND) {
		qp->cap.max_recv_wr = round_pow2(a->cap.max_recv_wr);
		qp->cap.max_recv_sge = a->cap.max_recv_sge;
	}
	qp->sq_sig_all = a->sq_sig_all != 0;
	qp->block_self_mcast = (a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
			       (a->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		qp->send_ops_flags = a->send_ops_flags;

	if (a->qp_type == IBV_QPT_RAW_PACKET) {
		rc = vfab_raw_open(qp);
		if (!rc && (a->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE)) {
			rc = vfab_raw_rss_init(qp, a);
			if (rc)
				vfab_raw_close(qp);
		}
		if (rc) {
			qp_free_scratch(qp);
			free(qp);
			goto fail;
		}
	}
	slot = vfab_qp_alloc(ctx->r, &ctx->owner, qp->cap.max_recv_wr, qp->cap.max_recv_sge);
	if (slot < 0) {
		vfab_raw_close(qp);
		qp_free_scratch(qp);
		free(qp);
		rc = -slot;
		goto fail;
	}
	qp->slot = slot;
	qp->s = &ctx->r->qps[slot];
	qp->req.dest.memfd = -1;
	qp->req.dest.pidfd = -1;
	for (int i = 0; i < VFAB_UD_PEERS; i++)
		vfab_owner_fds_init(&qp->req.ud_peers[i]);
	qp->qpn = qp->s->qpn;
	qp->state = IBV_QPS_RESET;
	qp->req.rng = vfab_mono_ns() ^ ((uint64_t)qp->qpn << 32);
	{
		pthread_mutexattr_t ma;

		/*
		 * Adaptive: a busy-polling application that meets the engine in
		 * its short critical section spins instead of going to sleep and
		 * losing its CPU for a whole time slice.
		 */
		pthread_mutexattr_init(&ma);
		pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
		pthread_mutex_init(&qp->sq.lock, &ma);
		pthread_mutexattr_destroy(&ma);
	}
	pthread_spin_init(&qp->rq.lock, PTHREAD_PROCESS_PRIVATE);
	fill_slot(qp, a);
	rc = -vfab_ctl_seal(ctx, VFAB_OBJ_QP, (uint32_t)slot,
			    "qpn=%u type=%u pd=%u scq=%u rcq=%u srq=%d cookie=%" PRIu64
			    " async=%u xrcd=%u",
			    qp->qpn, (unsigned)a->qp_type, qp->s->pd, qp->s->send_cq,
			    qp->s->recv_cq, qp->srq ? qp->srq->slot : -1,
			    (uint64_t)(uintptr_t)&qp->vqp.qp, ctx->async_id, qp->s->xrcd);
	if (rc) {
		vfab_qp_free(ctx->r, slot);
		vfab_raw_close(qp);
		pthread_mutex_destroy(&qp->sq.lock);
		pthread_spin_destroy(&qp->rq.lock);
		qp_free_scratch(qp);
		free(qp);
		goto fail;
	}
	qp->k = &ctx->k->qps[slot];

	ib = &qp->vqp.qp;
	ib->context = &ctx->vctx.context;
	ib->qp_context = a->qp_context;
	/*
	 * As libibverbs fills them for any type: an XRC_RECV QP keeps the PD
	 * and CQs it was given (librdmacm takes its connection's PD from
	 * there), though nothing of it uses them.
	 */
	ib->pd = (a->comp_mask & IBV_QP_INIT_ATTR_PD) ? a->pd : NULL;
	ib->send_cq = a->send_cq;
	ib->recv_cq = a->recv_cq;
	ib->srq = qp->xrcd ? NULL : a->srq;
	qp->vqp.xrcd = qp->xrcd ? (struct verbs_xrcd *)&qp->xrcd->vxrcd : NULL;
	ib->handle = (uint32_t)slot;
	ib->qp_num = qp->qpn;
	ib->state = IBV_QPS_RESET;
	ib->qp_type = a->qp_type;
	ib->events_completed = 0;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		vfab_qp_ex_init(qp);

	qp_hold(qp, 1);
	atomic_store(&ctx->map->qps[slot], qp);
	a->cap = qp->cap;
	return qp;
fail:
	errno = rc;
	return NULL;
}

struct ibv_qp *vfab_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a;
	struct vfab_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = qp_create(to_vctx(pd->context), &a);
	if (!qp)
		return NULL;
	attr->cap = a.cap;
	return &qp->vqp.qp;
}

struct ibv_qp *vfab_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	struct vfab_qp *qp = qp_create(to_vctx(ctx), attr);

	return qp ? &qp->vqp.qp : NULL;
}

int vfab_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	struct vfab_qp *qp = to_vqp(ibqp);

	(void)mask; /* everything is at hand: fill it all, as mlx5 does */
	pthread_mutex_lock(&qp->sq.lock);
	vfab_comp_sync_state(qp);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->rq_psn = atomic_load(&qp->s->epsn);
	attr->sq_psn = qp->req.psn;
	attr->cap = qp->cap;
	attr->sq_draining = 0;
	pthread_mutex_unlock(&qp->sq.lock);

	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = qp->cap;
	init->qp_type = ibqp->qp_type;
	init->sq_sig_all = qp->sq_sig_all;
	return 0;
}

int vfab_destroy_qp(struct ibv_qp *ibqp)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_context *ctx = qp->ctx;

	/* A flow holds its QP, as uverbs counts it (usecnt). */
	if (qp->raw && vfab_raw_busy(qp))
		return EBUSY;
	vfab_raw_close(qp);
	vfab_wire_close(qp);
	vfab_engine_cancel(qp);
	pthread_mutex_lock(&qp->sq.lock);
	/* Destroying is not an error: queued WRs vanish without completions. */
	vfab_sq_drop(qp);
	pthread_mutex_unlock(&qp->sq.lock);

	atomic_store(&ctx->map->qps[qp->slot], NULL);
	vfab_ctl_unseal(ctx, VFAB_OBJ_QP, (uint32_t)qp->slot);
	vfab_qp_free(ctx->r, qp->slot);
	if (qp->scq)
		vfab_cq_clean(qp->scq, qp->qpn);
	if (qp->rcq != qp->scq)
		vfab_cq_clean(qp->rcq, qp->qpn);
	qp_hold(qp, -1);
	vfab_qp_ex_fini(qp);
	vfab_dest_close(qp);
	qp_free_scratch(qp);
	pthread_mutex_destroy(&qp->sq.lock);
	pthread_spin_destroy(&qp->rq.lock);
	free(qp);
	return 0;
}
