/* SPDX-License-Identifier: MIT */
/*
 * The requester: post_send validates each work request like the HCA's send
 * engine, then executes it at once, in the caller's thread: local key
 * checks, destination lookup, the responder's checks and the single copy
 * (vfab_resp.c), completions. A request that must wait for a timer (RNR,
 * no answer) stays queued on the QP with every later one behind it, and the
 * engine thread (vfab_engine.c) resumes it when the timer expires.
 */
#include "provider/vfab_mr_check.h"
#include "provider/vfab_resp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum { EXEC_DONE, EXEC_WAIT };

/* Retry interval when the local ACK timeout is 0, which IB defines as infinite. */
#define INFINITE_TIMEOUT_RETRY_NS 100000000ull
#define RNR_RETRY_FOREVER 7

/* The IB RNR timer encodings (min_rnr_timer), in units of 10 us. */
static const uint32_t rnr_timer_10us[32] = {
    65536, 1,	 2,    3,    4,	   6,	  8,	 12,	16,    24,    32,
    48,	   64,	 96,   128,  192,  256,	  384,	 512,	768,   1024,  1536,
    2048,  3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
};

static uint64_t rnr_ns(uint32_t timer)
{
	return (uint64_t)rnr_timer_10us[timer & 31] * 10000ull;
}

/* Local ACK timeout: 4.096 us * 2^timeout. */
static uint64_t ack_timeout_ns(uint32_t timeout)
{
	return timeout ? 4096ull << timeout : INFINITE_TIMEOUT_RETRY_NS;
}

static enum ibv_wc_opcode wc_opcode(uint32_t wr_opcode)
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
	default:
		return IBV_WC_SEND;
	}
}

static bool is_atomic(uint32_t op)
{
	return op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD;
}

/*
 * Send CQEs carry the WR's send queue index in src_qp: poll_cq uses it to
 * free the send queue slots up to it, like hardware's WQE counter.
 */
void vfab_req_complete(struct vfab_qp *qp, const struct vfab_swqe *w, enum ibv_wc_status status,
		       uint32_t byte_len)
{
	struct vfab_cqe e;

	if (status == IBV_WC_SUCCESS && !qp->sq_sig_all && !(w->flags & IBV_SEND_SIGNALED))
		return;
	memset(&e, 0, sizeof(e));
	e.wr_id = w->wr_id;
	e.status = status;
	e.opcode = wc_opcode(w->opcode);
	e.vendor_err = vfab_vendor_err(status);
	e.byte_len = byte_len;
	e.qp_num = qp->qpn;
	e.src_qp = w->sq_index;
	vfab_cq_push(qp->ctx->r, qp->s->send_cq, &e, false);
}

/* A failed WR completes with its error (signaled or not) and breaks the QP. */
static int fail(struct vfab_qp *qp, const struct vfab_swqe *w, enum ibv_wc_status status)
{
	vfab_req_complete(qp, w, status, 0);
	vfab_qp_enter_error(qp);
	return EXEC_DONE;
}

/* The local segments, checked against this HCA's keys. */
static enum ibv_wc_status gather(struct vfab_qp *qp, const struct vfab_swqe *w, uint32_t need,
				 struct iovec *iov, unsigned int *n, uint64_t *len)
{
	struct vfab_context *ctx = qp->ctx;
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
		enum ibv_wc_status st;
		uint64_t va;

		if (!s->length)
			continue;
		st = vfab_mr_check_local(vfab_mr_lookup(ctx->r, s->lkey), s->lkey, ctx->hca_idx,
					 (uint32_t)qp->pd->slot, s->addr, s->length, need, &va);
		if (st != IBV_WC_SUCCESS)
			return st;
		iov[*n].iov_base = (void *)(uintptr_t)va;
		iov[*n].iov_len = s->length;
		(*n)++;
		*len += s->length;
	}
	return IBV_WC_SUCCESS;
}

static bool port_active(struct vfab_region *r, uint32_t hca, uint32_t port)
{
	return atomic_load(&r->hcas[hca].ports[port - 1].state) == IBV_PORT_ACTIVE;
}

