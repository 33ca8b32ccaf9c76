/* SPDX-License-Identifier: MIT */
/*
 * The chain responders (vfab_resp_rc_chain, vfab_resp_ud_chain, see
 * vfab_resp.h): RDMA WRITEs and SENDs of one chain, or datagrams to one UD
 * QP, checked message by message by the rules of vfab_resp_check.h under
 * one hold of the destination's lock, moved by one copy (or, a chain of
 * small SENDs, by none: their bytes travel in their completions), their
 * receive completions pushed in order after it.
 */
#include "provider/vfab_resp.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_resp_check.h"
#include "provider/vfab_xfer.h"

#include <stdatomic.h>
#include <string.h>

/*
 * Remote segments of one chain: one per WRITE, one per receive buffer a
 * SEND fills; a chain that needs more stops there (the rest goes next).
 */
#define CHAIN_DST_MAX (4 * VFAB_CHAIN_MAX)

/*
 * The receive queue a chain takes its WQEs from: the QP's own, or its SRQ,
 * held locked from the first message that needs a receive until they are
 * consumed (after the copy), since other QPs take from it too.
 */
struct chain_rq {
	struct vfab_srq_slot *srq;	  /* locked, or NULL */
	const struct vfab_srq_slot *ksrq; /* vfabd's record of it */
	struct vfab_rq *rq;		  /* NULL until a message needs a receive */
	uint32_t pd;
	uint32_t taken; /* WQEs the chain's messages so far will consume */
};

/* Rule vfab_resp_check_rq for the next message of a chain: the next untaken WQE, into rw. */
static enum vfab_resp_kind chain_check_rq(const struct vfab_msg *m, struct chain_rq *c,
					  struct vfab_resp_rwqe *rw)
{
	if (!c->rq) {
		struct vfab_srq_slot *srq;

		c->rq = vfab_resp_rq_of(m, &srq, &c->ksrq, &c->pd);
		/* A tag matching SRQ matches one message at a time (vfab_resp_tm). */
		if (!c->rq || (c->ksrq && c->ksrq->tm_tags)) {
			c->rq = NULL;
			return VFAB_RESP_RNR;
		}
		if (srq && vfab_lock(&srq->lock)) {
			c->rq = NULL;
			return VFAB_RESP_RNR;
		}
		c->srq = srq;
	}
	if (c->srq && atomic_load(&c->srq->state) != VFAB_SLOT_USED)
		return VFAB_RESP_RNR;
	if (vfab_rq_copy(m->map, c->rq, c->taken, &rw->wr_id, rw->sge, VFAB_MAX_SRQ_SGE,
			 &rw->num_sge))
		return VFAB_RESP_RNR;
	rw->pd = c->pd;
	return VFAB_RESP_PASS;
}

/*
 * Where a SEND or datagram of a chain lands: its receive buffers, cut to
 * the bytes it puts there (the payload, and a datagram's GRH before it: the
 * chain's one copy fills the segments in order, so each message must take
 * exactly its own bytes), each used buffer's MR pinned in pins[] (parallel
 * to dst) until the caller's copy is done. False, nothing pinned, when a
 * rule would not let it through (bad lkey, buffers too small: the single
 * path reports it) or the segments do not fit.
 */
