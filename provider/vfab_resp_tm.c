/* SPDX-License-Identifier: MIT */
/*
 * Tag matching at the responder, as a ConnectX's TM-SRQ does it: a SEND to
 * an RC QP whose SRQ is a tag matching SRQ begins with a tag matching header
 * (struct ibv_tmh). EAGER: the oldest tagged buffer of the SRQ whose masked
 * tag is the message's (and whose phase is the HW's unexpected count) takes
 * the payload after the header, completing IBV_WC_TM_RECV with TM_MATCH and
 * TM_DATA_VALID. RNDV: the header is followed by a rendezvous header
 * (struct ibv_rvh); the matched buffer completes TM_MATCH at once, the
 * responder reads the sender's buffer (its key checked as a READ's), the
 * buffer completes TM_DATA_VALID and the sender receives a FIN. A message
 * no buffer takes is unexpected: the SRQ's next ordinary receive takes it
 * whole, IBV_WC_TM_RECV without flags, and the unexpected count goes up;
 * NO_TAG messages land the same way as IBV_WC_TM_NO_TAG. Every completion
 * goes to the SRQ's CQ. Runs under the destination QP's lock (vfab_resp.c);
 * the SRQ's lock guards its tag table.
 */
#include "provider/vfab_resp.h"
#include "provider/vfab_mr_check.h"
#include "provider/vfab_resp_check.h"
#include "provider/vfab_xfer.h"

#include <endian.h>
#include <infiniband/tm_types.h>
#include <string.h>

#define TMH_BYTES sizeof(struct ibv_tmh)
#define RVH_BYTES sizeof(struct ibv_rvh)

/* The tag table as read once from the region, checked before it is touched. */
struct tm_geo {
	uint64_t off;
	uint32_t cap, wqe_size, max_sge;
};

static bool tm_geo(const struct vfab_msg *m, const struct vfab_srq_slot *s,
		   const struct vfab_srq_slot *ks, struct tm_geo *g)
{
	g->off = __atomic_load_n(&s->tm.ring_off, __ATOMIC_RELAXED);
	g->cap = __atomic_load_n(&s->tm.cap, __ATOMIC_RELAXED);
	g->wqe_size = __atomic_load_n(&s->tm.wqe_size, __ATOMIC_RELAXED);
	g->max_sge = __atomic_load_n(&s->tm.max_sge, __ATOMIC_RELAXED);
	return g->off && g->cap && g->cap <= ks->tm_tags && g->max_sge <= VFAB_MAX_SRQ_SGE &&
	       g->wqe_size >= sizeof(struct vfab_tm_tag) + g->max_sge * sizeof(struct vfab_sge) &&
	       vfab_pool_holds(m->map->map_bytes, vfab_shard_of_ptr(m->r, s), g->off,
			       (uint64_t)g->cap * g->wqe_size);
}

static struct vfab_tm_tag *tm_at(const struct vfab_msg *m, const struct tm_geo *g, uint32_t i)
{
	return vfab_at(m->r, g->off + (uint64_t)i * g->wqe_size);
}

/* The first len bytes of the message (its headers) into out; how many there were. */
static size_t msg_head(const struct vfab_msg *m, uint8_t *out, size_t len)
{
	size_t got = 0;

	for (unsigned int i = 0; i < m->nliov && got < len; i++) {
		size_t n = m->liov[i].iov_len < len - got ? m->liov[i].iov_len : len - got;

		memcpy(out + got, m->liov[i].iov_base, n);
		got += n;
	}
	return got;
}

/* The message's segments less its first skip bytes, into out; their count. */
static unsigned int msg_tail(const struct vfab_msg *m, size_t skip, struct iovec *out)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < m->nliov; i++) {
		struct iovec v = m->liov[i];

		if (skip >= v.iov_len) {
			skip -= v.iov_len;
			continue;
		}
		v.iov_base = (char *)v.iov_base + skip;
		v.iov_len -= skip;
		skip = 0;
		out[n++] = v;
	}
	return n;
}

/* A completion of the TM SRQ (its CQ, as vfabd sealed it). */
static void tm_push(const struct vfab_msg *m, const struct vfab_srq_slot *ks, uint64_t wr_id,
		    enum ibv_wc_status st, enum ibv_wc_opcode op, uint32_t len, uint32_t flags,
		    uint64_t tag, uint32_t app_ctx)
{
	const struct vfab_swqe *w = m->wqe;
	struct vfab_cqe e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = st;
	e.opcode = op;
	e.vendor_err = st == IBV_WC_SUCCESS ? 0 : vfab_vendor_err(st);
	e.byte_len = len;
	e.qp_num = m->kq->qpn;
	e.wc_flags = flags;
	if (st == IBV_WC_SUCCESS && w->opcode == IBV_WR_SEND_WITH_IMM) {
		e.wc_flags |= IBV_WC_WITH_IMM;
		e.imm_data = w->imm_data;
	}
	e.tm_tag = tag;
	e.tm_priv = app_ctx;
	vfab_cq_push(m->map, ks->cq, &m->kq->owner, &e, (w->flags & IBV_SEND_SOLICITED) != 0);
}