/* The connected QP, from the cache while no GID table or slot changed under it. */
static struct vfab_qp_slot *resolve_dest(struct vfab_qp *qp)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	struct vfab_dest *dc = &qp->dest;
	const struct vfab_port *sp = &ctx->hca->ports[qp->s->port - 1];
	struct vfab_qp_slot *d;
	struct vfab_route rt;

	if (dc->valid) {
		d = &r->qps[dc->slot];
		if (atomic_load_explicit(&d->state, memory_order_acquire) == VFAB_SLOT_USED &&
		    d->qpn == dc->qpn && d->hca == dc->hca &&
		    atomic_load(&r->hcas[dc->hca].ports[dc->port - 1].gid_gen) == dc->port_gen &&
		    atomic_load(&sp->gid_gen) == dc->src_gen)
			return d;
		dc->valid = false;
	}
	if (vfab_route_resolve(r, ctx->hca_idx, qp->s->port, qp->attr.ah_attr.grh.sgid_index,
			       qp->attr.ah_attr.grh.dgid.raw, &rt))
		return NULL;
	d = vfab_qp_lookup(r, rt.hca, qp->attr.dest_qp_num);
	if (!d)
		return NULL;
	dc->hca = rt.hca;
	dc->port = rt.port;
	dc->port_gen = rt.port_gen;
	dc->src_gen = atomic_load(&sp->gid_gen);
	dc->slot = (uint32_t)(d - r->qps);
	dc->qpn = d->qpn;
	dc->valid = true;
	return d;
}

