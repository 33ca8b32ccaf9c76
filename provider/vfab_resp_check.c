/* SPDX-License-Identifier: MIT */
/*
 * The responder's rules and shared helpers (see vfab_resp_check.h). Pure
 * checks against the destination's slots under its lock: nothing here
 * delivers a message or answers the requester.
 */
#include "provider/vfab_resp_check.h"
#include "provider/vfab_mr_check.h"

#include <stdatomic.h>
#include <string.h>

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

/* RC and UC QPs meet their own kind, an XRC_SEND QP an XRC_RECV QP. */
static bool transport_ok(const struct vfab_msg *m)
{
	return m->qp_type == VFAB_QPT_XRC_SEND ? m->kq->qp_type == VFAB_QPT_XRC_RECV
					       : m->kq->qp_type == m->qp_type;
}

/*
 * Rule: the destination is a QP of the requester's transport (RC or UC) in
 * a receiving state on the port the message reached, connected back to the
 * requester. Anything else never answers (destination lock held).
 */
enum vfab_resp_kind vfab_resp_check_state(const struct vfab_msg *m)
{
	struct vfab_qp_slot *d = m->d;

	if (atomic_load(&d->state) != VFAB_SLOT_USED ||
	    !vfab_resp_receiving(atomic_load(&d->qp_state)) || !transport_ok(m) ||
	    d->port != m->dst_port || !back_path_ok(m))
		return VFAB_RESP_NO_ANSWER;
	return VFAB_RESP_PASS;
}

/*
 * Rule: a datagram lands only in a UD QP in a receiving state on the port
 * it reached whose Q_Key is the one the WR names (a privileged Q_Key, high
 * bit set, means the sender QP's own); anything else is dropped
 * (destination lock held).
 */
enum vfab_resp_kind vfab_resp_check_ud(const struct vfab_msg *m)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_qp_slot *d = m->d;
	uint32_t qkey = (w->remote_qkey & VFAB_UD_QKEY_HIGH_BIT) ? m->src_qkey : w->remote_qkey;

	if (atomic_load(&d->state) != VFAB_SLOT_USED ||
	    !vfab_resp_receiving(atomic_load(&d->qp_state)) || m->kq->qp_type != IBV_QPT_UD ||
	    d->port != m->dst_port || d->qkey != qkey)
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
enum vfab_resp_kind vfab_resp_check_psn(const struct vfab_msg *m, bool *dup)
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

/*
 * Rule: R_Key, PD, range and access of the target of an RDMA request, as the
 * responder's HCA checks them; out is the range in the owner's memory. A
 * request of zero bytes carries no R_Key to check. NAK: *st says why.
 */
enum vfab_resp_kind vfab_resp_check_rkey(const struct vfab_msg *m, uint32_t access, uint64_t len,
					 struct iovec *out, enum ibv_wc_status *st,
					 struct vfab_mr_slot **pin)
{
	const struct vfab_swqe *w = m->wqe;
	const struct vfab_mr_slot *mr, *key, *parent = NULL;
	struct vfab_mr_slot kk, kp;
	uint64_t va;

	*pin = NULL;
	if (!len)
		return VFAB_RESP_PASS;
	/*
	 * vfabd's records of the key, pinned before the check and unpinned
	 * after the copy: ibv_dereg_mr waits. Through a window, the MR pinned
	 * is the parent the window names (the bytes are its), and the check
	 * makes sure it is the one bound to. The bytes are the QP owner's only.
	 */
	key = mr = vfab_mr_find_pinned(m->r, m->map->k, w->rkey, &kk, pin);
	if (key && key->kind != VFAB_MKEY_MR) {
		vfab_mr_unpin(*pin);
		mr = parent = vfab_mr_find_pinned(m->r, m->map->k, key->parent_key, &kp, pin);
	}
	if (mr && !vfab_owner_same(&mr->owner, &m->kq->owner))
		key = parent = NULL;
	*st = vfab_key_check_remote(key, parent, w->rkey, m->dst_hca, vfab_resp_pd(m), m->kq->qpn,
				    w->remote_addr, len, access, m->d->access, &va);
	if (*st != IBV_WC_SUCCESS) {
		vfab_mr_unpin(*pin);
		*pin = NULL;
		return VFAB_RESP_NAK;
	}
	out->iov_base = (void *)(uintptr_t)va;
	out->iov_len = len;
	return VFAB_RESP_PASS;
}

