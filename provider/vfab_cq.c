/* SPDX-License-Identifier: MIT */
/*
 * Completion queues: a ring in the region that requesters of any process
 * fill (vfab_cqe.c) and the owner polls without touching a lock shared with
 * them; both ibv_poll_cq and the extended ibv_start_poll API read it.
 */
#include "provider/vfab.h"
#include "provider/vfab_raw.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "provider/vfab_util.h"

/* Send-side CQEs carry the WR's send queue index in src_qp (see vfab_comp.h). */
static void retire_send(struct vfab_cq *cq, const struct vfab_cqe *e)
{
	struct vfab_qp *qp = atomic_load(&cq->ctx->map->qps[vfab_qpn_slot(e->qp_num)]);

	if (qp && qp->qpn == e->qp_num)
		atomic_store_explicit(&qp->sq.retired, e->src_qp, memory_order_release);
}

/*
 * A receive from a QP's own RQ or from its basic SRQ: one WQE of that ring
 * fewer outstanding (vfab_rq_own.polled). Polls of other CQs may count on
 * the same SRQ at once.
 */
static void retire_recv(struct vfab_cq *cq, const struct vfab_cqe *e)
{
	struct vfab_qp *qp = atomic_load(&cq->ctx->map->qps[vfab_qpn_slot(e->qp_num)]);
	struct vfab_rq_own *own;

	if (!qp || qp->qpn != e->qp_num)
		return;
	own = !qp->srq ? &qp->rq.own : !qp->srq->tm_ring ? &qp->srq->own : NULL;
	if (own)
		atomic_fetch_add_explicit(&own->polled, 1, memory_order_release);
}

/* A tag matching completion: its tag and app_ctx stand where P_Key, LID and SL would. */
static bool tm_entry(const struct vfab_cqe *e)
{
	return e->opcode >= IBV_WC_TM_ADD && e->opcode <= IBV_WC_TM_NO_TAG;
}

