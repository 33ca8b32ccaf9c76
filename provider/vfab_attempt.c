/* SPDX-License-Identifier: MIT */
/*
 * One work request on the wire: the HCA's local checks, the destination, the
 * link model (fabric/link_model.h) that says when the message arrives, and
 * the delivery itself (the responder's half, vfab_resp.c). On an unshaped
 * path the message arrives at once and is delivered inside post_send; on a
 * shaped one it is booked now and delivered when the model says, by the send
 * queue (vfab_sq.c). Nothing here completes a WR: the stage it leaves the WR
 * in (and returns) says what the send queue and the completer do with it.
 */
#include "provider/vfab_capture.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_mr_check.h"
#include "provider/vfab_raw.h"
#include "provider/vfab_resp.h"
#include "provider/vfab_wire.h"
#include "provider/vfab_xfer.h"
#include "fabric/mcast.h"
#include "fabric/roce_rc.h"

#include <string.h>

/* Retry interval when the local ACK timeout is 0, which IB defines as infinite. */
#define INFINITE_TIMEOUT_RETRY_NS 100000000ull
#define RNR_RETRY_FOREVER 7

/* Local ACK timeout: 4.096 us * 2^timeout. */
static uint64_t ack_timeout_ns(uint32_t timeout)
{
	return timeout ? 4096ull << timeout : INFINITE_TIMEOUT_RETRY_NS;
}

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

static bool reads_into_local(uint32_t op)
{
	return op == IBV_WR_RDMA_READ || is_atomic(op);
}

static __attribute__((cold)) enum vfab_stage failed(struct vfab_swqe *w, enum ibv_wc_status status)
{
	w->stage = VFAB_ST_FAILED;
	w->status = status;
	return VFAB_ST_FAILED;
}

enum ibv_wc_status vfab_gather(struct vfab_qp *qp, const struct vfab_swqe *w, struct iovec *iov,
			       unsigned int *n, uint64_t *len)
{
	struct vfab_context *ctx = qp->ctx;
	uint32_t need = reads_into_local(w->opcode) ? IBV_ACCESS_LOCAL_WRITE : 0;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	uint32_t i;

	*n = 0;
	*len = 0;
	if (w->is_inline) {
		if (w->inline_len) {
			iov[0].iov_base = (void *)w->inline_data;
			iov[0].iov_len = w->inline_len;
			*n = 1;
		}
		*len = w->inline_len;
		return IBV_WC_SUCCESS;
	}
	for (i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];
		uint64_t va;

		if (!s->length)
			continue;
		st = vfab_mr_check_local(vfab_mr_own(ctx, s->lkey), s->lkey, ctx->hca_idx,
					 (uint32_t)qp->pd->slot, s->addr, s->length, need, &va);
		if (st != IBV_WC_SUCCESS)
			return st;
		iov[*n].iov_base = (void *)(uintptr_t)va;
		iov[*n].iov_len = s->length;
		(*n)++;
		*len += s->length;
	}
	if (is_atomic(w->opcode))
		st = vfab_atomic_check_local(*len);
	else if (*len > VFAB_MAX_MSG_SZ)
		st = IBV_WC_LOC_LEN_ERR;
	return st;
}

uint32_t vfab_packets(uint64_t len, uint32_t mtu)
{
	if (!len)
		return 1;
	/* IB MTUs are powers of two: a shift, not a division, on every message. */
	if (mtu && !(mtu & (mtu - 1)))
		return (uint32_t)((len + mtu - 1) >> __builtin_ctz(mtu));
	return (uint32_t)((len + mtu - 1) / mtu);
}

/*
 * UC: no ACK ever comes back, so a WR is complete once its message is on
 * its way, whatever becomes of it (lost, dropped by the responder, no
 * receive posted); its PSNs are spent either way. It completes when the
 * message is delivered (ack_ns) or at once where nothing is delivered.
 */
static enum vfab_stage uc_sent(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now)
{
	qp->req.psn = (w->psn + w->npkts) & VFAB_PSN_MASK;
	w->stage = VFAB_ST_ACKED;
	w->due_ns = w->ack_ns > now ? w->ack_ns : now;
	return VFAB_ST_ACKED;
}

static bool is_uc(const struct vfab_qp *qp)
{
	return qp->vqp.qp.qp_type == IBV_QPT_UC;
}