/* Rule: an atomic's target is 8-byte aligned; else an invalid request NAK. */
enum vfab_resp_kind vfab_resp_check_atomic(const struct vfab_msg *m)
{
	return vfab_atomic_check_remote(m->wqe->remote_addr) == IBV_WC_SUCCESS ? VFAB_RESP_PASS
									       : VFAB_RESP_NAK;
}

struct vfab_rq *vfab_resp_rq_of(const struct vfab_msg *m, struct vfab_srq_slot **srq,
				const struct vfab_srq_slot **ksrq, uint32_t *pd)
{
	const struct vfab_qp_slot *kq = m->kq;

	*srq = NULL;
	*ksrq = NULL;
	*pd = kq->pd;
	if (kq->qp_type == VFAB_QPT_XRC_RECV) {
		if (!m->xsrq)
			return NULL;
		*ksrq = m->xsrq;
		*srq = &m->r->srqs[m->wqe->remote_srqn];
		*pd = m->xsrq->pd;
		return &(*srq)->rq;
	}
	if (kq->srq < 0)
		return &m->d->rq;
	/* Sealed, hence below the region table's top too. */
	*ksrq = vfab_ksrq(m->map->k, (uint32_t)kq->srq, &kq->owner);
	if (!*ksrq)
		return NULL;
	*srq = &m->r->srqs[kq->srq];
	*pd = (*ksrq)->pd;
	return &(*srq)->rq;
}

/*
 * Rule: a receive is posted (SEND, WRITE with immediate); RNR if none. The
 * next receive WQE of the QP's RQ or SRQ is taken into rw.
 */
enum vfab_resp_kind vfab_resp_check_rq(const struct vfab_msg *m, struct vfab_resp_rwqe *rw)
{
	const struct vfab_srq_slot *ksrq;
	struct vfab_srq_slot *srq;
	struct vfab_rq *rq = vfab_resp_rq_of(m, &srq, &ksrq, &rw->pd);
	enum vfab_resp_kind kind = VFAB_RESP_RNR;

	if (!rq || (srq && vfab_lock(&srq->lock)))
		return VFAB_RESP_RNR;
	if (srq && atomic_load(&srq->state) != VFAB_SLOT_USED)
		goto out;
	if (!vfab_rq_copy(m->map, rq, 0, &rw->wr_id, rw->sge, VFAB_MAX_SRQ_SGE, &rw->num_sge)) {
		vfab_rq_consume(rq);
		kind = VFAB_RESP_PASS;
		if (srq)
			vfab_srq_check_limit(m->r, srq, ksrq);
	}
out:
	if (srq)
		vfab_unlock(&srq->lock);
	return kind;
}

/* Unpins the MRs of the first n receive buffers (vfab_resp_scatter_list); NULL: none pinned. */
void vfab_resp_unpin_list(struct vfab_mr_slot **pins, unsigned int n)
{
	for (unsigned int i = 0; pins && i < n; i++)
		vfab_mr_unpin(pins[i]);
}

/*
 * The receive buffers as this process's view of the owner's memory. Each
 * buffer's MR is pinned before its check, as vfab_resp_check_rkey pins a WRITE's
 * target: the caller unpins all n (vfab_resp_unpin_list) after the copy, so an
 * ibv_dereg_mr waits for it. On an error nothing stays pinned. pins NULL: checked
 * only, for bytes that travel in the completion (no copy here to wait for).
 */
enum ibv_wc_status vfab_resp_scatter_list(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
					  struct iovec *iov, struct vfab_mr_slot **pins,
					  unsigned int *n, uint64_t *cap)
{
	uint32_t i;

	*n = 0;
	*cap = 0;
	for (i = 0; i < rw->num_sge; i++) {
		const struct vfab_sge *s = &rw->sge[i];
		struct vfab_mr_slot snap, *pin;
		const struct vfab_mr_slot *mr;
		uint64_t va;
		enum ibv_wc_status st;

		if (!s->length)
			continue;
		/* vfabd's record, pinned; the buffer is the QP owner's only. */
		pin = NULL;
		mr = pins ? vfab_mr_find_pinned(m->r, m->map->k, s->lkey, &snap, &pin)
			  : vfab_mr_find(m->r, m->map->k, s->lkey, &snap);
		if (mr && !vfab_owner_same(&mr->owner, &m->kq->owner))
			mr = NULL;
		st = vfab_mr_check_local(mr, s->lkey, m->dst_hca, rw->pd, s->addr, s->length,
					 IBV_ACCESS_LOCAL_WRITE, &va);
		if (st != IBV_WC_SUCCESS) {
			vfab_mr_unpin(pin);
			vfab_resp_unpin_list(pins, *n);
			*n = 0;
			return st;
		}
		if (pins)
			pins[*n] = pin;
		iov[*n].iov_base = (void *)(uintptr_t)va;
		iov[*n].iov_len = s->length;
		(*n)++;
		*cap += s->length;
	}
	return IBV_WC_SUCCESS;
}