/* Copies src (n segments, len bytes) into receive rw of the destination; a status. */
static enum ibv_wc_status land(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
			       const struct iovec *src, unsigned int n, uint64_t len)
{
	struct iovec dst[VFAB_MAX_SRQ_SGE];
	struct vfab_mr_slot *pins[VFAB_MAX_SRQ_SGE];
	struct vfab_peer p = vfab_resp_peer_of(m);
	enum ibv_wc_status st;
	unsigned int nd;
	uint64_t cap;

	st = vfab_resp_scatter_list(m, rw, dst, pins, &nd, &cap);
	if (st != IBV_WC_SUCCESS)
		return st;
	if (cap < len)
		st = IBV_WC_LOC_LEN_ERR;
	else if (len && vfab_xfer_write(&p, src, n, dst, nd))
		st = IBV_WC_LOC_PROT_ERR;
	vfab_resp_unpin_list(pins, nd);
	return st;
}

/* Unexpected or untagged: the SRQ's next ordinary receive takes the message whole. */
static void land_ordinary(const struct vfab_msg *m, const struct vfab_srq_slot *ks,
			  struct vfab_srq_slot *s, enum ibv_wc_opcode op, struct vfab_resp *res)
{
	struct vfab_resp_rwqe rw;
	enum ibv_wc_status st;

	if (vfab_resp_check_rq(m, &rw) != VFAB_RESP_PASS) {
		res->kind = VFAB_RESP_RNR;
		return;
	}
	st = land(m, &rw, m->liov, m->nliov, m->len);
	tm_push(m, ks, rw.wr_id, st, op, st == IBV_WC_SUCCESS ? (uint32_t)m->len : 0, 0, 0, 0);
	if (op == IBV_WC_TM_RECV && st == IBV_WC_SUCCESS)
		atomic_fetch_add(&s->tm_unexpected, 1);
	res->kind = VFAB_RESP_ACK;
}

/*
 * The oldest tagged buffer that takes tag, consumed into rw (SRQ locked);
 * false when none does.
 */
static bool take_tag(const struct vfab_msg *m, struct vfab_srq_slot *s,
		     const struct vfab_srq_slot *ks, uint64_t tag, struct vfab_resp_rwqe *rw)
{
	uint32_t phase = atomic_load(&s->tm_unexpected);
	struct vfab_tm_tag *best = NULL;
	struct tm_geo g;

	if (!tm_geo(m, s, ks, &g))
		return false;
	for (uint32_t i = 0; i < g.cap; i++) {
		struct vfab_tm_tag *t = tm_at(m, &g, i);

		if (t->valid && t->phase == phase && !((t->tag ^ tag) & t->mask) &&
		    (!best || t->seq < best->seq))
			best = t;
	}
	if (!best)
		return false;
	rw->wr_id = best->wr_id;
	rw->num_sge = best->num_sge < g.max_sge ? best->num_sge : g.max_sge;
	memcpy(rw->sge, best + 1, rw->num_sge * sizeof(rw->sge[0]));
	rw->pd = ks->pd;
	best->valid = 0;
	return true;
}

/*
 * RNDV: the matched buffer reads the sender's (its key as a READ's at the
 * sender's HCA, through the sender QP's PD and access); a status.
 */
static enum ibv_wc_status rndv_read(const struct vfab_msg *m, const uint8_t *hdr,
				    const struct vfab_resp_rwqe *rw, uint32_t *len)
{
	struct ibv_rvh rvh;
	struct vfab_qp_slot skq;
	struct vfab_mr_slot snap, *pin;
	const struct vfab_mr_slot *mr;
	enum ibv_wc_status st;
	struct iovec src;
	uint64_t va;

	memcpy(&rvh, hdr + TMH_BYTES, sizeof(rvh));
	*len = be32toh(rvh.len);
	const struct vfab_qp_slot *sd = vfab_qp_lookup(m->r, m->src_hca, m->src_qpn);

	/* The sender QP's PD as vfabd sealed it; its access flags as its modify_qp set them. */
	if (!sd || !vfab_kqp_copy(m->map->k, m->src_hca, m->src_qpn, &skq))
		return IBV_WC_TM_RNDV_INCOMPLETE;
	mr = vfab_mr_find_pinned(m->r, m->map->k, be32toh(rvh.rkey), &snap, &pin);
	if (mr && !vfab_owner_same(&mr->owner, &skq.owner))
		mr = NULL;
	st = vfab_mr_check_remote(mr, be32toh(rvh.rkey), m->src_hca, skq.pd, be64toh(rvh.va), *len,
				  IBV_ACCESS_REMOTE_READ, sd->access, &va);
	if (st == IBV_WC_SUCCESS) {
		src.iov_base = (void *)(uintptr_t)va;
		src.iov_len = *len;
		st = land(m, rw, &src, 1, *len);
	}
	vfab_mr_unpin(pin);
	/* A rendezvous the HCA cannot finish is left to software, as mlx5 reports it. */
	return st == IBV_WC_SUCCESS ? st : IBV_WC_TM_RNDV_INCOMPLETE;
}

