/* SPDX-License-Identifier: MIT */
/*
 * The ibv_wr_* send API of ibv_qp_ex (perftest uses it on ConnectX-6): the
 * WRs built between wr_start and wr_complete are kept in a batch and posted
 * together by wr_complete, or dropped by wr_abort, like mlx5's doorbell.
 */
#include "provider/vfab_comp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define VERBS_QP_EX (1u << 1) /* libibverbs' verbs_qp comp_mask bit */

static struct vfab_qp *xqp(struct ibv_qp_ex *x)
{
	return (struct vfab_qp *)x;
}

static struct vfab_swqe *new_wqe(struct ibv_qp_ex *x, uint32_t opcode)
{
	struct vfab_qp *qp = xqp(x);
	struct vfab_swqe *w;

	if (qp->batch.err)
		return NULL;
	if (qp->batch.len == qp->batch.cap) {
		uint32_t cap = qp->batch.cap ? qp->batch.cap * 2 : 8;
		struct vfab_swqe *b = realloc(qp->batch.wqe, cap * sizeof(*b));

		if (!b) {
			qp->batch.err = ENOMEM;
			return NULL;
		}
		qp->batch.wqe = b;
		qp->batch.cap = cap;
	}
	w = &qp->batch.wqe[qp->batch.len++];
	w->wr_id = x->wr_id;
	w->flags = x->wr_flags;
	w->opcode = opcode;
	w->imm_data = 0;
	w->num_sge = 0;
	w->is_inline = false;
	w->inline_len = 0;
	w->ah = NULL;
	w->rkey = 0;
	w->remote_addr = 0;
	w->remote_srqn = VFAB_SLOT_NONE;
	w->mw = NULL;
	w->tm_fin = false;
	return w;
}

/* The WR that the wr_set_* calls complete. */
static struct vfab_swqe *cur_wqe(struct ibv_qp_ex *x)
{
	struct vfab_qp *qp = xqp(x);

	if (qp->batch.err)
		return NULL;
	if (!qp->batch.len) {
		qp->batch.err = EINVAL;
		return NULL;
	}
	return &qp->batch.wqe[qp->batch.len - 1];
}

static void wr_start(struct ibv_qp_ex *x)
{
	struct vfab_qp *qp = xqp(x);

	pthread_mutex_lock(&qp->sq.lock);
	qp->batch.len = 0;
	qp->batch.err = 0;
}

static int wr_complete(struct ibv_qp_ex *x)
{
	struct vfab_qp *qp = xqp(x);
	int rc = qp->batch.err;
	uint32_t i;

	vfab_comp_sync_state(qp);
	/* All or nothing: an invalid batch rings no doorbell. */
	for (i = 0; !rc && i < qp->batch.len; i++)
		rc = vfab_req_check_post(qp, &qp->batch.wqe[i], i);
	if (!rc && qp->batch.len)
		rc = vfab_req_submit(qp, qp->batch.wqe, qp->batch.len, &i);
	qp->batch.len = 0;
	pthread_mutex_unlock(&qp->sq.lock);
	return rc;
}

static void wr_abort(struct ibv_qp_ex *x)
{
	struct vfab_qp *qp = xqp(x);

	qp->batch.len = 0;
	pthread_mutex_unlock(&qp->sq.lock);
}

static void wr_send(struct ibv_qp_ex *x)
{
	new_wqe(x, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_SEND_WITH_IMM);

	if (w)
		w->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_SEND_WITH_INV);

	if (w)
		w->inv_rkey = rkey;
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_LOCAL_INV);

	if (w)
		w->inv_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *b)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_BIND_MW);

	if (!w)
		return;
	w->mw = mw;
	w->rkey = rkey;
	w->bind_mr = b->mr;
	w->bind_addr = b->addr;
	w->bind_len = b->length;
	w->bind_access = b->mw_access_flags;
}

static void set_rdma(struct vfab_swqe *w, uint32_t rkey, uint64_t addr)
{
	if (w) {
		w->rkey = rkey;
		w->remote_addr = addr;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	set_rdma(new_wqe(x, IBV_WR_RDMA_WRITE), rkey, addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_RDMA_WRITE_WITH_IMM);

	set_rdma(w, rkey, addr);
	if (w)
		w->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	set_rdma(new_wqe(x, IBV_WR_RDMA_READ), rkey, addr);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t compare,
			      uint64_t swap)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_ATOMIC_CMP_AND_SWP);

	set_rdma(w, rkey, addr);
	if (w) {
		w->compare_add = compare;
		w->swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add)
{
	struct vfab_swqe *w = new_wqe(x, IBV_WR_ATOMIC_FETCH_AND_ADD);

	set_rdma(w, rkey, addr);
	if (w)
		w->compare_add = add;
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct vfab_swqe *w = cur_wqe(x);

	if (w) {
		w->ah = ah ? to_vah(ah) : NULL;
		w->remote_qpn = qpn;
		w->remote_qkey = qkey;
	}
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t remote_srqn)
{
	struct vfab_swqe *w = cur_wqe(x);

	if (w)
		w->remote_srqn = remote_srqn;
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t n, const struct ibv_sge *list)
{
	struct vfab_swqe *w = cur_wqe(x);

	if (!w)
		return;
	if (n > xqp(x)->cap.max_send_sge) {
		xqp(x)->batch.err = ENOMEM;
		return;
	}
	memcpy(w->sge, list, n * sizeof(*list));
	w->num_sge = (uint32_t)n;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sge = {.addr = addr, .length = length, .lkey = lkey};

	wr_set_sge_list(x, 1, &sge);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t n, const struct ibv_data_buf *bufs)
{
	struct vfab_swqe *w = cur_wqe(x);
	size_t i, total = 0;

	if (!w)
		return;
	for (i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > xqp(x)->cap.max_inline_data) {
		xqp(x)->batch.err = ENOMEM;
		return;
	}
	w->inline_len = 0;
	for (i = 0; i < n; i++) {
		memcpy(w->inline_data + w->inline_len, bufs[i].addr, bufs[i].length);
		w->inline_len += (uint32_t)bufs[i].length;
	}
	w->is_inline = true;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf buf = {.addr = addr, .length = length};

	wr_set_inline_data_list(x, 1, &buf);
}

void vfab_qp_ex_init(struct vfab_qp *qp)
{
	struct ibv_qp_ex *x = &qp->vqp.qp_ex;

	qp->vqp.comp_mask |= VERBS_QP_EX;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	if (qp->vqp.qp.qp_type == IBV_QPT_UD)
		return;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_local_inv = wr_local_inv;
	x->wr_bind_mw = wr_bind_mw;
	if (qp->vqp.qp.qp_type == IBV_QPT_XRC_SEND)
		x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	if (vfab_qp_transport(qp->vqp.qp.qp_type) != IBV_QPT_RC)
		return;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
}

void vfab_qp_ex_fini(struct vfab_qp *qp)
{
	free(qp->batch.wqe);
	qp->batch.wqe = NULL;
	qp->batch.cap = 0;
}