/*
 * Whether this process may read m's payload with plain loads: inline data
 * (copied at posting), or MRs whose pages were there when registered. An
 * on-demand MR's page may be missing, and the copy's fault must become the
 * requester's error, as a system call's EFAULT does.
 */
static bool payload_loadable(const struct vfab_msg *m)
{
	const struct vfab_swqe *w = m->wqe;

	if (w->is_inline)
		return true;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct vfab_mr_slot *mr;

		if (!w->sge[i].length)
			continue;
		mr = vfab_kmr(m->map->k, w->sge[i].lkey);
		if (!mr || (mr->access & IBV_ACCESS_ON_DEMAND))
			return false;
	}
	return true;
}

bool vfab_resp_in_cqe(const struct vfab_msg *m)
{
	/* mlx5 scatters to the CQEs of RC and UC QPs (an SRQ's included), not of XRC targets. */
	return m->len && m->len <= VFAB_CQE_SCATTER_BYTES && m->kq->qp_type != VFAB_QPT_XRC_RECV &&
	       payload_loadable(m);
}

bool vfab_resp_scatter_cqe(const struct vfab_msg *m, const struct iovec *dst, unsigned int n,
			   struct vfab_cqe_scatter *x)
{
	uint32_t at = 0;

	if (!n || dst[0].iov_len < m->len)
		return false;
	x->addr = (uint64_t)(uintptr_t)dst[0].iov_base;
	x->len = (uint32_t)m->len;
	for (unsigned int i = 0; i < m->nliov && at < x->len; i++) {
		uint32_t c = (uint32_t)m->liov[i].iov_len;

		if (c > x->len - at)
			c = x->len - at;
		memcpy(x->data + at, m->liov[i].iov_base, c);
		at += c;
	}
	return true;
}

enum vfab_roce_l3 vfab_roce_l3_of(uint8_t sgid_type, const uint8_t *sgid, const uint8_t *dgid)
{
	static const uint8_t v4prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (sgid_type != VFAB_GID_ROCE_V2)
		return VFAB_ROCE_L3_GRH;
	return !memcmp(sgid, v4prefix, 12) && !memcmp(dgid, v4prefix, 12) ? VFAB_ROCE_L3_IPV4
									  : VFAB_ROCE_L3_IPV6;
}

enum vfab_roce_l3 vfab_resp_roce_l3(const struct vfab_msg *m)
{
	return vfab_roce_l3_of(m->sgid_type, m->sgid, m->dgid);
}

/* The receive CQE of message m into rw; true when the sender asked for a solicited event. */
bool vfab_resp_recv_cqe(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
			enum ibv_wc_status status, enum ibv_wc_opcode opcode, uint32_t byte_len,
			uint32_t flags, struct vfab_cqe *out)
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
	out->qp_num = m->kq->qpn;
	out->src_qp = m->src_qpn;
	out->wc_flags = flags;
	out->pkey_index = (uint16_t)m->d->pkey_index;
	out->sl = m->kq->qp_type == IBV_QPT_UD ? (uint8_t)vfab_resp_roce_l3(m) : 0;
	if (status == IBV_WC_SUCCESS && imm) {
		out->wc_flags |= IBV_WC_WITH_IMM;
		out->imm_data = w->imm_data;
	}
	/* ibv_wc's invalidated_rkey shares imm_data's place. */
	if (status == IBV_WC_SUCCESS && w->opcode == IBV_WR_SEND_WITH_INV) {
		out->wc_flags |= IBV_WC_WITH_INV;
		out->imm_data = w->inv_rkey;
	}
	return (w->flags & IBV_SEND_SOLICITED) != 0;
}
