/* SPDX-License-Identifier: MIT */
/*
 * Responder checks and delivery (see vfab_resp.h). Everything here runs
 * under the destination QP slot's lock, so the destination's state, PSN and
 * receive queue cannot change under the check, and the bytes land before the
 * receive completion that announces them.
 */
#include "provider/vfab_resp.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_dma.h"
#include "provider/vfab_mr_check.h"
#include "provider/vfab_xfer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

/* A receive WQE copied out of its ring, with the PD its lkeys must belong to. */
struct rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pd;
	struct vfab_sge sge[VFAB_MAX_SRQ_SGE];
};

static struct vfab_port *dst_port(const struct vfab_msg *m)
{
	return &m->r->hcas[m->dst_hca].ports[m->dst_port - 1];
}

/* ACKs go to the responder's address vector: it must lead back to us. */
static bool back_path_ok(const struct vfab_msg *m)
{
	const struct vfab_port *sp = &m->r->hcas[m->src_hca].ports[m->src_port - 1];
	uint32_t i, n = sp->ngids < VFAB_PORT_GIDS ? sp->ngids : VFAB_PORT_GIDS;

	if (m->d->dest_qpn != m->src_qpn)
		return false;
	for (i = 0; i < n; i++)
		if (sp->gids[i].type != VFAB_GID_EMPTY && !memcmp(sp->gids[i].raw, m->d->dgid, 16))
			return true;
	return false;
}

/*
 * Rule: a receive is posted (SEND, WRITE with immediate); RNR if none. The
 * next receive WQE of the QP's RQ or SRQ is taken into rw.
 */
static enum vfab_resp_kind check_rq(const struct vfab_msg *m, struct rwqe *rw)
{
	struct vfab_qp_slot *d = m->d;
	struct vfab_srq_slot *srq = NULL;
	struct vfab_rq *rq = &d->rq;
	struct vfab_rwqe *w;
	enum vfab_resp_kind kind = VFAB_RESP_RNR;

	rw->pd = d->pd;
	if (d->srq >= 0) {
		srq = &m->r->srqs[d->srq];
		if (vfab_lock(&srq->lock))
			return VFAB_RESP_RNR;
		if (atomic_load(&srq->state) != VFAB_SLOT_USED)
			goto out;
		rq = &srq->rq;
		rw->pd = srq->pd;
	}
	w = vfab_rq_peek(m->r, rq);
	if (w) {
		rw->wr_id = w->wr_id;
		rw->num_sge = w->num_sge < VFAB_MAX_SRQ_SGE ? w->num_sge : VFAB_MAX_SRQ_SGE;
		memcpy(rw->sge, w + 1, rw->num_sge * sizeof(rw->sge[0]));
		vfab_rq_consume(rq);
		kind = VFAB_RESP_PASS;
		if (srq)
			vfab_srq_check_limit(m->r, srq);
	}
out:
	if (srq)
		vfab_unlock(&srq->lock);
	return kind;
}

/* Unpins the MRs of the first n receive buffers (scatter_list). */
static void unpin_list(struct vfab_mr_slot **pins, unsigned int n)
{
	for (unsigned int i = 0; i < n; i++)
		vfab_mr_unpin(pins[i]);
}

/*
 * The receive buffers as this process's view of the owner's memory. Each
 * buffer's MR is pinned before its check, as check_rkey pins a WRITE's
 * target: the caller unpins all n (unpin_list) after the copy, so an
 * ibv_dereg_mr waits for it. On an error nothing stays pinned.
 */
static enum ibv_wc_status scatter_list(const struct vfab_msg *m, const struct rwqe *rw,
				       struct iovec *iov, struct vfab_mr_slot **pins,
				       unsigned int *n, uint64_t *cap)
{
	uint32_t i;

	*n = 0;
	*cap = 0;
	for (i = 0; i < rw->num_sge; i++) {
		const struct vfab_sge *s = &rw->sge[i];
		struct vfab_mr_slot *mr;
		uint64_t va;
		enum ibv_wc_status st;

		if (!s->length)
			continue;
		mr = vfab_mr_lookup(m->r, s->lkey);
		if (mr)
			vfab_mr_pin(mr);
		st = vfab_mr_check_local(mr, s->lkey, m->dst_hca, rw->pd, s->addr, s->length,
					 IBV_ACCESS_LOCAL_WRITE, &va);
		if (st != IBV_WC_SUCCESS) {
			vfab_mr_unpin(mr);
			unpin_list(pins, *n);
			*n = 0;
			return st;
		}
		pins[*n] = mr;
		iov[*n].iov_base = (void *)(uintptr_t)va;
		iov[*n].iov_len = s->length;
		(*n)++;
		*cap += s->length;
	}
	return IBV_WC_SUCCESS;
}