/*
 * Nothing came back: the ACK timer runs; the send queue retries or gives up
 * (and counts the expiry, local_ack_timeout_err).
 */
static __attribute__((cold)) enum vfab_stage no_answer(struct vfab_qp *qp, struct vfab_swqe *w,
						       uint64_t now)
{
	if (is_uc(qp))
		return uc_sent(qp, w, now);
	if (!now)
		now = vfab_mono_ns();
	qp->req.psn = w->psn; /* go back to this WR */
	w->stage = VFAB_ST_WAIT_TIMEOUT;
	w->wait = VFAB_WAIT_NO_ANSWER;
	w->due_ns = now + ack_timeout_ns(qp->attr.timeout);
	return VFAB_ST_WAIT_TIMEOUT;
}

/*
 * The link lost this attempt (booked as b). Packets of the message after
 * the lost one reach the responder out of sequence (hw_counters/
 * out_of_sequence there); its NAK (PSN sequence error) is back when they
 * have arrived plus the reverse path, and the WR goes again from its PSN
 * (go-back-N). A lost last packet leaves the responder silent: the ACK
 * timer runs, unless a WR posted later draws the NAK (vfab_sq_nak_lost).
 */
static __attribute__((cold)) enum vfab_stage lost(struct vfab_qp *qp, struct vfab_swqe *w,
						  uint64_t now, const struct fabric_booking *b,
						  const struct iovec *iov, unsigned int n,
						  uint64_t len)
{
	struct vfab_region *r = qp->ctx->r;
	uint32_t k;

	if (is_uc(qp)) {
		if (vfab_cap_on(r))
			vfab_cap_rc(qp, w, len, VFAB_CAP_LOST, 0, 0, 0, iov, n);
		w->ack_ns = 0;
		return uc_sent(qp, w, now);
	}
	k = fabric_lost_packet(&qp->req.rng, w->npkts);
	if (vfab_cap_on(r))
		vfab_cap_rc(qp, w, len, VFAB_CAP_LOST, 0, 0, k, iov, n);
	qp->req.psn = w->psn;
	w->stage = VFAB_ST_WAIT_TIMEOUT;
	if (k + 1 < w->npkts) {
		vfab_count_event(&vfab_cnt(r, qp->req.dest.hca, qp->req.dest.port)->out_of_sequence,
				 w->npkts - 1 - k);
		w->wait = VFAB_WAIT_NAK_SEQ;
		w->due_ns = b->deliver_ns + fabric_path_latency_ns(r, &qp->req.dest.rev);
		return VFAB_ST_WAIT_TIMEOUT;
	}
	w->wait = VFAB_WAIT_LOST_TAIL;
	w->ack_ns = b->deliver_ns;
	w->due_ns = now + ack_timeout_ns(qp->attr.timeout);
	qp->sq.lost_tail = true;
	return VFAB_ST_WAIT_TIMEOUT;
}

/*
 * When the message arrives and when its ACK is back. A READ's data and an
 * atomic's result travel the reverse path after the request.
 */
static void rc_book(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t len, uint64_t now)
{
	struct vfab_region *r = qp->ctx->r;
	struct fabric_booking req, resp;

	if (reads_into_local(w->opcode)) {
		fabric_path_book(r, &qp->req.dest.fwd, now, is_atomic(w->opcode) ? len : 0, true,
				 &req);
		fabric_path_book(r, &qp->req.dest.rev, req.deliver_ns, len, true, &resp);
		w->due_ns = w->opcode == IBV_WR_RDMA_READ ? resp.deliver_ns : req.deliver_ns;
		w->ack_ns = resp.deliver_ns;
		return;
	}
	fabric_path_book(r, &qp->req.dest.fwd, now, len, true, &req);
	w->due_ns = req.deliver_ns;
	/* UC has no ACK to wait for: it completes as its message is delivered. */
	w->ack_ns = is_uc(qp) ? req.deliver_ns
			      : req.deliver_ns + fabric_path_latency_ns(r, &qp->req.dest.rev);
}

/*
 * The responder's half at now, to the destination d that vfab_dest gave
 * with both ports up; the ACK (if any) is due at w->ack_ns.
 */