/* Counted without a locked instruction: threads polling at once may count one. */
static void count_poll(struct vfab_cq *cq)
{
	atomic_store_explicit(&cq->polls,
			      atomic_load_explicit(&cq->polls, memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

/*
 * A receive's bytes that came in the CQ (fabric/region.h "Scatter to CQE"):
 * into the buffer the responder checked, before the completion is
 * reported, as libmlx5 copies a ConnectX's inline scatter. The entry lies
 * in this user's shard; its length is bounded all the same.
 */
static void scatter(const struct vfab_cqe_scatter *x)
{
	uint32_t len = x->len;

	if (len)
		memcpy((void *)(uintptr_t)x->addr, x->data,
		       len < VFAB_CQE_SCATTER_BYTES ? len : VFAB_CQE_SCATTER_BYTES);
}

/*
 * After a poll that found nothing: a pause before the caller polls again.
 * The producer is another process's thread writing the very line the
 * poller spins on; a poller that reads it back-to-back takes the line away
 * from that writer mid-entry and delays the completion it waits for. A
 * ConnectX's writes come over PCIe and lose nothing to a spinning reader.
 */
static void empty_poll(void)
{
	vfab_cpu_relax();
}

/* Takes the next valid entry into *out; poll_lock held. */
static bool take_entry(struct vfab_cq *cq, struct vfab_cqe *out)
{
	uint64_t head = cq->head;
	struct vfab_cqe *e = &cq->ring[head & cq->mask];

	if (atomic_load_explicit(&e->seq, memory_order_acquire) != head + 1)
		return false;
	memcpy((char *)out + sizeof(out->seq), (char *)e + sizeof(e->seq),
	       sizeof(*out) - sizeof(out->seq));
	if (out->wc_flags & VFAB_WC_SCATTERED) {
		scatter(&cq->scat[head & cq->mask]);
		out->wc_flags &= ~VFAB_WC_SCATTERED;
	}
	/* The slot may be refilled once head moves past it. */
	cq->head = head + 1;
	atomic_store_explicit(&cq->s->head, head + 1, memory_order_release);
	if (out->opcode < IBV_WC_RECV) {
		retire_send(cq, out);
		out->src_qp = 0;
	} else if (out->opcode == IBV_WC_RECV || out->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		retire_recv(cq, out);
	}
	if (tm_entry(out)) {
		cq->cur_tm.tag = out->tm_tag;
		cq->cur_tm.priv = out->tm_priv;
		out->tm_tag = 0;
		out->tm_priv = 0;
	}
	return true;
}

int vfab_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct vfab_cq *cq = to_vcq(ibcq);
	struct vfab_cqe e;
	int i;

	/* A polling thread is the promptest place to deliver what is due. */
	count_poll(cq);
	vfab_engine_poll(&cq->s->armed);
	if (__builtin_expect(atomic_load_explicit(&cq->raw_feeds, memory_order_relaxed), 0))
		vfab_raw_poll(cq);
	pthread_spin_lock(&cq->poll_lock);
	for (i = 0; i < n && take_entry(cq, &e); i++) {
		struct ibv_wc *w = &wc[i];

		w->wr_id = e.wr_id;
		w->status = (enum ibv_wc_status)e.status;
		w->opcode = (enum ibv_wc_opcode)e.opcode;
		w->vendor_err = e.vendor_err;
		w->byte_len = e.byte_len;
		w->imm_data = e.imm_data;
		w->qp_num = e.qp_num;
		w->src_qp = e.src_qp;
		w->wc_flags = e.wc_flags;
		w->pkey_index = e.pkey_index;
		w->slid = e.slid;
		w->sl = e.sl;
		w->dlid_path_bits = e.dlid_path_bits;
	}
	pthread_spin_unlock(&cq->poll_lock);
	if (!i)
		empty_poll();
	return i;
}

int vfab_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct vfab_cq *cq = to_vcq(ibcq);

	atomic_store(&cq->s->armed, solicited_only ? 2u : 1u);
	vfab_engine_kick();
	return 0;
}

/* ---- extended polling: the current entry is copied out at start/next ---- */

static struct vfab_cq *ex_to_vcq(struct ibv_cq_ex *cq)
{
	return (struct vfab_cq *)cq;
}

static int ex_load(struct vfab_cq *cq)
{
	if (!take_entry(cq, &cq->cur))
		return ENOENT;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = (enum ibv_wc_status)cq->cur.status;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct vfab_cq *cq = ex_to_vcq(ibcq);
	int rc;

	if (attr->comp_mask)
		return EINVAL;
	count_poll(cq);
	vfab_engine_poll(&cq->s->armed);
	if (__builtin_expect(atomic_load_explicit(&cq->raw_feeds, memory_order_relaxed), 0))
		vfab_raw_poll(cq);
	pthread_spin_lock(&cq->poll_lock);
	rc = ex_load(cq);
	/* On ENOENT the caller does not call end_poll. */
	if (rc) {
		pthread_spin_unlock(&cq->poll_lock);
		empty_poll();
	}
	return rc;
}

static int ex_next_poll(struct ibv_cq_ex *ibcq)
{
	return ex_load(ex_to_vcq(ibcq));
}

static void ex_end_poll(struct ibv_cq_ex *ibcq)
{
	pthread_spin_unlock(&ex_to_vcq(ibcq)->poll_lock);
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *cq)
{
	return (enum ibv_wc_opcode)ex_to_vcq(cq)->cur.opcode;
}
static uint32_t ex_read_vendor_err(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.vendor_err;
}
static uint32_t ex_read_byte_len(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.byte_len;
}
static __be32 ex_read_imm_data(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.imm_data;
}
static uint32_t ex_read_qp_num(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.qp_num;
}
static uint32_t ex_read_src_qp(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.src_qp;
}
static unsigned int ex_read_wc_flags(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.wc_flags;
}
static uint32_t ex_read_slid(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.slid;
}
static uint8_t ex_read_sl(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.sl;
}
static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *cq)
{
	return ex_to_vcq(cq)->cur.dlid_path_bits;
}

static uint64_t ex_read_completion_ts(struct ibv_cq_ex *cq)
{
	return vfab_ts48_load(ex_to_vcq(cq)->cur.ts_lo48, vfab_device_clock_ns());
}

