/* SPDX-License-Identifier: MIT */
/*
 * Posting: post_send validates each work request as the HCA's send engine
 * does when it takes the WQE, then starts it (vfab_attempt.c). On an
 * unshaped path a message is delivered and completed inside post_send, in
 * the caller's thread; what is on a shaped path, or waits for an IB timer,
 * goes to the send queue (vfab_sq.c), which the engine thread and poll_cq
 * move on through the completer (vfab_comp.c), which writes every send CQE.
 */
#include "provider/vfab_comp.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_lead.h"
#include "provider/vfab_raw.h"

#include <errno.h>
#include <string.h>

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/* What post_send refuses outright rather than completing with an error. */
int vfab_req_check_post(struct vfab_qp *qp, const struct vfab_swqe *w, uint32_t ahead)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD, uc = qp->vqp.qp.qp_type == IBV_QPT_UC;

	/* An XRC_RECV QP has no send queue. */
	if ((qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR) ||
	    qp->vqp.qp.qp_type == IBV_QPT_XRC_RECV)
		return EINVAL;
	if (qp->raw && vfab_raw_check_post(w))
		return EINVAL;
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_SEND_WITH_INV: /* a connected peer's window only */
		if (ud)
			return EINVAL;
		break;
	case IBV_WR_BIND_MW:
		if (ud || !w->mw || (w->bind_mr && w->bind_mr->context != w->mw->context))
			return EINVAL;
		break;
	case IBV_WR_LOCAL_INV:
		if (ud)
			return EINVAL;
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (ud)
			return EINVAL;
		break;
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (ud || uc) /* an unreliable connection carries no responses */
			return EINVAL;
		break;
	default:
		return EINVAL;
	}
	if (ud && !w->ah)
		return EINVAL;
	if (w->num_sge > qp->cap.max_send_sge ||
	    (w->is_inline && w->inline_len > qp->cap.max_inline_data))
		return ENOMEM;
	if ((uint32_t)(qp->sq.posted + ahead -
		       atomic_load_explicit(&qp->sq.retired, memory_order_acquire)) >=
	    qp->cap.max_send_wr)
		return ENOMEM;
	return 0;
}

/* The WR takes its place in the send queue. */
static void prepare(struct vfab_qp *qp, struct vfab_swqe *w)
{
	w->sq_index = ++qp->sq.posted;
	w->retries_left = (uint8_t)qp->attr.retry_cnt;
	w->rnr_left = (uint8_t)qp->attr.rnr_retry;
	w->stage = VFAB_ST_QUEUED;
	w->due_ns = 0;
}

/* Sends one prepared WR; 0 or an errno value (the WR is then not posted). */
/*
 * A lone message on a shaped path that lands within a few microseconds is
 * delivered by the posting thread itself, after spinning until its time:
 * handing it to the progress thread would add that thread's wake-up (10-20 us
 * on a VM) to every short one-way latency. Returns the next due time.
 */
#define INLINE_WAIT_NS 20000ull

static uint64_t deliver_soon_inline(struct vfab_qp *qp, uint64_t due)
{
	uint64_t now = vfab_mono_ns(),
		 at = vfab_lead_start_ns(qp->sq.tail->byte_len, qp->sq.tail->due_ns);

	if (at <= now || at - now > INLINE_WAIT_NS)
		return due;
	while (vfab_mono_ns() < at)
		vfab_cpu_relax();
	return vfab_comp_progress(qp);
}