static enum vfab_stage rc_transfer(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now,
				   struct vfab_qp_slot *d, struct iovec *iov, unsigned int n,
				   uint64_t len)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_resp res;
	struct vfab_msg m;

	vfab_msg_build(&m, qp, w, iov, n, len, d, &qp->req.dest.kq, qp->req.dest.hca,
		       qp->req.dest.port, qp->req.dest.memfd);
	m.pidfd1 = qp->req.dest.pidfd + 1;
	m.refused = qp->req.dest.refused;
	m.psn = w->psn;
	m.npkts = w->npkts;
	vfab_resp_rc(&m, &res);
	/* w->tm_fin starts false (from_wr): only a finished rendezvous writes it. */
	if (__builtin_expect(res.tm_fin, 0)) {
		w->tm_fin = true;
		w->tm_fin_tag = res.tm_fin_tag;
	}
	if (vfab_cap_on(ctx->r)) {
		uint8_t result, syndrome;

		vfab_cap_answer(&res, &result, &syndrome);
		/* UC never answers: its message was on the wire whatever became of it. */
		if (is_uc(qp))
			result = VFAB_CAP_UNANSWERED;
		vfab_cap_rc(qp, w, len, result, syndrome, res.atomic_orig, 0, iov, n);
	}
	if (is_uc(qp)) {
		if (res.kind == VFAB_RESP_ACK)
			vfab_count_ports(m.r, m.src_hca, m.src_port, m.dst_hca, m.dst_port, len,
					 w->npkts);
		return uc_sent(qp, w, now);
	}

	switch (res.kind) {
	case VFAB_RESP_ACK:
		if (is_atomic(w->opcode))
			memcpy(iov[0].iov_base, &res.atomic_orig, sizeof(res.atomic_orig));
		if (reads_into_local(w->opcode)) {
			vfab_count_ports(m.r, m.src_hca, m.src_port, m.dst_hca, m.dst_port, 0, 1);
			vfab_count_ports(m.r, m.dst_hca, m.dst_port, m.src_hca, m.src_port, len,
					 w->npkts);
		} else {
			vfab_count_ports(m.r, m.src_hca, m.src_port, m.dst_hca, m.dst_port, len,
					 w->npkts);
		}
		w->stage = VFAB_ST_ACKED;
		w->due_ns = w->ack_ns > now ? w->ack_ns : now;
		return VFAB_ST_ACKED;
	case VFAB_RESP_RNR:
		/*
		 * A receive queue whose owner has exited (and whose slot nobody
		 * freed: vfabd is dead or slow) never gets a receive: its QP is
		 * gone, as the kernel would have destroyed it, so nothing answers.
		 */
		if (qp->req.dest.pidfd >= 0
			? !vfab_xfer_alive(qp->req.dest.pidfd)
			: qp->req.dest.memfd >= 0 && !vfab_xfer_mem_alive(qp->req.dest.memfd))
			return no_answer(qp, w, now);
		qp->req.psn = w->psn;
		/* The responder found no receive WQE: its port's out_of_buffer. */
		vfab_count_event(&vfab_cnt(m.r, qp->req.dest.hca, qp->req.dest.port)->out_of_buffer,
				 1);
		if (w->rnr_left == 0)
			return failed(w, IBV_WC_RNR_RETRY_EXC_ERR);
		/* mlx5 counts the RNR NAKs it retries (not the one that exceeds the limit). */
		vfab_count_event(&vfab_cnt(ctx->r, ctx->hca_idx, qp->s->port)->rnr_nak_retry_err,
				 1);
		if (w->rnr_left != RNR_RETRY_FOREVER)
			w->rnr_left--;
		w->stage = VFAB_ST_WAIT_RNR;
		w->due_ns = (now ? now : vfab_mono_ns()) + roce_rnr_timer_ns(res.rnr_timer);
		return VFAB_ST_WAIT_RNR;
	case VFAB_RESP_NAK:
		return failed(w, res.status);
	default:
		return no_answer(qp, w, now);
	}
}

/*
 * Whether a WR of this QP before w is not delivered yet (the send queue's
 * cursor is the first WR not ACKED; w is not queued yet when post_send
 * starts it). A lossless link never lets a message overtake an earlier one
 * of its QP, so w then waits in flight for its turn however early the model
 * says it arrives.
 */
static bool behind_undelivered(const struct vfab_qp *qp, const struct vfab_swqe *w)
{
	return qp->sq.cursor && qp->sq.cursor != w;
}