static uint32_t packets(uint64_t len, uint32_t mtu)
{
	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

/* Nothing came back: wait for the ACK timeout, then retry or give up. */
static int no_answer(struct vfab_qp *qp, struct vfab_swqe *w)
{
	struct vfab_port *p = &qp->ctx->hca->ports[qp->s->port - 1];

	atomic_fetch_add_explicit(&p->cnt.local_ack_timeout_err, 1, memory_order_relaxed);
	w->wait = VFAB_WAIT_TIMEOUT;
	w->due_ns = vfab_now_ns() + ack_timeout_ns(qp->attr.timeout);
	return EXEC_WAIT;
}

static int exec_rc(struct vfab_qp *qp, struct vfab_swqe *w)
{
	struct vfab_context *ctx = qp->ctx;
	struct iovec iov[VFAB_MAX_SGE + 1];
	bool reads = w->opcode == IBV_WR_RDMA_READ || is_atomic(w->opcode);
	struct vfab_resp res;
	struct vfab_msg m;
	enum ibv_wc_status st;
	unsigned int n;
	uint64_t len;

	st = gather(qp, w, reads ? IBV_ACCESS_LOCAL_WRITE : 0, iov, &n, &len);
	if (st == IBV_WC_SUCCESS && is_atomic(w->opcode))
		st = vfab_atomic_check_local(len);
	if (st == IBV_WC_SUCCESS && len > VFAB_MAX_MSG_SZ)
		st = IBV_WC_LOC_LEN_ERR;
	if (st != IBV_WC_SUCCESS)
		return fail(qp, w, st);

	memset(&m, 0, sizeof(m));
	m.d = resolve_dest(qp);
	if (!m.d || !port_active(ctx->r, ctx->hca_idx, qp->s->port) ||
	    !port_active(ctx->r, qp->dest.hca, qp->dest.port))
		return no_answer(qp, w);
	m.r = ctx->r;
	m.wqe = w;
	m.self_pid = ctx->owner.pid;
	m.src_hca = ctx->hca_idx;
	m.src_port = qp->s->port;
	m.src_qpn = qp->qpn;
	m.liov = iov;
	m.nliov = n;
	m.len = len;
	m.psn = qp->sq_psn;
	m.npkts = is_atomic(w->opcode) ? 1 : packets(len, qp->mtu_bytes);
	m.dst_hca = qp->dest.hca;
	m.dst_port = qp->dest.port;
	vfab_resp_rc(&m, &res);

	switch (res.kind) {
	case VFAB_RESP_ACK:
		qp->sq_psn = (qp->sq_psn + m.npkts) & VFAB_PSN_MASK;
		if (is_atomic(w->opcode))
			memcpy(iov[0].iov_base, &res.atomic_orig, sizeof(res.atomic_orig));
		if (reads) {
			vfab_count_traffic(m.r, m.src_hca, m.src_port, m.dst_hca, m.dst_port, 0, 1);
			vfab_count_traffic(m.r, m.dst_hca, m.dst_port, m.src_hca, m.src_port, len,
					   m.npkts);
		} else {
			vfab_count_traffic(m.r, m.src_hca, m.src_port, m.dst_hca, m.dst_port, len,
					   m.npkts);
		}
		vfab_req_complete(qp, w, IBV_WC_SUCCESS, (uint32_t)len);
		return EXEC_DONE;
	case VFAB_RESP_RNR:
		if (w->rnr_left == 0) {
			atomic_fetch_add_explicit(
			    &ctx->hca->ports[qp->s->port - 1].cnt.rnr_nak_retry_err, 1,
			    memory_order_relaxed);
			return fail(qp, w, IBV_WC_RNR_RETRY_EXC_ERR);
		}
		if (w->rnr_left != RNR_RETRY_FOREVER)
			w->rnr_left--;
		w->wait = VFAB_WAIT_RNR;
		w->due_ns = vfab_now_ns() + rnr_ns(res.rnr_timer);
		return EXEC_WAIT;
	case VFAB_RESP_NAK:
		return fail(qp, w, res.status);
	default:
		return no_answer(qp, w);
	}
}

/* UD: no acknowledgement, so whatever the network does, the send succeeds. */
static int exec_ud(struct vfab_qp *qp, struct vfab_swqe *w)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	struct iovec iov[VFAB_MAX_SGE + 1];
	const struct vfab_gid *sg;
	enum ibv_wc_status st;
	struct vfab_msg m;
	uint32_t h, p;
	uint8_t type;
	unsigned int n;
	uint64_t len;

	st = gather(qp, w, 0, iov, &n, &len);
	if (st == IBV_WC_SUCCESS && len > qp->mtu_bytes)
		st = IBV_WC_LOC_LEN_ERR;
	if (st != IBV_WC_SUCCESS)
		return fail(qp, w, st);
	sg = vfab_port_gid(&ctx->hca->ports[w->ah->port - 1], w->ah->sgid_index);
	if (sg && !vfab_ah_route(w->ah, r, ctx->hca_idx, &h, &p, &type) &&
	    port_active(r, ctx->hca_idx, w->ah->port) && port_active(r, h, p)) {
		memset(&m, 0, sizeof(m));
		m.d = vfab_qp_lookup(r, h, w->remote_qpn);
		if (m.d) {
			m.r = r;
			m.wqe = w;
			m.self_pid = ctx->owner.pid;
			m.src_hca = ctx->hca_idx;
			m.src_port = w->ah->port;
			m.src_qpn = qp->qpn;
			m.src_qkey = qp->attr.qkey;
			m.liov = iov;
			m.nliov = n;
			m.len = len;
			m.sgid = sg->raw;
			m.dgid = w->ah->dgid;
			m.sgid_type = type;
			m.traffic_class = w->ah->traffic_class;
			m.hop_limit = w->ah->hop_limit;
			m.flow_label = w->ah->flow_label;
			m.dst_hca = h;
			m.dst_port = p;
			vfab_resp_ud(&m);
		}
		vfab_count_traffic(r, ctx->hca_idx, w->ah->port, h, p, len, 1);
	}
	qp->sq_psn = (qp->sq_psn + 1) & VFAB_PSN_MASK;
	vfab_req_complete(qp, w, IBV_WC_SUCCESS, (uint32_t)len);
	return EXEC_DONE;
}

static int execute(struct vfab_qp *qp, struct vfab_swqe *w)
{
	w->wait = VFAB_WAIT_NONE;
	w->due_ns = 0;
	return qp->vqp.qp.qp_type == IBV_QPT_UD ? exec_ud(qp, w) : exec_rc(qp, w);
}

/* Keeps a copy of a WR that must wait (or waits behind one) at the tail. */
static int enqueue(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	struct vfab_swqe *c = malloc(sizeof(*c));

	if (!c)
		return ENOMEM;
	memcpy(c, w, sizeof(*c));
	c->next = NULL;
	if (qp->pend_tail)
		qp->pend_tail->next = c;
	else
		qp->pend_head = c;
	qp->pend_tail = c;
	return 0;
}

static void push_front(struct vfab_qp *qp, struct vfab_swqe *w)
{
	w->next = qp->pend_head;
	qp->pend_head = w;
	if (!qp->pend_tail)
		qp->pend_tail = w;
}

static struct vfab_swqe *pop_head(struct vfab_qp *qp)
{
	struct vfab_swqe *w = qp->pend_head;