/* The device clock is CLOCK_MONOTONIC: wall-clock time is it plus the offset now. */
static uint64_t ex_read_completion_wallclock_ns(struct ibv_cq_ex *cq)
{
	uint64_t now = vfab_device_clock_ns();
	struct timespec real;

	clock_gettime(CLOCK_REALTIME, &real);
	return vfab_ts48_load(ex_to_vcq(cq)->cur.ts_lo48, now) +
	       ((uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec - now);
}

static void ex_read_tm_info(struct ibv_cq_ex *cq, struct ibv_wc_tm_info *tm)
{
	struct vfab_cq *c = ex_to_vcq(cq);

	if (tm_entry(&c->cur)) {
		*tm = c->cur_tm;
	} else {
		tm->tag = 0;
		tm->priv = 0;
	}
}

static void ex_init(struct vfab_cq *cq, uint64_t wc_flags)
{
	struct ibv_cq_ex *x = &cq->vcq.cq_ex;

	x->start_poll = ex_start_poll;
	x->next_poll = ex_next_poll;
	x->end_poll = ex_end_poll;
	x->read_opcode = ex_read_opcode;
	x->read_vendor_err = ex_read_vendor_err;
	if (wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		x->read_byte_len = ex_read_byte_len;
	if (wc_flags & IBV_WC_EX_WITH_IMM)
		x->read_imm_data = ex_read_imm_data;
	if (wc_flags & IBV_WC_EX_WITH_QP_NUM)
		x->read_qp_num = ex_read_qp_num;
	if (wc_flags & IBV_WC_EX_WITH_SRC_QP)
		x->read_src_qp = ex_read_src_qp;
	x->read_wc_flags = ex_read_wc_flags;
	if (wc_flags & IBV_WC_EX_WITH_SLID)
		x->read_slid = ex_read_slid;
	if (wc_flags & IBV_WC_EX_WITH_SL)
		x->read_sl = ex_read_sl;
	if (wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		x->read_dlid_path_bits = ex_read_dlid_path_bits;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		x->read_completion_ts = ex_read_completion_ts;
	if (wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		x->read_completion_wallclock_ns = ex_read_completion_wallclock_ns;
	if (wc_flags & IBV_WC_EX_WITH_TM_INFO)
		x->read_tm_info = ex_read_tm_info;
}

/*
 * The poller's own view of its ring, read once from the slot it just
 * filled (any user may rewrite the slot): false, nothing kept, when the
 * ring does not lie in the pool of this process's mapping.
 */
static bool own_ring(const struct vfab_context *ctx, const struct vfab_cq_slot *s,
		     struct vfab_cq *cq)
{
	uint64_t off = __atomic_load_n(&s->ring_off, __ATOMIC_RELAXED);
	uint32_t cap = __atomic_load_n(&s->cap, __ATOMIC_RELAXED);

	if (!cap || (cap & (cap - 1)) ||
	    !vfab_pool_holds(ctx->map_bytes, vfab_shard_of_ptr(ctx->r, s), off,
			     vfab_cq_ring_bytes(cap)))
		return false;
	cq->ring = vfab_at(ctx->r, off);
	cq->scat = vfab_cq_scatter_of(cq->ring, cap);
	cq->mask = cap - 1;
	return true;
}

static struct vfab_cq *cq_create(struct vfab_context *ctx, int cqe, struct ibv_comp_channel *ch,
				 int vector, bool stamp)
{
	struct vfab_cq_slot *s;
	struct vfab_cq *cq;
	uint32_t chan_id = 0;
	int slot, rc;

	if (cqe < 1 || cqe > VFAB_MAX_CQE || vector < 0 ||
	    vector >= ctx->vctx.context.num_comp_vectors) {
		rc = EINVAL;
		goto fail;
	}
	if (ch && vfab_channel_id(ch, &chan_id)) {
		rc = EINVAL; /* a channel of another provider */
		goto fail;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		rc = ENOMEM;
		goto fail;
	}
	/* One spare entry, as mlx5 rounds: cqe = capacity - 1. */
	slot = vfab_cq_alloc(ctx->r, &ctx->owner, (uint32_t)cqe + 1);
	if (slot < 0) {
		free(cq);
		rc = -slot;
		goto fail;
	}
	s = &ctx->r->cqs[slot];
	s->hca = ctx->hca_idx;
	s->user_cq = (uint64_t)(uintptr_t)&cq->vcq.cq;
	s->chan_pid = ctx->owner.pid;
	s->chan_id = chan_id;
	s->async_pid = ctx->owner.pid;
	s->async_id = ctx->async_id;
	s->stamp = stamp;
	rc = -vfab_ctl_seal(
	    ctx, VFAB_OBJ_CQ, (uint32_t)slot, "cookie=%" PRIu64 " chan=%u async=%u stamp=%u",
	    (uint64_t)(uintptr_t)&cq->vcq.cq, chan_id, ctx->async_id, (unsigned)stamp);
	if (!rc && !own_ring(ctx, s, cq))
		rc = EIO;
	if (rc) {
		vfab_ctl_unseal(ctx, VFAB_OBJ_CQ, (uint32_t)slot);
		vfab_cq_free(ctx->r, slot);
		free(cq);
		goto fail;
	}
	cq->ctx = ctx;
	cq->slot = slot;
	cq->s = s;
	pthread_spin_init(&cq->poll_lock, PTHREAD_PROCESS_PRIVATE);
	cq->vcq.cq.handle = (uint32_t)slot;
	cq->vcq.cq.cqe = (int)cq->mask;
	return cq;
fail:
	errno = rc;
	return NULL;
}

struct ibv_cq *vfab_create_cq(struct ibv_context *ibctx, int cqe, struct ibv_comp_channel *ch,
			      int vector)
{
	struct vfab_cq *cq = cq_create(to_vctx(ibctx), cqe, ch, vector, false);

	return cq ? &cq->vcq.cq : NULL;
}

struct ibv_cq_ex *vfab_create_cq_ex(struct ibv_context *ibctx, struct ibv_cq_init_attr_ex *attr)
{
	const uint64_t stamps =
	    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	const uint64_t supported = IBV_WC_STANDARD_FLAGS | stamps | IBV_WC_EX_WITH_TM_INFO;
	struct vfab_cq *cq;

	/* Tag matching info and timestamps share their place in an entry (fabric/region.h). */
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD) ||
	    attr->wc_flags & ~supported ||
	    ((attr->wc_flags & IBV_WC_EX_WITH_TM_INFO) && (attr->wc_flags & stamps))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* A CQ may name a parent domain of its context (its allocators: vfab_pd.c). */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ibctx ||
	     !((struct vfab_pd *)attr->parent_domain)->protection)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	cq = cq_create(to_vctx(ibctx), (int)attr->cqe, attr->channel, (int)attr->comp_vector,
		       (attr->wc_flags & stamps) != 0);
	if (!cq)
		return NULL;
	cq->wc_flags = attr->wc_flags;
	ex_init(cq, attr->wc_flags);
	return &cq->vcq.cq_ex;
}

/* ibv_resize_cq: at least cqe entries, as many as mlx5 rounds to (a power of two, minus one). */
int vfab_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct vfab_cq *cq = to_vcq(ibcq);
	int rc;

	if (cqe < 1 || cqe > VFAB_MAX_CQE)
		return EINVAL;
	pthread_spin_lock(&cq->poll_lock);
	rc = vfab_cq_resize(cq->ctx->r, cq->slot, (uint32_t)cqe + 1);
	if (!rc && !own_ring(cq->ctx, cq->s, cq))
		rc = -EIO;
	if (!rc)
		ibcq->cqe = (int)cq->mask;
	pthread_spin_unlock(&cq->poll_lock);
	return -rc;
}

int vfab_destroy_cq(struct ibv_cq *ibcq)
{
	struct vfab_cq *cq = to_vcq(ibcq);

	if (atomic_load(&cq->users))
		return EBUSY;
	vfab_ctl_unseal(cq->ctx, VFAB_OBJ_CQ, (uint32_t)cq->slot);
	vfab_cq_free(cq->ctx->r, cq->slot);
	pthread_spin_destroy(&cq->poll_lock);
	free(cq);
	return 0;
}