/*
 * Through the link model: a loss draw, the booking, and the delivery now
 * or, on a path with rate or latency or behind a WR still in flight, when
 * the model says and its turn has come. Out of line: the plain path's code
 * stays compact (what runs before its copy delays it).
 */
static __attribute__((noinline)) enum vfab_stage
rc_attempt_modeled(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now, struct vfab_qp_slot *d,
		   struct iovec *iov, unsigned int n, uint64_t len)
{
	struct vfab_region *r = qp->ctx->r;
	bool shaped, behind = behind_undelivered(qp, w);

	/* A lost attempt's bytes still crossed links up to where it was lost. */
	if (fabric_path_drop(r, &qp->req.dest.fwd, &qp->req.rng)) {
		struct fabric_booking b;

		if (!now)
			now = vfab_mono_ns();
		fabric_path_book(r, &qp->req.dest.fwd, now, len, true, &b);
		return lost(qp, w, now, &b, iov, n, len);
	}
	qp->req.psn = (w->psn + w->npkts) & VFAB_PSN_MASK;
	/* Only a shaped path needs the time: an unshaped one delivers at once. */
	shaped =
	    fabric_path_shaped(r, &qp->req.dest.fwd) || fabric_path_shaped(r, &qp->req.dest.rev);
	if ((shaped || behind) && !now)
		now = vfab_mono_ns();
	rc_book(qp, w, len, now);
	if (behind || (shaped && w->due_ns > now)) {
		w->stage = VFAB_ST_FLIGHT;
		return VFAB_ST_FLIGHT;
	}
	if (!vfab_dest_ports_up(qp))
		return no_answer(qp, w, now);
	return rc_transfer(qp, w, now, d, iov, n, len);
}

static enum vfab_stage rc_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now)
{
	struct vfab_region *r = qp->ctx->r;
	struct iovec iov[VFAB_MAX_SGE + 1];
	struct vfab_qp_slot *d;
	enum vfab_stage out;
	enum ibv_wc_status st;
	unsigned int n;
	uint64_t len;

	st = vfab_gather(qp, w, iov, &n, &len);
	if (__builtin_expect(st != IBV_WC_SUCCESS, 0))
		return failed(w, st);
	if (__builtin_expect(qp->wire != NULL, 0))
		return vfab_wire_attempt(qp, w, iov, n, len);
	w->byte_len = (uint32_t)len;
	w->psn = qp->req.psn;
	w->npkts = is_atomic(w->opcode) ? 1 : vfab_packets(len, qp->req.mtu_bytes);
	d = vfab_dest(qp);
	if (__builtin_expect(!d, 0))
		return no_answer(qp, w, now);
	if (!vfab_dest_plain(qp) || __builtin_expect(behind_undelivered(qp, w), 0))
		return rc_attempt_modeled(qp, w, now, d, iov, n, len);
	/* Nothing to time or lose: deliver now, count the links afterwards. */
	if (__builtin_expect(!vfab_dest_ports_up(qp), 0))
		return no_answer(qp, w, now);
	qp->req.psn = (w->psn + w->npkts) & VFAB_PSN_MASK;
	w->ack_ns = 0;
	out = rc_transfer(qp, w, now, d, iov, n, len);
	if (reads_into_local(w->opcode)) {
		vfab_count_links(r, &qp->req.dest.fwd, is_atomic(w->opcode) ? len : 0, 1);
		vfab_count_links(r, &qp->req.dest.rev, len, 1);
	} else {
		vfab_count_links(r, &qp->req.dest.fwd, len, 1);
	}
	return out;
}

