/* SPDX-License-Identifier: MIT */
/*
 * Tag matching SRQs, the owner's half: ibv_post_srq_ops adds tagged buffers
 * to the SRQ's tag table in the region (fabric/region.h struct vfab_tm_tag),
 * removes them and syncs the unexpected count, each completing into the
 * SRQ's CQ as a ConnectX's list operations do. Requesters match messages
 * against the table (vfab_resp_tm.c). Limits: tm_caps (vfab_query.c).
 */
#include "provider/vfab.h"

#include <errno.h>
#include <string.h>

/* A ConnectX-6's: rendezvous headers of 64 bytes, one SGE per tagged buffer. */
#define VFAB_TM_MAX_RNDV_HDR 64
#define VFAB_TM_MAX_OPS 255
#define VFAB_TM_MAX_SGE 1

void vfab_tm_caps(struct ibv_tm_caps *caps)
{
	caps->max_rndv_hdr_size = VFAB_TM_MAX_RNDV_HDR;
	caps->max_num_tags = VFAB_TM_MAX_TAGS;
	caps->flags = IBV_TM_CAP_RC;
	caps->max_ops = VFAB_TM_MAX_OPS;
	caps->max_sge = VFAB_TM_MAX_SGE;
}

bool vfab_tm_caps_ok(const struct ibv_tm_cap *cap)
{
	return cap->max_num_tags && cap->max_num_tags <= VFAB_TM_MAX_TAGS &&
	       cap->max_ops <= VFAB_TM_MAX_OPS;
}

int vfab_tm_table(struct vfab_srq *srq, const struct vfab_context *ctx,
		  const struct vfab_srq_slot *s, uint32_t tags)
{
	uint64_t off = s->tm.ring_off;
	uint32_t bytes = s->tm.wqe_size;

	if (s->tm.cap != tags || bytes < sizeof(struct vfab_tm_tag) + sizeof(struct vfab_sge) ||
	    !vfab_pool_holds(ctx->map_bytes, vfab_shard_of_ptr(ctx->r, s), off,
			     (uint64_t)tags * bytes))
		return -EIO;
	srq->tm_ring = vfab_at(ctx->r, off);
	srq->tm_tags = tags;
	srq->tm_entry_bytes = bytes;
	return 0;
}

/* Entry i of the SRQ's tag table, where creation found it (never re-read from the region). */
static struct vfab_tm_tag *tag_at(const struct vfab_srq *srq, uint32_t i)
{
	return (struct vfab_tm_tag *)(srq->tm_ring + (uint64_t)i * srq->tm_entry_bytes);
}

/* ADD: a free entry takes the buffer; its index is the handle. 0 or ENOMEM. */
static int tag_add(struct vfab_srq *srq, struct ibv_ops_wr *op)
{
	struct vfab_srq_slot *s = srq->s;

	for (uint32_t i = 0; i < srq->tm_tags; i++) {
		struct vfab_tm_tag *t = tag_at(srq, i);
		struct vfab_sge *sge = (struct vfab_sge *)(t + 1);

		if (t->valid)
			continue;
		t->num_sge = (uint32_t)op->tm.add.num_sge;
		for (int k = 0; k < op->tm.add.num_sge; k++) {
			sge[k].addr = op->tm.add.sg_list[k].addr;
			sge[k].length = op->tm.add.sg_list[k].length;
			sge[k].lkey = op->tm.add.sg_list[k].lkey;
		}
		t->wr_id = op->tm.add.recv_wr_id;
		t->tag = op->tm.add.tag;
		t->mask = op->tm.add.mask;
		t->phase = op->tm.unexpected_cnt;
		t->seq = ++s->tm_seq;
		t->valid = 1;
		op->tm.handle = i;
		return 0;
	}
	return ENOMEM;
}

/* One list operation under the SRQ's lock: 0 with its completion in *e, or an errno value. */
static int run_op(struct vfab_srq *srq, struct ibv_ops_wr *op, struct vfab_cqe *e)
{
	struct vfab_srq_slot *s = srq->s;
	int rc = 0;

	memset(e, 0, sizeof(*e));
	e->wr_id = op->wr_id;
	switch (op->opcode) {
	case IBV_WR_TAG_ADD:
		if (op->tm.add.num_sge < 0 || op->tm.add.num_sge > VFAB_TM_MAX_SGE ||
		    (op->tm.add.num_sge && !op->tm.add.sg_list))
			return EINVAL;
		rc = tag_add(srq, op);
		e->opcode = IBV_WC_TM_ADD;
		break;
	case IBV_WR_TAG_DEL:
		e->opcode = IBV_WC_TM_DEL;
		/* A buffer already consumed (or never added) is the list's error. */
		if (op->tm.handle >= srq->tm_tags || !tag_at(srq, op->tm.handle)->valid)
			e->status = IBV_WC_TM_ERR;
		else
			tag_at(srq, op->tm.handle)->valid = 0;
		break;
	case IBV_WR_TAG_SYNC:
		e->opcode = IBV_WC_TM_SYNC;
		break;
	default:
		return EINVAL;
	}
	if (rc)
		return rc;
	/* Software's count behind the HW's: the HW asks for a sync. */
	if (op->opcode != IBV_WR_TAG_SYNC &&
	    op->tm.unexpected_cnt != atomic_load(&s->tm_unexpected))
		e->wc_flags = IBV_WC_TM_SYNC_REQ;
	e->vendor_err = e->status ? vfab_vendor_err((enum ibv_wc_status)e->status) : 0;
	e->qp_num = srq->vsrq.srq_num;
	return 0;
}

int vfab_post_srq_ops(struct ibv_srq *ibsrq, struct ibv_ops_wr *op, struct ibv_ops_wr **bad)
{
	struct vfab_srq *srq = to_vsrq(ibsrq);
	struct vfab_cqe e;
	int rc = 0;

	*bad = NULL;
	if (srq->vsrq.srq_type != IBV_SRQT_TM) {
		*bad = op;
		return EINVAL;
	}
	for (; op && !rc; op = op->next) {
		if (vfab_lock(&srq->s->lock)) {
			rc = EIO;
		} else {
			rc = run_op(srq, op, &e);
			vfab_unlock(&srq->s->lock);
		}
		if (rc) {
			*bad = op;
			break;
		}
		if ((op->flags & IBV_OPS_SIGNALED) || e.status != IBV_WC_SUCCESS)
			vfab_cq_push(srq->ctx->map, (uint32_t)srq->cq->slot, &srq->ctx->owner, &e,
				     false);
	}
	return rc;
}