bool vfab_resp_tm(const struct vfab_msg *m, struct vfab_resp *res)
{
	const struct vfab_srq_slot *ks;
	struct vfab_srq_slot *s;
	uint8_t hdr[TMH_BYTES + RVH_BYTES] = {0};
	struct iovec tail[VFAB_XFER_MAX_IOV];
	struct vfab_resp_rwqe rw;
	struct ibv_tmh tmh;
	enum ibv_wc_status st;
	uint64_t tag;
	size_t got;
	bool matched;

	if (m->kq->qp_type != IBV_QPT_RC || m->kq->srq < 0)
		return false;
	ks = vfab_ksrq(m->map->k, (uint32_t)m->kq->srq, &m->kq->owner);
	if (!ks || !ks->tm_tags)
		return false;
	s = &m->r->srqs[m->kq->srq];
	got = msg_head(m, hdr, sizeof(hdr));
	memcpy(&tmh, hdr, sizeof(tmh));
	if (got < TMH_BYTES || (tmh.opcode != IBV_TMH_EAGER && tmh.opcode != IBV_TMH_RNDV) ||
	    (tmh.opcode == IBV_TMH_RNDV && got < TMH_BYTES + RVH_BYTES)) {
		land_ordinary(m, ks, s, IBV_WC_TM_NO_TAG, res);
		return true;
	}
	tag = be64toh(tmh.tag);
	if (vfab_lock(&s->lock)) {
		res->kind = VFAB_RESP_RNR;
		return true;
	}
	matched = atomic_load(&s->state) == VFAB_SLOT_USED && take_tag(m, s, ks, tag, &rw);
	vfab_unlock(&s->lock);
	if (!matched) {
		land_ordinary(m, ks, s, IBV_WC_TM_RECV, res);
		return true;
	}
	res->kind = VFAB_RESP_ACK;
	if (tmh.opcode == IBV_TMH_EAGER) {
		st = land(m, &rw, tail, msg_tail(m, TMH_BYTES, tail), m->len - TMH_BYTES);
		tm_push(m, ks, rw.wr_id, st, IBV_WC_TM_RECV,
			st == IBV_WC_SUCCESS ? (uint32_t)(m->len - TMH_BYTES) : 0,
			IBV_WC_TM_MATCH | IBV_WC_TM_DATA_VALID, tag, be32toh(tmh.app_ctx));
		return true;
	}
	/* RNDV: matched now, the data once read; the sender hears FIN (vfab_resp_tm_fin). */
	tm_push(m, ks, rw.wr_id, IBV_WC_SUCCESS, IBV_WC_TM_RECV, 0, IBV_WC_TM_MATCH, tag,
		be32toh(tmh.app_ctx));
	{
		uint32_t len;

		/* The data's completion names the buffer only (libmlx5: no tag info). */
		st = rndv_read(m, hdr, &rw, &len);
		tm_push(m, ks, rw.wr_id, st, IBV_WC_TM_RECV, st == IBV_WC_SUCCESS ? len : 0,
			IBV_WC_TM_DATA_VALID, 0, 0);
	}
	if (st == IBV_WC_SUCCESS) {
		res->tm_fin = true;
		res->tm_fin_tag = tag;
	}
	return true;
}

void vfab_resp_tm_fin(struct vfab_qp *qp, uint64_t tag)
{
	/* What the FIN's receive completion is built from: a SEND of its TMH. */
	static const struct vfab_swqe fin_as = {.opcode = IBV_WR_SEND};
	struct vfab_context *ctx = qp->ctx;
	struct vfab_qp_slot *d = qp->s, kq;
	struct ibv_tmh fin = {.opcode = IBV_TMH_FIN, .tag = htobe64(tag)};
	struct iovec src = {.iov_base = &fin, .iov_len = sizeof(fin)};
	struct vfab_resp_rwqe rw;
	enum ibv_wc_status st;
	struct vfab_msg m;

	if (!vfab_kqp_copy(ctx->k, ctx->hca_idx, qp->qpn, &kq))
		return;
	vfab_msg_build(&m, qp, &fin_as, &src, 1, sizeof(fin), d, &kq, ctx->hca_idx, d->port, -1);
	if (vfab_lock(&d->lock))
		return;
	if (vfab_resp_receiving(atomic_load(&d->qp_state)) &&
	    vfab_resp_check_rq(&m, &rw) == VFAB_RESP_PASS) {
		st = land(&m, &rw, &src, 1, sizeof(fin));
		vfab_resp_push_recv(&m, &rw, st, IBV_WC_RECV,
				    st == IBV_WC_SUCCESS ? (uint32_t)sizeof(fin) : 0, 0);
	}
	vfab_unlock(&d->lock);
}