static bool chain_scatter(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw, uint64_t bytes,
			  struct iovec *dst, struct vfab_mr_slot **pins, unsigned int room,
			  unsigned int *n)
{
	struct iovec iov[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *p[VFAB_MAX_SRQ_SGE];
	uint64_t cap, left = bytes;
	unsigned int i, k;

	*n = 0;
	if (vfab_resp_scatter_list(m, rw, iov, p, &k, &cap) != IBV_WC_SUCCESS)
		return false;
	for (i = 0; i < k && left && cap >= bytes && *n < room; i++) {
		dst[*n] = iov[i];
		pins[*n] = p[i];
		p[i] = NULL;
		if (dst[*n].iov_len > left)
			dst[*n].iov_len = left;
		left -= dst[*n].iov_len;
		(*n)++;
	}
	vfab_resp_unpin_list(p, k); /* the buffers the message does not reach */
	if (!left && cap >= bytes)
		return true;
	vfab_resp_unpin_list(pins, *n);
	*n = 0;
	return false;
}

/*
 * Where a SEND whose bytes travel in its completion lands (vfab_resp_in_cqe),
 * into *x: false when a rule would not let it through or its first buffer
 * is too short (the single path copies it then).
 */
static bool chain_in_cqe(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
			 struct vfab_cqe_scatter *x)
{
	struct iovec iov[VFAB_MAX_SRQ_SGE];
	unsigned int n;
	uint64_t cap;

	return vfab_resp_scatter_list(m, rw, iov, NULL, &n, &cap) == IBV_WC_SUCCESS &&
	       cap >= m->len && vfab_resp_scatter_cqe(m, iov, n, x);
}

/* After the copy of a chain: its receive WQEs taken, the SRQ's limit checked and unlocked. */
static void chain_consume(const struct vfab_msg *m, struct chain_rq *c, bool copied)
{
	if (copied && c->taken) {
		vfab_rq_consume_n(c->rq, c->taken);
		if (c->srq)
			vfab_srq_check_limit(m->r, c->srq, c->ksrq);
	}
	if (c->srq)
		vfab_unlock(&c->srq->lock);
}

/*
 * The rules of resp_write and resp_send, message by message, under one hold
 * of the lock; only the copy is batched, and the receive completions follow
 * it in order. A chain starts only at the expected PSN and stops before the
 * first message a rule would not let through (including a SEND or WRITE
 * with immediate without a posted receive): that one has had no effect
 * here, and vfab_resp_rc gives it its exact outcome.
 */
uint32_t vfab_resp_rc_chain(const struct vfab_msg *m, uint32_t n)
{
	struct vfab_qp_slot *d = m[0].d;
	struct iovec dst[CHAIN_DST_MAX];
	struct vfab_mr_slot *pins[VFAB_CHAIN_MAX] = {0}; /* WRITE targets */
	struct vfab_mr_slot *rpins[CHAIN_DST_MAX] = {0}; /* receive buffers, parallel to dst */
	uint64_t wr_id[VFAB_CHAIN_MAX];
	struct vfab_cqe cqe[VFAB_CHAIN_MAX];
	struct vfab_cqe_scatter x[VFAB_CHAIN_MAX];
	bool solicited[VFAB_CHAIN_MAX];
	struct chain_rq c = {0};
	enum ibv_wc_status st;
	uint32_t k, i, writes = 0;
	unsigned int nd = 0, ns;
	struct vfab_resp_rwqe rw;
	bool dup, scattered = false;

	/* XRC: each message may name another SRQ; they go one by one. */
	if (n > VFAB_CHAIN_MAX || m[0].kq->qp_type == VFAB_QPT_XRC_RECV || vfab_lock(&d->lock))
		return 0;
	if (vfab_resp_check_state(&m[0]) != VFAB_RESP_PASS ||
	    vfab_resp_check_psn(&m[0], &dup) != VFAB_RESP_PASS || dup) {
		k = 0;
		goto out;
	}
	for (k = 0; k < n; k++) {
		uint32_t op = m[k].wqe->opcode;

		if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM) {
			/*
			 * A chain is all scatter to CQE (no copy at all) or has
			 * none: the message that differs from the first starts the
			 * next chain.
			 */
			bool in_cqe = vfab_resp_in_cqe(&m[k]);

			if (!k)
				scattered = in_cqe;
			if (in_cqe != scattered || chain_check_rq(&m[k], &c, &rw) != VFAB_RESP_PASS)
				break;
			if (in_cqe ? !chain_in_cqe(&m[k], &rw, &x[c.taken])
				   : !chain_scatter(&m[k], &rw, m[k].len, dst + nd, rpins + nd,
						    CHAIN_DST_MAX - nd, &ns))
				break;
			if (!in_cqe)
				nd += ns;
			wr_id[c.taken++] = rw.wr_id;
			continue;
		}
		if (scattered || nd == CHAIN_DST_MAX ||
		    vfab_resp_check_rkey(&m[k], IBV_ACCESS_REMOTE_WRITE, m[k].len, &dst[nd], &st,
					 &pins[k]) != VFAB_RESP_PASS)
			break;
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			if (chain_check_rq(&m[k], &c, &rw) != VFAB_RESP_PASS) {
				vfab_mr_unpin(pins[k]);
				pins[k] = NULL;
				break;
			}
			wr_id[c.taken++] = rw.wr_id;
		}
		if (m[k].len)
			nd++;
		writes++;
	}
	/* A failed copy may have written part of it: the single path writes it again. */
	if (k && nd &&
	    vfab_xfer_writev(m->kq->owner.pid, m[0].liov,
			     (unsigned int)(m[k - 1].liov + m[k - 1].nliov - m[0].liov), dst, nd))
		k = 0;
	for (i = 0; i < n; i++)
		vfab_mr_unpin(pins[i]);
	vfab_resp_unpin_list(rpins, nd);
	chain_consume(m, &c, k != 0);
	if (!k)
		goto out;
	/* The bytes are there: now their receive completions, in order. */
	for (i = 0, c.taken = 0; i < k; i++) {
		uint32_t op = m[i].wqe->opcode;

		if (op == IBV_WR_RDMA_WRITE)
			continue;
		rw.wr_id = wr_id[c.taken];
		solicited[c.taken] = vfab_resp_recv_cqe(
		    &m[i], &rw, IBV_WC_SUCCESS,
		    op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		    (uint32_t)m[i].len, scattered ? VFAB_WC_SCATTERED : 0, &cqe[c.taken]);
		c.taken++;
	}
	if (c.taken)
		vfab_cq_push_n(m->map, vfab_resp_recv_cq(m), &m->kq->owner, cqe, c.taken, solicited,
			       x);
	if (writes)
		vfab_count_event(&vfab_resp_dst_cnt(m)->rx_write_requests, writes);
	atomic_store(&d->epsn, (m[k - 1].psn + m[k - 1].npkts) & VFAB_PSN_MASK);
