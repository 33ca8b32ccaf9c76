/* SPDX-License-Identifier: MIT */
/*
 * The single-message RC responder (see vfab_resp.h): the rules of
 * vfab_resp_check.h in the order the remote HCA applies them, then the
 * WRITE, SEND, READ or atomic itself. Everything here runs under the
 * destination QP slot's lock, so the destination's state, PSN and receive
 * queue cannot change under the check, and the bytes land before the
 * receive completion that announces them.
 */
#include "provider/vfab_resp.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_dma.h"
#include "provider/vfab_resp_check.h"
#include "provider/vfab_xfer.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>

static __attribute__((cold)) void nak(struct vfab_resp *res, enum ibv_wc_status status)
{
	res->kind = VFAB_RESP_NAK;
	res->status = status;
}

/*
 * A remote access violation: the responder QP breaks, the requester hears
 * why. An unreliable connection sends no NAK and keeps its QP: the message
 * is dropped, as rxe's responder drops it for UC.
 */
static __attribute__((cold)) void access_error(const struct vfab_msg *m, enum ibv_wc_status st,
					       struct vfab_resp *res)
{
	if (st == IBV_WC_REM_ACCESS_ERR)
		vfab_count_event(&vfab_resp_dst_cnt(m)->resp_remote_access_errors, 1);
	if (m->qp_type == IBV_QPT_UC) {
		res->kind = VFAB_RESP_NO_ANSWER;
		return;
	}
	nak(res, st);
	vfab_qp_slot_error(m->map, m->d, m->kq, true, IBV_EVENT_QP_ACCESS_ERR);
}

/* A failed copy: the owner is gone (no answer) or the memory is. */
static __attribute__((cold)) void copy_failed(const struct vfab_msg *m, int rc,
					      struct vfab_resp *res)
{
	if (rc == -EPERM)
		vfab_owner_refused(m->kq->owner.pid);
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
	struct vfab_resp_rwqe rw;
	int rc;

	if (vfab_resp_check_rkey(m, IBV_ACCESS_REMOTE_WRITE, m->len, &dst, &st, &pin) !=
	    VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	if (imm && vfab_resp_check_rq(m, &rw) != VFAB_RESP_PASS) {
		vfab_mr_unpin(pin);
		res->kind = VFAB_RESP_RNR;
		return;
	}
	if (m->len) {
		struct vfab_peer p = vfab_resp_peer_of(m);

		rc = vfab_dma_write(&p, m->copy_engines, m->len, m->liov, m->nliov, &dst, 1);
		vfab_mr_unpin(pin);
		if (rc) {
			copy_failed(m, rc, res);
			return;
		}
	}
	if (imm)
		vfab_resp_push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV_RDMA_WITH_IMM,
				    (uint32_t)m->len, 0);
	vfab_count_event(&vfab_resp_dst_cnt(m)->rx_write_requests, 1);
	res->kind = VFAB_RESP_ACK;
}

static void resp_send(const struct vfab_msg *m, struct vfab_resp *res)
{
	struct iovec dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE], **pin;
	struct vfab_cqe_scatter x;
	struct vfab_peer p;
	enum ibv_wc_status st;
	unsigned int n;
	struct vfab_resp_rwqe rw;
	uint64_t cap;
	bool in_cqe;
	int rc;

	if (vfab_resp_tm(m, res))
		return;
	if (vfab_resp_check_rq(m, &rw) != VFAB_RESP_PASS) {
		res->kind = VFAB_RESP_RNR;
		return;
	}
	/* Bytes that travel in the completion need no MR pinned against a copy. */
	in_cqe = vfab_resp_in_cqe(m);
	pin = in_cqe ? NULL : pins;
	st = vfab_resp_scatter_list(m, &rw, dst, pin, &n, &cap);
	if (st == IBV_WC_SUCCESS && in_cqe && cap >= m->len &&
	    !vfab_resp_scatter_cqe(m, dst, n, &x)) {
		/* The first buffer is too short for them: copied, as larger ones are. */
		in_cqe = false;
		pin = pins;
		st = vfab_resp_scatter_list(m, &rw, dst, pin, &n, &cap);
	}
	if (st == IBV_WC_SUCCESS && cap < m->len) {
		vfab_resp_unpin_list(pin, n);
		st = IBV_WC_LOC_LEN_ERR;
		vfab_count_event(&vfab_resp_dst_cnt(m)->resp_local_length_error, 1);
	}
	if (st != IBV_WC_SUCCESS) {
		/* The receiver sees its own error; the sender hears why. */
		vfab_resp_push_recv(m, &rw, st, IBV_WC_RECV, 0, 0);
		nak(res, st == IBV_WC_LOC_LEN_ERR ? IBV_WC_REM_INV_REQ_ERR : IBV_WC_REM_OP_ERR);
		vfab_qp_slot_error(m->map, m->d, m->kq, false, IBV_EVENT_QP_FATAL);
		return;
	}
	if (in_cqe) {
		vfab_resp_push_scattered(m, &rw, &x);
		res->kind = VFAB_RESP_ACK;
		return;
	}
	p = vfab_resp_peer_of(m);
	rc = vfab_dma_write(&p, m->copy_engines, m->len, m->liov, m->nliov, dst, n);
	vfab_resp_unpin_list(pins, n);
	if (rc) {
		copy_failed(m, rc, res);
		return;
	}
	vfab_resp_push_recv(m, &rw, IBV_WC_SUCCESS, IBV_WC_RECV, (uint32_t)m->len, 0);
	res->kind = VFAB_RESP_ACK;
}