	if (w) {
		qp->pend_head = w->next;
		if (!qp->pend_head)
			qp->pend_tail = NULL;
	}
	return w;
}

void vfab_req_flush_pending(struct vfab_qp *qp)
{
	struct vfab_swqe *w;

	while ((w = pop_head(qp))) {
		vfab_req_complete(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		free(w);
	}
}

/* Runs due waiting WRs (sq_lock held); returns when the next is due, 0 if none. */
static uint64_t progress_locked(struct vfab_qp *qp)
{
	uint64_t now = vfab_now_ns();
	struct vfab_swqe *w;

	vfab_qp_sync_state(qp);
	while (qp->pend_head) {
		if (qp->pend_head->due_ns > now)
			return qp->pend_head->due_ns;
		w = pop_head(qp);
		if (qp->state == IBV_QPS_ERR) {
			vfab_req_complete(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
			free(w);
			continue;
		}
		/* The ACK timer of the last attempt expired. */
		if (w->wait == VFAB_WAIT_TIMEOUT && qp->attr.timeout) {
			if (!w->retries_left) {
				fail(qp, w, IBV_WC_RETRY_EXC_ERR);
				free(w);
				continue;
			}
			w->retries_left--;
		}
		if (execute(qp, w) == EXEC_WAIT) {
			push_front(qp, w);
			return w->due_ns;
		}
		free(w);
		now = vfab_now_ns();
	}
	return 0;
}

void vfab_req_progress(struct vfab_qp *qp)
{
	uint64_t due;

	pthread_mutex_lock(&qp->sq_lock);
	due = progress_locked(qp);
	if (due)
		vfab_engine_schedule(qp, due);
	pthread_mutex_unlock(&qp->sq_lock);
}

/* What post_send refuses outright rather than completing with an error. */
int vfab_req_check_post(struct vfab_qp *qp, const struct vfab_swqe *w)
{
	bool ud = qp->vqp.qp.qp_type == IBV_QPT_UD;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_ERR)
		return EINVAL;
	switch (w->opcode) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (ud)
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
	if ((uint32_t)(qp->sq_posted -
		       atomic_load_explicit(&qp->sq_retired, memory_order_acquire)) >=
	    qp->cap.max_send_wr)
		return ENOMEM;
	return 0;
}

int vfab_req_submit(struct vfab_qp *qp, struct vfab_swqe *w)
{
	int rc;

	w->sq_index = ++qp->sq_posted;
	w->retries_left = (uint8_t)qp->attr.retry_cnt;
	w->rnr_left = (uint8_t)qp->attr.rnr_retry;
	w->wait = VFAB_WAIT_NONE;
	w->due_ns = 0;
	if (qp->state == IBV_QPS_ERR) {
		vfab_req_complete(qp, w, IBV_WC_WR_FLUSH_ERR, 0);
		return 0;
	}
	/* RC order: nothing overtakes a WR that waits. */
	if (qp->pend_head) {
		rc = enqueue(qp, w);
		if (rc)
			qp->sq_posted--;
		return rc;
	}
	if (execute(qp, w) == EXEC_WAIT) {
		if (enqueue(qp, w)) {
			fail(qp, w, IBV_WC_LOC_QP_OP_ERR);
			return 0;
		}
		vfab_engine_schedule(qp, w->due_ns);
	}
	return 0;
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
	w->imm_data = wr->imm_data;
	w->num_sge = (uint32_t)wr->num_sge;
	w->ah = NULL;
	w->is_inline = false;
	w->inline_len = 0;
	switch (wr->opcode) {
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
	struct vfab_swqe w;
	int rc = 0;

	*bad = NULL;
	pthread_mutex_lock(&qp->sq_lock);
	vfab_qp_sync_state(qp);
	if (qp->pend_head && qp->pend_head->due_ns <= vfab_now_ns()) {
		uint64_t due = progress_locked(qp);

		if (due)
			vfab_engine_schedule(qp, due);
	}
	for (; wr; wr = wr->next) {
		rc = from_wr(qp, wr, &w);
		if (!rc)
			rc = vfab_req_check_post(qp, &w);
		if (!rc)
			rc = vfab_req_submit(qp, &w);
		if (rc) {
			*bad = wr;
			break;
		}
	}
	pthread_mutex_unlock(&qp->sq_lock);
	return rc;
}