static int start(struct vfab_qp *qp, struct vfab_swqe *w)
{
	enum vfab_stage out;
	uint64_t now, due;
	int rc;

	if (qp->state == IBV_QPS_ERR) {
		vfab_comp_send(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		return 0;
	}
	/* RC order: nothing overtakes a WR that waits. */
	if (vfab_sq_blocked(qp)) {
		rc = vfab_sq_append(qp, w);
		if (rc) {
			qp->sq.posted--;
			return rc;
		}
		if (__builtin_expect(qp->sq.lost_tail, 0)) {
			vfab_sq_nak_lost(qp, vfab_mono_ns());
			vfab_engine_schedule_posted(qp, vfab_sq_next_due(qp));
		}
		return 0;
	}
	/* Time 0: read the clock only if the path is shaped or the WR must wait. */
	out = vfab_attempt(qp, w, 0);
	now = w->due_ns ? vfab_mono_ns() : 0;
	/* The common case: delivered and acknowledged at once, nothing before it. */
	if (!qp->sq.head && out == VFAB_ST_ACKED && w->due_ns <= now) {
		vfab_comp_send(qp, w, IBV_WC_SUCCESS, w->byte_len);
		return 0;
	}
	if (!qp->sq.head && out == VFAB_ST_FAILED) {
		vfab_comp_send(qp, w, (enum ibv_wc_status)w->status, 0);
		vfab_comp_error(qp);
		return 0;
	}
	if (vfab_sq_append(qp, w)) {
		/* The WR is on its way but cannot be tracked: complete it as lost. */
		vfab_comp_send(qp, w, IBV_WC_LOC_QP_OP_ERR, 0);
		vfab_comp_error(qp);
		return 0;
	}
	due = vfab_sq_next_due(qp);
	/* Only WRs already delivered (waiting for their ACK) stand before it. */
	if (qp->sq.tail && qp->sq.cursor == qp->sq.tail && qp->sq.tail->stage == VFAB_ST_FLIGHT)
		due = deliver_soon_inline(qp, due);
	if (due)
		vfab_engine_schedule_posted(qp, due);
	return 0;
}

/*
 * How many WRs from w[0] may travel as one chain: RDMA WRITEs and SENDs
 * (vfab_chain_op) of an RC QP in RTS with nothing queued before them.
 */
static uint32_t chain_len(const struct vfab_qp *qp, const struct vfab_swqe *w, uint32_t n)
{
	uint32_t k;

	if (vfab_qp_transport(qp->vqp.qp.qp_type) != IBV_QPT_RC || qp->state != IBV_QPS_RTS ||
	    qp->sq.head || qp->wire)
		return 0;
	for (k = 0; k < n && k < VFAB_CHAIN_MAX && vfab_chain_op(w[k].opcode); k++)
		;
	return k;
}

/*
 * Batched submission. A small RDMA WRITE (or a SEND of a stream, below)
 * posted by a thread that polls its CQs, while WRs it posted before are
 * not reaped yet, is held back in the send queue (QUEUED) rather than
 * copied at once: the WRs that follow it join it, and vfab_sq_advance
 * moves them all with one copy (a chain) when the application next polls
 * a CQ (vfab_engine_poll runs the QP, due at once), when VFAB_CHAIN_MAX
 * are held, or before anything else is posted on the QP; a WRITE with
 * immediate (a notification) ends the batch and sends it. SENDs posted
 * together (a list, an ibv_wr_* batch) chain too. A thread that stops
 * polling leaves them to the engine (at most its backstop late), and that
 * QP holds nothing for a while (vfab_engine.c): its application may wait
 * for the peer without polling (rsockets' riowrite, then a spin on the
 * byte the peer writes back, waited the backstop on every round trip).
 * Only to another process on a plain path: a shaped path times each
 * message itself, and a lone WR (nothing pending) is never held, so
 * latency is untouched. RC order holds (the queue is in posting order)
 * and every completion is written after its bytes.
 */
#define BATCH_MAX_BYTES 4096u

/*
 * SENDs are held only in a stream: from the STREAM_MIN'th of SENDs posted
 * one by one with no poll of the QP's CQs in between (ib_send_bw between
 * its polls, a burst of eager messages). A ping-pong polls between its
 * SENDs, and UCX's rendezvous and credit SENDs come alone after a poll,
 * then the application computes; held, they waited for its next call
 * (Open MPI's 1 MiB ping-pong lost a fifth): never held.
 */
#define STREAM_MIN 4u

static uint32_t polls_of(struct vfab_cq *cq)
{
	return cq ? atomic_load_explicit(&cq->polls, memory_order_relaxed) : 0;
}

static bool send_streams(struct vfab_qp *qp)
{
	uint32_t polls = polls_of(qp->scq) + polls_of(qp->rcq);

	if (polls != qp->sq.send_polls) {
		qp->sq.send_polls = polls;
		qp->sq.send_streak = 0;
	} else if (qp->sq.send_streak < STREAM_MIN) {
		qp->sq.send_streak++;
	}
	return qp->sq.send_streak + 1 >= STREAM_MIN;
}

static bool deferrable(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_ud_hop to;
	struct vfab_qp_slot *d;
	uint64_t len = 0;
	uint32_t i;

	switch (w->opcode) {
	case IBV_WR_RDMA_WRITE:
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		if (!qp->sq.batched)
			return false;
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		if (!send_streams(qp))
			return false;
		break;
	default:
		return false;
	}
	if (qp->state != IBV_QPS_RTS)
		return false;
	if (w->is_inline) {
		len = w->inline_len;
	} else {
		for (i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
	}
	if (len > BATCH_MAX_BYTES)
		return false;
	/*
	 * Joining held WRs: the first of them passed the rest. Should the
	 * destination have changed since, the send queue finds out and
	 * attempts them one by one.
	 */
	if (qp->sq.batched)
		return true;
	if (qp->sq.head || !vfab_engine_thread_polls())
		return false;
	if (qp->sq.hold_off_ns && vfab_mono_ns() < qp->sq.hold_off_ns)
		return false;
	/* Earlier WRs the application has not reaped: it will poll for them. */
	if (qp->sq.posted == atomic_load_explicit(&qp->sq.retired, memory_order_acquire))
		return false;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		return vfab_dest_ud_chainable(qp, w, &to);
	if (vfab_qp_transport(qp->vqp.qp.qp_type) != IBV_QPT_RC)
		return false;
	d = vfab_dest(qp);
	return d && qp->req.dest.kq.owner.pid != qp->ctx->owner.pid && vfab_dest_plain(qp) &&
	       vfab_dest_ports_up(qp);
}

/* Sends what post_send held back (and whatever else is due). */
static void flush(struct vfab_qp *qp)
{
	uint64_t due = vfab_comp_progress(qp);

	qp->sq.batched = 0;
	if (due)
		vfab_engine_schedule_posted(qp, due);
}

static int defer(struct vfab_qp *qp, struct vfab_swqe *w)
{
	prepare(qp, w);
	if (vfab_sq_append(qp, w)) {
		qp->sq.posted--;
		return ENOMEM;
	}
	if (++qp->sq.batched >= VFAB_CHAIN_MAX || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
		flush(qp);
	else if (qp->sq.batched == 1)
		vfab_engine_schedule_posted(qp, 1); /* due now: the next poll sends it */
	return 0;
}

/*
 * A chain of two or more goes with one copy; whatever the chain leaves (a
 * WR that fails a check, waits or is not a WRITE) starts on its own, so its
 * outcome is exactly that of a single post.
 */
int vfab_req_submit(struct vfab_qp *qp, struct vfab_swqe *w, uint32_t n, uint32_t *posted)
{
	struct vfab_swqe *c[VFAB_CHAIN_MAX];
	uint32_t i = 0, k, done, j;
	int rc = 0;

	while (i < n && !rc) {
		if (deferrable(qp, &w[i])) {
			rc = defer(qp, &w[i]);
			i += !rc;
			continue;
		}
		/* Nothing overtakes what was held back. */
		if (qp->sq.batched)
			flush(qp);
		k = chain_len(qp, w + i, n - i);
		if (k < 2) {
			prepare(qp, &w[i]);
			rc = start(qp, &w[i]);
			i += !rc;
			continue;
		}
		for (j = 0; j < k; j++) {
			prepare(qp, &w[i + j]);
			c[j] = &w[i + j];
		}
		done = vfab_attempt_chain(qp, c, k);
		for (j = 0; j < done; j++)
			vfab_comp_send(qp, &w[i + j], IBV_WC_SUCCESS, w[i + j].byte_len);
		for (j = done; j < k && !rc; j++)
			rc = start(qp, &w[i + j]);
		if (rc) {
			j--;
			/* Not posted: neither is anything after it (start took back its own). */
			qp->sq.posted -= k - j - 1;
			i += j;
		} else {
			i += k;
		}
	}
	*posted = i;
	return rc;
}

/* ibv_send_wr -> vfab_swqe; inline data is copied now, as the HCA does. */
static int from_wr(struct vfab_qp *qp, const struct ibv_send_wr *wr, struct vfab_swqe *w)
{
	int i;

	if (wr->num_sge < 0 || wr->num_sge > VFAB_MAX_SGE)
		return ENOMEM;
	w->wr_id = wr->wr_id;
	w->opcode = wr->opcode;
	w->flags = wr->send_flags;
	w->remote_srqn =
	    qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND ? wr->qp_type.xrc.remote_srqn : VFAB_SLOT_NONE;
	w->imm_data = wr->imm_data;
	w->num_sge = (uint32_t)wr->num_sge;
	w->ah = NULL;
	w->is_inline = false;
	w->inline_len = 0;
	w->mw = NULL;
	w->tm_fin = false;
	switch (wr->opcode) {
	case IBV_WR_BIND_MW:
		w->mw = wr->bind_mw.mw;
		w->rkey = wr->bind_mw.rkey;
		w->bind_mr = wr->bind_mw.bind_info.mr;
		w->bind_addr = wr->bind_mw.bind_info.addr;
		w->bind_len = wr->bind_mw.bind_info.length;
		w->bind_access = wr->bind_mw.bind_info.mw_access_flags;
		w->num_sge = 0;
		return 0;
	case IBV_WR_LOCAL_INV:
		w->inv_rkey = wr->invalidate_rkey;
		w->num_sge = 0;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		w->inv_rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		w->remote_addr = wr->wr.atomic.remote_addr;
		w->rkey = wr->wr.atomic.rkey;
		w->compare_add = wr->wr.atomic.compare_add;
		w->swap = wr->wr.atomic.swap;
		break;
	default:
		if (qp->vqp.qp.qp_type == IBV_QPT_UD) {
			w->ah = wr->wr.ud.ah ? to_vah(wr->wr.ud.ah) : NULL;
			w->remote_qpn = wr->wr.ud.remote_qpn;
			w->remote_qkey = wr->wr.ud.remote_qkey;
		} else {
			w->remote_addr = wr->wr.rdma.remote_addr;
			w->rkey = wr->wr.rdma.rkey;
		}
		break;
	}
	if ((wr->send_flags & IBV_SEND_INLINE) && wr->opcode != IBV_WR_RDMA_READ &&
	    !is_atomic(wr->opcode)) {
		uint64_t total = 0;

		for (i = 0; i < wr->num_sge; i++)
			total += wr->sg_list[i].length;
		if (total > qp->cap.max_inline_data)
			return ENOMEM;
		for (i = 0; i < wr->num_sge; i++) {
			memcpy(w->inline_data + w->inline_len,
			       (const void *)(uintptr_t)wr->sg_list[i].addr, wr->sg_list[i].length);
			w->inline_len += wr->sg_list[i].length;
		}
		w->is_inline = true;
		return 0;
	}
	if (wr->num_sge)
		memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(w->sge[0]));
	return 0;
}

int vfab_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	struct vfab_swqe *w = qp->req.post_buf;
	struct ibv_send_wr *first;
	uint32_t n, posted;
	int rc = 0, rc2;

	*bad = NULL;
	pthread_mutex_lock(&qp->sq.lock);
	vfab_comp_sync_state(qp);
	/* WRs accepted before a bad one are posted, as on the HCA. */
	while (wr && !rc) {
		first = wr;
		for (n = 0; wr && n < VFAB_CHAIN_MAX; n++, wr = wr->next) {
			rc = from_wr(qp, wr, &w[n]);
			if (!rc)
				rc = vfab_req_check_post(qp, &w[n], n);
			if (rc) {
				*bad = wr;
				break;
			}
		}
		rc2 = n ? vfab_req_submit(qp, w, n, &posted) : 0;
		if (rc2) {
			for (*bad = first; posted; posted--)
				*bad = (*bad)->next;
			rc = rc2;
		}
	}
	pthread_mutex_unlock(&qp->sq.lock);
	return rc;
}

/*
 * As libmlx5 does: a BIND_MW WR with the next key of the window (its low
 * byte moved on), which the window takes once the WR is posted.
 */
int vfab_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw, struct ibv_mw_bind *b)
{
	struct ibv_send_wr wr = {0}, *bad;
	uint32_t rkey = ibv_inc_rkey(mw->rkey);
	int rc;

	if (mw->type != IBV_MW_TYPE_1 || ibqp->context != mw->context)
		return EINVAL;
	wr.wr_id = b->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = b->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info = b->bind_info;
	rc = vfab_post_send(ibqp, &wr, &bad);
	if (!rc)
		mw->rkey = rkey;
	return rc;
}