/*
 * The L3 header a RoCE datagram arrived with, as mlx5 reports it for UD in
 * bits 25:24 of the CQE's flags_rqpn, which libmlx5 hands out as wc.sl (and
 * the kernel's mlx5 decodes into the network header type): UCX reads it to
 * find the destination GID in the GRH area (IPv4: only the last 20 bytes).
 */
enum roce_l3 { ROCE_L3_GRH = 0, ROCE_L3_IPV6 = 1, ROCE_L3_IPV4 = 2 };

static enum roce_l3 roce_l3_type(const struct vfab_msg *m)
{
	static const uint8_t v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (m->sgid_type != VFAB_GID_ROCE_V2)
		return ROCE_L3_GRH;
	return !memcmp(m->sgid, v4prefix, 12) && !memcmp(m->dgid, v4prefix, 12) ? ROCE_L3_IPV4
										: ROCE_L3_IPV6;
}

/* The receive CQE of message m into rw; true when the sender asked for a solicited event. */
static bool recv_cqe(const struct vfab_msg *m, const struct rwqe *rw, enum ibv_wc_status status,
		     enum ibv_wc_opcode opcode, uint32_t byte_len, uint32_t flags,
		     struct vfab_cqe *out)
{
	const struct vfab_swqe *w = m->wqe;
	bool imm = w->opcode == IBV_WR_SEND_WITH_IMM || w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;

	/* Filled in place: a chain builds one per message. */
	memset(out, 0, sizeof(*out));
	out->wr_id = rw->wr_id;
	out->status = status;
	out->opcode = opcode;
	out->vendor_err = status == IBV_WC_SUCCESS ? 0 : vfab_vendor_err(status);
	out->byte_len = byte_len;
	out->qp_num = m->d->qpn;
	out->src_qp = m->src_qpn;
	out->wc_flags = flags;
	out->pkey_index = (uint16_t)m->d->pkey_index;
	out->sl = m->d->qp_type == IBV_QPT_UD ? (uint8_t)roce_l3_type(m) : 0;
	if (status == IBV_WC_SUCCESS && imm) {
		out->wc_flags |= IBV_WC_WITH_IMM;
		out->imm_data = w->imm_data;
	}
	return (w->flags & IBV_SEND_SOLICITED) != 0;
}

static void push_recv(const struct vfab_msg *m, const struct rwqe *rw, enum ibv_wc_status status,
		      enum ibv_wc_opcode opcode, uint32_t byte_len, uint32_t flags)
{
	struct vfab_cqe e;
	bool solicited = recv_cqe(m, rw, status, opcode, byte_len, flags, &e);

	vfab_cq_push(m->r, m->d->recv_cq, &e, solicited);
}

static __attribute__((cold)) void nak(struct vfab_resp *res, enum ibv_wc_status status)
{
	res->kind = VFAB_RESP_NAK;
	res->status = status;
}

static bool owner_is_self(const struct vfab_msg *m)
{
	return m->d->owner.pid == m->self_pid;
}

static struct vfab_peer peer_of(const struct vfab_msg *m)
{
	struct vfab_peer p = {.pid = m->d->owner.pid,
			      .memfd = m->memfd,
			      .pidfd1 = m->pidfd1,
			      .self = owner_is_self(m),
			      .foreign = m->foreign};

	return p;
}

/*
 * Rule: R_Key, PD, range and access of the target of an RDMA request, as the
 * responder's HCA checks them; out is the range in the owner's memory. A
 * request of zero bytes carries no R_Key to check. NAK: *st says why.
 */