/*
 * SEND with invalidate: the named key must be a type 2 window of this QP
 * (else an invalid request NAK, nothing received); it is invalidated once
 * the SEND is received, so an RNR retry finds it still bound.
 */
static void resp_send_inv(const struct vfab_msg *m, struct vfab_resp *res)
{
	uint32_t rkey = m->wqe->inv_rkey;

	if (!vfab_mw_remote_inv(m->map, m->dst_hca, m->kq, rkey, false)) {
		nak(res, IBV_WC_REM_INV_REQ_ERR);
		return;
	}
	resp_send(m, res);
	if (res->kind == VFAB_RESP_ACK)
		vfab_mw_remote_inv(m->map, m->dst_hca, m->kq, rkey, true);
}

static void resp_read(const struct vfab_msg *m, struct vfab_resp *res)
{
	struct vfab_mr_slot *pin;
	enum ibv_wc_status st;
	struct iovec src;
	int rc;

	if (vfab_resp_check_rkey(m, IBV_ACCESS_REMOTE_READ, m->len, &src, &st, &pin) !=
	    VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	if (m->len) {
		struct vfab_peer p = vfab_resp_peer_of(m);

		rc = vfab_dma_read(&p, m->copy_engines, m->len, m->liov, m->nliov, &src, 1);
		vfab_mr_unpin(pin);
		if (rc) {
			copy_failed(m, rc, res);
			return;
		}
	}
	vfab_count_event(&vfab_resp_dst_cnt(m)->rx_read_requests, 1);
	res->kind = VFAB_RESP_ACK;
}

/* Atomic with respect to every other vfab atomic on the same memory: IBV_ATOMIC_HCA. */
static void resp_atomic(const struct vfab_msg *m, struct vfab_resp *res)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_peer p = vfab_resp_peer_of(m);
	uint64_t orig = 0, val;
	struct iovec target, mine = {&orig, sizeof(orig)}, next = {&val, sizeof(val)};
	struct vfab_mr_slot *pin;
	pthread_mutex_t *lock;
	enum ibv_wc_status st;
	int rc;

	if (vfab_resp_check_atomic(m) != VFAB_RESP_PASS) {
		nak(res, IBV_WC_REM_INV_REQ_ERR);
		vfab_qp_slot_error(m->map, m->d, m->kq, true, IBV_EVENT_QP_REQ_ERR);
		return;
	}
	if (vfab_resp_check_rkey(m, IBV_ACCESS_REMOTE_ATOMIC, sizeof(uint64_t), &target, &st,
				 &pin) != VFAB_RESP_PASS) {
		access_error(m, st, res);
		return;
	}
	/* The target's shard's lock: every requester that may reach that MR takes it. */
	lock = &m->r->shard[vfab_shard_of_ptr(m->r, pin)].atomic_lock;
	if (vfab_lock(lock)) {
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
	vfab_unlock(lock);
	vfab_mr_unpin(pin);
	if (rc) {
		copy_failed(m, rc, res);
		return;
	}
	vfab_count_event(&vfab_resp_dst_cnt(m)->rx_atomic_requests, 1);
	res->atomic_orig = orig;
	res->kind = VFAB_RESP_ACK;
}

/* A request off the expected PSN, as vfab_resp_check_psn judged it: counted, and a READ runs again.
 */
static __attribute__((cold)) void resp_psn_mismatch(const struct vfab_msg *m,
						    enum vfab_resp_kind kind, bool dup,
						    struct vfab_resp *res)
{
	struct vfab_port_counters *c = vfab_resp_dst_cnt(m);

	vfab_count_event(dup ? &c->duplicate_request : &c->out_of_sequence, 1);
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
	res->tm_fin = false;
	/* The kernel would refuse the copy: the message never arrives, nothing there changes. */
	if (m->refused) {
		copy_failed(m, -EPERM, res);
		return;
	}
	if (vfab_lock(&d->lock))
		return;
	if (vfab_resp_check_state(m) != VFAB_RESP_PASS)
		goto out;
	kind = vfab_resp_check_psn(m, &dup);
	/*
	 * UC retransmits nothing: a PSN off the expected one means messages
	 * were lost, and the responder takes up the new message where it is.
	 */
	if (m->qp_type == IBV_QPT_UC && (kind != VFAB_RESP_PASS || dup)) {
		vfab_count_event(&vfab_resp_dst_cnt(m)->out_of_sequence, 1);
		kind = VFAB_RESP_PASS;
		dup = false;
	}
	if (kind != VFAB_RESP_PASS || dup) {
		resp_psn_mismatch(m, kind, dup, res);
		goto out;
	}
	/* XRC: the SRQ named is not one of the target's domain: an invalid request. */
	if (m->kq->qp_type == VFAB_QPT_XRC_RECV && !m->xsrq) {
		nak(res, IBV_WC_REM_INV_REQ_ERR);
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
	case IBV_WR_SEND_WITH_INV:
		resp_send_inv(m, res);
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