out:
	vfab_unlock(&d->lock);
	return k;
}

/*
 * The rules of vfab_resp_ud for each datagram under one hold of the lock:
 * the QP's state, port and Q_Key once (every datagram of a chain names the
 * same), then a posted receive whose buffers take the GRH and the payload;
 * one copy, then the receive completions in order. A datagram a rule would
 * drop or complete in error ends the chain: vfab_resp_ud does that.
 */
uint32_t vfab_resp_ud_chain(const struct vfab_msg *m, uint32_t n)
{
	struct vfab_qp_slot *d = m[0].d;
	struct iovec dst[CHAIN_DST_MAX];
	struct vfab_mr_slot *rpins[CHAIN_DST_MAX] = {0};
	uint64_t wr_id[VFAB_CHAIN_MAX];
	struct vfab_cqe cqe[VFAB_CHAIN_MAX];
	bool solicited[VFAB_CHAIN_MAX];
	struct chain_rq c = {0};
	struct vfab_resp_rwqe rw;
	unsigned int nd = 0, ns;
	uint32_t k = 0, i;

	if (n > VFAB_CHAIN_MAX || vfab_lock(&d->lock))
		return 0;
	if (vfab_resp_check_ud(&m[0]) != VFAB_RESP_PASS)
		goto out;
	for (k = 0; k < n; k++) {
		if (chain_check_rq(&m[k], &c, &rw) != VFAB_RESP_PASS ||
		    !chain_scatter(&m[k], &rw, m[k].len + VFAB_GRH_BYTES, dst + nd, rpins + nd,
				   CHAIN_DST_MAX - nd, &ns))
			break;
		nd += ns;
		wr_id[c.taken++] = rw.wr_id;
	}
	if (k &&
	    vfab_xfer_writev(m->kq->owner.pid, m[0].liov,
			     (unsigned int)(m[k - 1].liov + m[k - 1].nliov - m[0].liov), dst, nd))
		k = 0;
	vfab_resp_unpin_list(rpins, nd);
	chain_consume(m, &c, k != 0);
	for (i = 0; i < k; i++) {
		rw.wr_id = wr_id[i];
		solicited[i] =
		    vfab_resp_recv_cqe(&m[i], &rw, IBV_WC_SUCCESS, IBV_WC_RECV,
				       (uint32_t)m[i].len + VFAB_GRH_BYTES, IBV_WC_GRH, &cqe[i]);
	}
	if (k)
		vfab_cq_push_n(m->map, vfab_resp_recv_cq(m), &m->kq->owner, cqe, k, solicited,
			       NULL);
out:
	vfab_unlock(&d->lock);
	return k;
}