static enum vfab_resp_kind check_rkey(const struct vfab_msg *m, uint32_t access, uint64_t len,
				      struct iovec *out, enum ibv_wc_status *st,
				      struct vfab_mr_slot **pin)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_mr_slot *mr;
	uint64_t va;

	*pin = NULL;
	if (!len)
		return VFAB_RESP_PASS;
	/* Pinned before the check, unpinned after the copy: ibv_dereg_mr waits. */
	mr = vfab_mr_lookup(m->r, w->rkey);
	if (mr)
		vfab_mr_pin(mr);
	*st = vfab_mr_check_remote(mr, w->rkey, m->dst_hca, m->d->pd, w->remote_addr, len, access,
				   m->d->access, &va);
	if (*st != IBV_WC_SUCCESS) {
		vfab_mr_unpin(mr);
		return VFAB_RESP_NAK;
	}
	*pin = mr;
	out->iov_base = (void *)(uintptr_t)va;
	out->iov_len = len;
	return VFAB_RESP_PASS;
}

/* Rule: an atomic's target is 8-byte aligned; else an invalid request NAK. */
static enum vfab_resp_kind check_atomic(const struct vfab_msg *m)
{
	return vfab_atomic_check_remote(m->wqe->remote_addr) == IBV_WC_SUCCESS ? VFAB_RESP_PASS
									       : VFAB_RESP_NAK;
}

/* A remote access violation: the responder QP breaks, the requester hears why. */
static __attribute__((cold)) void access_error(const struct vfab_msg *m, enum ibv_wc_status st,
					       struct vfab_resp *res)
{
	nak(res, st);
	vfab_qp_slot_error(m->r, m->d, true, IBV_EVENT_QP_ACCESS_ERR);
}

/* A failed copy: the owner is gone (no answer) or the memory is. */
static __attribute__((cold)) void copy_failed(const struct vfab_msg *m, int rc,
					      struct vfab_resp *res)
{
	static atomic_bool told;

	if (rc == -EPERM && !atomic_exchange(&told, true))
		fprintf(
		    stderr,
		    "vfab: cannot copy into pid %d: permission denied. vfab moves bytes with "
		    "process_vm_writev/readv, which needs ptrace rights over the peer: both "
		    "processes must run as the same user (or this one as root). Such WRs get no "
		    "answer (IBV_WC_RETRY_EXC_ERR); see docs/TRUST.md\n",
		    (int)m->d->owner.pid);
	if (rc == -ESRCH || rc == -EPERM) {
		res->kind = VFAB_RESP_NO_ANSWER;
		return;
	}
	access_error(m, IBV_WC_REM_ACCESS_ERR, res);
}

static void resp_write(const struct vfab_msg *m, struct vfab_resp *res)
{
	bool imm = m->wqe->opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
	struct vfab_mr_slot *pin;
	enum ibv_wc_status st;
	struct iovec dst;
	struct rwqe rw;
	int rc;

	if (check_rkey(m, IBV_ACCESS_REMOTE_WRITE, m->len, &dst, &st, &pin) != VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	if (imm && check_rq(m, &rw) != VFAB_RESP_PASS) {
		vfab_mr_unpin(pin);
		res->kind = VFAB_RESP_RNR;
		return;
	}
	if (m->len) {
		struct vfab_peer p = peer_of(m);

		rc = vfab_dma_write(&p, m->copy_engines, m->len, m->liov, m->nliov, &dst, 1);
		vfab_mr_unpin(pin);
		if (rc) {
			copy_failed(m, rc, res);
			return;
		}
	}
	if (imm)
		push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM, (uint32_t)m->len, 0);
	vfab_count_event(&dst_port(m)->cnt.rx_write_requests, 1);
	res->kind = VFAB_RESP_ACK;
}

static void resp_send(const struct vfab_msg *m, struct vfab_resp *res)
{
	struct iovec dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE];
	struct vfab_peer p;
	enum ibv_wc_status st;
	unsigned int n;
	struct rwqe rw;
	uint64_t cap;
	int rc;

	if (check_rq(m, &rw) != VFAB_RESP_PASS) {
		res->kind = VFAB_RESP_RNR;
		return;
	}
	st = scatter_list(m, &rw, dst, pins, &n, &cap);
	if (st == IBV_WC_SUCCESS && cap < m->len) {
		unpin_list(pins, n);
		st = IBV_WC_LOC_LEN_ERR;
	}
	if (st != IBV_WC_SUCCESS) {
		/* The receiver sees its own error; the sender hears why. */
		push_recv(m, &rw, st, IBV_WC_RECV, 0, 0);
		nak(res, st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
		vfab_qp_slot_error(m->r, m->d, false, IBV_EVENT_QP_FATAL);
		return;
	}
	p = peer_of(m);
	rc = vfab_dma_write(&p, m->copy_engines, m->len, m->liov, m->nliov, dst, n);
	unpin_list(pins, n);
	if (rc) {
		copy_failed(m, rc, res);
		return;
	}
	push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)m->len, 0);
	res->kind = VFAB_RESP_ACK;
}