/* UD has no ACK: once sent, the WR succeeds whatever happens to the datagram. */
static enum vfab_stage ud_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now,
				  bool booked)
{
	struct iovec iov[VFAB_MAX_SGE + 1];
	struct fabric_booking b;
	struct fabric_path path;
	enum ibv_wc_status st;
	unsigned int n;
	uint64_t len;
	uint32_t h, p;
	uint8_t type;

	st = vfab_gather(qp, w, iov, &n, &len);
	if (st == IBV_WC_SUCCESS && len > qp->req.mtu_bytes)
		st = IBV_WC_LOC_LEN_ERR;
	if (st != IBV_WC_SUCCESS)
		return failed(w, st);
	w->byte_len = (uint32_t)len;
	w->stage = VFAB_ST_ACKED;
	w->due_ns = now;
	/* A datagram takes one PSN of the QP's send queue, as on the wire. */
	if (!booked) {
		w->psn = qp->req.psn;
		qp->req.psn = (qp->req.psn + 1) & VFAB_PSN_MASK;
	}
	if (w->remote_qpn == VFAB_MCAST_QPN && vfab_mcast_gid_is_mc(w->ah->dgid))
		return vfab_mcast_attempt(qp, w, now, booked, behind_undelivered(qp, w), iov, n,
					  len);
	if (!vfab_dest_ud_route(qp, w, &h, &p, &type, &path)) {
		if (qp->wire)
			vfab_wire_ud_send(qp, w, iov, n, len);
		return VFAB_ST_ACKED;
	}
	if (!booked) {
		bool shaped = fabric_path_shaped(qp->ctx->r, &path);

		if (fabric_path_drop(qp->ctx->r, &path, &qp->req.rng))
			return VFAB_ST_ACKED;
		bool behind = behind_undelivered(qp, w);

		if ((shaped || behind) && !now)
			now = vfab_mono_ns();
		fabric_path_book(qp->ctx->r, &path, now, len, true, &b);
		if (behind || (shaped && b.deliver_ns > now)) {
			w->stage = VFAB_ST_FLIGHT;
			w->due_ns = b.deliver_ns;
			return VFAB_ST_FLIGHT;
		}
	}
	vfab_resp_ud_send(qp, w, iov, n, len, h, p, w->remote_qpn, type);
	return VFAB_ST_ACKED;
}

/* A bind or invalidation: done by this HCA on its own keys, nothing on the wire. */
static __attribute__((cold)) enum vfab_stage local_op(struct vfab_qp *qp, struct vfab_swqe *w)
{
	enum ibv_wc_status st = vfab_mw_exec(qp, w);

	if (st != IBV_WC_SUCCESS)
		return failed(w, st);
	w->byte_len = 0;
	w->npkts = 0;
	w->psn = qp->req.psn;
	w->due_ns = 0;
	w->ack_ns = 0;
	w->stage = VFAB_ST_ACKED;
	return VFAB_ST_ACKED;
}

/* A raw packet QP's frame: on the wire at once, complete once sent. */
static __attribute__((cold)) enum vfab_stage raw_attempt(struct vfab_qp *qp, struct vfab_swqe *w,
							 uint64_t now)
{
	struct iovec iov[VFAB_MAX_SGE + 1];
	enum ibv_wc_status st;
	unsigned int n;
	uint64_t len;

	st = vfab_gather(qp, w, iov, &n, &len);
	if (st == IBV_WC_SUCCESS)
		st = vfab_raw_send(qp, w, iov, n, len);
	if (st != IBV_WC_SUCCESS)
		return failed(w, st);
	w->byte_len = (uint32_t)len;
	w->stage = VFAB_ST_ACKED;
	w->due_ns = now;
	return VFAB_ST_ACKED;
}

enum vfab_stage vfab_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now)
{
	if (__builtin_expect(vfab_local_op(w->opcode), 0))
		return local_op(qp, w);
	if (__builtin_expect(qp->raw != NULL, 0))
		return raw_attempt(qp, w, now);
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		return ud_attempt(qp, w, now, false);
	return rc_attempt(qp, w, now);
}

enum vfab_stage vfab_deliver(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now)
{
	struct iovec iov[VFAB_MAX_SGE + 1];
	struct vfab_qp_slot *d;
	enum ibv_wc_status st;
	unsigned int n;
	uint64_t len;

	if (__builtin_expect(vfab_local_op(w->opcode), 0))
		return local_op(qp, w);
	if (qp->raw)
		return raw_attempt(qp, w, now);
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		return ud_attempt(qp, w, now, true);
	/* The buffers are read (or written) now, as the HCA's DMA would. */
	st = vfab_gather(qp, w, iov, &n, &len);
	if (st != IBV_WC_SUCCESS)
		return failed(w, st);
	d = vfab_dest(qp);
	if (!d || !vfab_dest_ports_up(qp))
		return no_answer(qp, w, now);
	return rc_transfer(qp, w, now, d, iov, n, len);
}