static void resp_read(const struct vfab_msg *m, struct vfab_resp *res)
{
	struct vfab_mr_slot *pin;
	enum ibv_wc_status st;
	struct iovec src;
	int rc;

	if (check_rkey(m, IBV_ACCESS_REMOTE_READ, m->len, &src, &st, &pin) != VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	if (m->len) {
		struct vfab_peer p = peer_of(m);

		rc = vfab_dma_read(&p, m->copy_engines, m->len, m->liov, m->nliov, &src, 1);
		vfab_mr_unpin(pin);
		if (rc) {
			copy_failed(m, rc, res);
			return;
		}
	}
	vfab_count_event(&dst_port(m)->cnt.rx_read_requests, 1);
	res->kind = VFAB_RESP_ACK;
}

/* Atomic with respect to every other vfab atomic: IBV_ATOMIC_HCA. */
static void resp_atomic(const struct vfab_msg *m, struct vfab_resp *res)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_peer p = peer_of(m);
	uint64_t orig = 0, val;
	struct iovec target, mine = {&orig, sizeof(orig)}, next = {&val, sizeof(val)};
	struct vfab_mr_slot *pin;
	enum ibv_wc_status st;
	int rc;

	if (check_atomic(m) != VFAB_RESP_PASS) {
		nak(res, IBV_WC_REM_INV_REQ_ERR);
		vfab_qp_slot_error(m->r, m->d, true, IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (check_rkey(m, IBV_ACCESS_REMOTE_ATOMIC, sizeof(uint64_t), &target, &st, &pin) !=
	    VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	if (vfab_lock(&m->r->atomic_lock)) {
		vfab_mr_unpin(pin);
		res->kind = VFAB_RESP_NO_ANSWER;
		return;
	}
	rc = vfab_xfer_read(&p, &mine, 1, &target, 1);
	if (!rc) {
		if (w->opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			val = orig + w->compare_add;
			rc = vfab_xfer_write(&p, &next, 1, &target, 1);
		} else if (orig == w->compare_add) {
			val = w->swap;
			rc = vfab_xfer_write(&p, &next, 1, &target, 1);
		}
	}
	vfab_unlock(&m->r->atomic_lock);
	vfab_mr_unpin(pin);
	if (rc) {
		copy_failed(m, rc, res);
		return;
	}
	vfab_count_event(&dst_port(m)->cnt.rx_atomic_requests, 1);
	res->atomic_orig = orig;
	res->kind = VFAB_RESP_ACK;
}

static bool receiving(uint32_t state)
{
	return state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD;
}

/*
 * Rule: the destination is an RC QP in a receiving state on the port the
 * message reached, connected back to the requester. Anything else never
 * answers (destination lock held).
 */
static enum vfab_resp_kind check_state(const struct vfab_msg *m)
{
	struct vfab_qp_slot *d = m->d;

	if (atomic_load(&d->state) != VFAB_SLOT_USED || !receiving(atomic_load(&d->qp_state)) ||
	    d->qp_type != IBV_QPT_RC || d->port != m->dst_port || !back_path_ok(m))
		return VFAB_RESP_NO_ANSWER;
	return VFAB_RESP_PASS;
}

/*
 * IBA 9.9.3.1: the half of the 24-bit PSN space before the expected PSN is
 * the duplicate region, the other half is ahead. psn != epsn here.
 */
static bool psn_behind(uint32_t psn, uint32_t epsn)
{
	return ((psn - epsn) & VFAB_PSN_MASK) >= (VFAB_PSN_MASK + 1) / 2;
}

/*
 * Rule: the request's PSN is the expected one (destination lock held); PASS
 * with *dup false. Ahead: a PSN sequence error NAK the requester cannot use,
 * so in effect no answer. Behind, with every packet of the message in the
 * duplicate region (*dup): a duplicate the requester believes unanswered.
 * Its SEND or WRITE already took effect (as far as the responder knows) and
 * is only acknowledged again, so the requester completes although nothing
 * arrives; a READ has no side effect and is executed again (PASS); an atomic
 * could only be answered from the saved result of the original, which vfab
 * does not keep (nor does rxe when it finds none): dropped. Either way the
 * expected PSN stays where it is.
 */
static enum vfab_resp_kind check_psn(const struct vfab_msg *m, bool *dup)
{
	uint32_t epsn = atomic_load(&m->d->epsn);
	uint32_t last = (m->psn + (m->npkts ? m->npkts - 1 : 0)) & VFAB_PSN_MASK;

	*dup = false;
	if (__builtin_expect(m->psn == epsn, 1))
		return VFAB_RESP_PASS;
	/* A message reaching from behind to epsn or past it is out of sequence there. */
	if (!psn_behind(m->psn, epsn) || !psn_behind(last, epsn))
		return VFAB_RESP_NO_ANSWER;
	*dup = true;
	switch (m->wqe->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return VFAB_RESP_ACK;
	case IBV_WR_RDMA_READ:
		return VFAB_RESP_PASS;
	default:
		return VFAB_RESP_NO_ANSWER;
	}
}

/* A request off the expected PSN, as check_psn judged it: counted, and a READ runs again. */
static __attribute__((cold)) void resp_psn_mismatch(const struct vfab_msg *m,
						    enum vfab_resp_kind kind, bool dup,
						    struct vfab_resp *res)
{
	struct vfab_port *p = dst_port(m);

	vfab_count_event(dup ? &p->cnt.duplicate_request : &p->cnt.out_of_sequence, 1);
	if (kind == VFAB_RESP_PASS)
		resp_read(m, res);
	else
		res->kind = kind;
}

void vfab_resp_rc(const struct vfab_msg *m, struct vfab_resp *res)
{
	struct vfab_qp_slot *d = m->d;
	enum vfab_resp_kind kind;
	bool dup;

	res->kind = VFAB_RESP_NO_ANSWER;
	if (vfab_lock(&d->lock))
		return;
	if (check_state(m) != VFAB_RESP_PASS)
		goto out;
	kind = check_psn(m, &dup);
	if (kind != VFAB_RESP_PASS || dup) {
		resp_psn_mismatch(m, kind, dup, res);
		goto out;
	}
	switch (m->wqe->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		resp_write(m, res);
		break;
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		resp_send(m, res);
		break;
	case IBV_WR_RDMA_READ:
		resp_read(m, res);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		resp_atomic(m, res);
		break;
	default:
		nak(res, IBV_WC_REM_INV_REQ_ERR);
		break;
	}
	if (res->kind == VFAB_RESP_ACK)
		atomic_store(&d->epsn, (m->psn + m->npkts) & VFAB_PSN_MASK);
	else if (res->kind == VFAB_RESP_RNR)
		res->rnr_timer = d->min_rnr_timer;
out:
	vfab_unlock(&d->lock);
}

/*
 * The receive queue a chain takes its WQEs from: the QP's own, or its SRQ,
 * held locked from the first message that needs a receive until they are
 * consumed (after the copy), since other QPs take from it too.
 */
/*
 * Remote segments of one chain: one per WRITE, one per receive buffer a
 * SEND fills; a chain that needs more stops there (the rest goes next).
 */
#define CHAIN_DST_MAX (4 * VFAB_CHAIN_MAX)

struct chain_rq {
	struct vfab_srq_slot *srq; /* locked, or NULL */
	struct vfab_rq *rq;	   /* NULL until a message needs a receive */
	uint32_t pd;
	uint32_t taken; /* WQEs the chain's messages so far will consume */
};

/* Rule check_rq for the next message of a chain: the next untaken WQE, copied into rw. */
static enum vfab_resp_kind chain_check_rq(const struct vfab_msg *m, struct chain_rq *c,
					  struct rwqe *rw)
{
	struct vfab_qp_slot *d = m->d;
	struct vfab_rwqe *w;

	if (!c->rq) {
		c->rq = &d->rq;
		c->pd = d->pd;
		if (d->srq >= 0) {
			struct vfab_srq_slot *srq = &m->r->srqs[d->srq];

			if (vfab_lock(&srq->lock)) {
				c->rq = NULL;
				return VFAB_RESP_RNR;
			}
			c->srq = srq;
			c->rq = &srq->rq;
			c->pd = srq->pd;
		}
	}
	if (c->srq && atomic_load(&c->srq->state) != VFAB_SLOT_USED)
		return VFAB_RESP_RNR;
	w = vfab_rq_peek_at(m->r, c->rq, c->taken);
	if (!w)
		return VFAB_RESP_RNR;
	rw->wr_id = w->wr_id;
	rw->pd = c->pd;
	rw->num_sge = w->num_sge < VFAB_MAX_SRQ_SGE ? w->num_sge : VFAB_MAX_SRQ_SGE;
	memcpy(rw->sge, w + 1, rw->num_sge * sizeof(rw->sge[0]));
	return VFAB_RESP_PASS;
}

/*
 * Where a SEND of a chain lands: its receive buffers, cut to the message's
 * length (the chain's one copy fills the segments in order, so each message
 * must take exactly its own bytes), each used buffer's MR pinned in pins[]
 * (parallel to dst) until the caller's copy is done. False, nothing
 * pinned, when a rule would not let it through (bad lkey, buffers too
 * small: the single path reports it) or the segments do not fit.
 */
static bool chain_scatter(const struct vfab_msg *m, const struct rwqe *rw, struct iovec *dst,
			  struct vfab_mr_slot **pins, unsigned int room, unsigned int *n)
{
	struct iovec iov[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *p[VFAB_MAX_SRQ_SGE];
	uint64_t cap, left = m->len;
	unsigned int i, k;

	*n = 0;
	if (scatter_list(m, rw, iov, p, &k, &cap) != IBV_WC_SUCCESS)
		return false;
	for (i = 0; i < k && left && cap >= m->len && *n < room; i++) {
		dst[*n] = iov[i];
		pins[*n] = p[i];
		p[i] = NULL;
		if (dst[*n].iov_len > left)
			dst[*n].iov_len = left;
		left -= dst[*n].iov_len;
		(*n)++;
	}
	unpin_list(p, k); /* the buffers the message does not reach */
	if (!left && cap >= m->len)
		return true;
	unpin_list(pins, *n);
	*n = 0;
	return false;
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
	bool solicited[VFAB_CHAIN_MAX];
	struct chain_rq c = {0};
	enum ibv_wc_status st;
	uint32_t k, i, writes = 0;
	unsigned int nd = 0, ns;
	struct rwqe rw;
	bool dup;

	if (n > VFAB_CHAIN_MAX || vfab_lock(&d->lock))
		return 0;
	if (check_state(&m[0]) != VFAB_RESP_PASS || check_psn(&m[0], &dup) != VFAB_RESP_PASS ||
	    dup) {
		k = 0;
		goto out;
	}
	for (k = 0; k < n; k++) {
		uint32_t op = m[k].wqe->opcode;

		if (op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM) {
			if (chain_check_rq(&m[k], &c, &rw) != VFAB_RESP_PASS ||
			    !chain_scatter(&m[k], &rw, dst + nd, rpins + nd, CHAIN_DST_MAX - nd,
					   &ns))
				break;
			nd += ns;
			wr_id[c.taken++] = rw.wr_id;
			continue;
		}
		if (nd == CHAIN_DST_MAX || check_rkey(&m[k], IBV_ACCESS_REMOTE_WRITE, m[k].len,
						      &dst[nd], &st, &pins[k]) != VFAB_RESP_PASS)
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
	    vfab_xfer_writev(d->owner.pid, m[0].liov,
			     (unsigned int)(m[k - 1].liov + m[k - 1].nliov - m[0].liov), dst, nd))
		k = 0;
	for (i = 0; i < n; i++)
		vfab_mr_unpin(pins[i]);
	unpin_list(rpins, nd);
	if (k && c.taken) {
		vfab_rq_consume_n(c.rq, c.taken);
		if (c.srq)
			vfab_srq_check_limit(m->r, c.srq);
	}
	if (c.srq)
		vfab_unlock(&c.srq->lock);
	if (!k)
		goto out;
	/* The bytes are there: now their receive completions, in order. */
	for (i = 0, c.taken = 0; i < k; i++) {
		uint32_t op = m[i].wqe->opcode;

		if (op == IBV_WR_RDMA_WRITE)
			continue;
		rw.wr_id = wr_id[c.taken];
		solicited[c.taken] = recv_cqe(
		    &m[i], &rw, IBV_WC_SUCCESS,
		    op == IBV_WR_RDMA_WRITE_WITH_IMM ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
		    (uint32_t)m[i].len, 0, &cqe[c.taken]);
		c.taken++;
	}
	if (c.taken)
		vfab_cq_push_n(m->r, d->recv_cq, cqe, c.taken, solicited);
	if (writes)
		vfab_count_event(&dst_port(m)->cnt.rx_write_requests, writes);
	atomic_store(&d->epsn, (m[k - 1].psn + m[k - 1].npkts) & VFAB_PSN_MASK);
out:
	vfab_unlock(&d->lock);
	return k;
}

static uint16_t ip_checksum(const uint8_t *hdr, size_t len)
{
	uint32_t sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/*
 * The 40 bytes a UD receiver finds in front of the payload: an IPv4 header
 * in the last 20 bytes for RoCE v2 over IPv4 (as mlx5 delivers it), else an
 * IPv6-style GRH.
 */
static void build_grh(const struct vfab_msg *m, uint8_t grh[VFAB_GRH_BYTES])
{
	enum roce_l3 l3 = roce_l3_type(m);
	bool v2 = l3 != ROCE_L3_GRH;
	/* BTH + DETH + payload + ICRC, plus UDP for RoCE v2. */
	uint32_t payload = 12 + 8 + (uint32_t)m->len + 4 + (v2 ? 8 : 0);
	uint32_t vtf;
	uint16_t csum;

	memset(grh, 0, VFAB_GRH_BYTES);
	if (l3 == ROCE_L3_IPV4) {
		uint8_t *ip = grh + 20;
		uint16_t tot = (uint16_t)(20 + payload);

		ip[0] = 0x45;
		ip[1] = m->traffic_class;
		ip[2] = (uint8_t)(tot >> 8);
		ip[3] = (uint8_t)tot;
		ip[6] = 0x40; /* don't fragment */
		ip[8] = m->hop_limit;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, m->sgid + 12, 4);
		memcpy(ip + 16, m->dgid + 12, 4);
		csum = ip_checksum(ip, 20);
		ip[10] = (uint8_t)(csum >> 8);
		ip[11] = (uint8_t)csum;
		return;
	}
	vtf = htonl(6u << 28 | (uint32_t)m->traffic_class << 20 | (m->flow_label & 0xfffff));
	memcpy(grh, &vtf, 4);
	grh[4] = (uint8_t)(payload >> 8);
	grh[5] = (uint8_t)payload;
	grh[6] = v2 ? 17 : 0x1b; /* UDP, or the IB BTH next header */
	grh[7] = m->hop_limit;
	memcpy(grh + 8, m->sgid, 16);
	memcpy(grh + 24, m->dgid, 16);
}

void vfab_resp_ud(const struct vfab_msg *m)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_qp_slot *d = m->d;
	struct iovec src[VFAB_XFER_MAX_IOV], dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE];
	uint8_t grh[VFAB_GRH_BYTES];
	struct vfab_peer p;
	enum ibv_wc_status st;
	uint32_t qkey;
	unsigned int n;
	struct rwqe rw;
	uint64_t cap;
	int rc;

	/* Privileged Q_Keys (high bit set) mean "use the sender QP's own". */
	qkey = (w->remote_qkey & VFAB_UD_QKEY_HIGH_BIT) ? m->src_qkey : w->remote_qkey;
	if (vfab_lock(&d->lock))
		return;
	if (atomic_load(&d->state) != VFAB_SLOT_USED || !receiving(atomic_load(&d->qp_state)) ||
	    d->qp_type != IBV_QPT_UD || d->port != m->dst_port || d->qkey != qkey)
		goto out;
	if (check_rq(m, &rw) != VFAB_RESP_PASS)
		goto out; /* no receive posted: the datagram is dropped */
	st = scatter_list(m, &rw, dst, pins, &n, &cap);
	if (st == IBV_WC_SUCCESS && cap < m->len + VFAB_GRH_BYTES) {
		unpin_list(pins, n);
		st = IBV_WC_LOC_LEN_ERR;
	}
	if (st != IBV_WC_SUCCESS) {
		push_recv(m, &rw, st, IBV_WC_RECV, 0, 0);
		goto out;
	}
	build_grh(m, grh);
	src[0].iov_base = grh;
	src[0].iov_len = sizeof(grh);
	memcpy(src + 1, m->liov, m->nliov * sizeof(src[0]));
	p = peer_of(m);
	rc = vfab_xfer_write(&p, src, m->nliov + 1, dst, n);
	unpin_list(pins, n);
	if (rc)
		goto out;
	push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)m->len + VFAB_GRH_BYTES,
		  IBV_WC_GRH);
out:
	vfab_unlock(&d->lock);
}
