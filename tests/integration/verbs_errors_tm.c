/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: tag matching SRQs (see verbs_errors.c), with the answers
 * libmlx5 gives: tm_caps, SRQs beyond them refused, list operations only on
 * a TM SRQ, removing a buffer twice is the list's error (IBV_WC_TM_ERR), an
 * operation with a stale unexpected count asks for a sync, and a CQ cannot
 * hold both tag matching info and timestamps (vfab keeps them in one place).
 */
#include "verbs_harness.h"

#include <errno.h>
#include <string.h>

static struct ibv_srq *tm_srq(struct side *s, uint32_t tags)
{
	struct ibv_srq_init_attr_ex a = {.attr = {.max_wr = 8, .max_sge = 1},
					 .comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
						      IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_CQ |
						      IBV_SRQ_INIT_ATTR_TM,
					 .srq_type = IBV_SRQT_TM,
					 .pd = s->pd,
					 .cq = s->cq,
					 .tm_cap = {.max_num_tags = tags, .max_ops = 8}};

	return ibv_create_srq_ex(s->ctx, &a);
}

/* One list operation, signaled; its completion's status and flags. */
static bool tm_op(struct side *s, struct ibv_srq *srq, struct ibv_ops_wr *op, struct ibv_wc *wc)
{
	struct ibv_ops_wr *bad;

	op->flags = IBV_OPS_SIGNALED;
	return !ibv_post_srq_ops(srq, op, &bad) && !wait_wc(s->cq, wc, 2000);
}

void test_tm(void)
{
	struct ibv_cq_init_attr_ex ca = {
	    .cqe = 8, .wc_flags = IBV_WC_EX_WITH_TM_INFO | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP};
	struct ibv_device_attr_ex dx;
	struct ibv_ops_wr op, *bad;
	struct ibv_srq_init_attr basic = {.attr = {.max_wr = 4, .max_sge = 1}};
	struct ibv_srq *srq, *plain;
	struct ibv_sge g;
	struct ibv_wc wc;
	struct side s;
	uint32_t handle;

	side_open(&s, IBV_ACCESS_LOCAL_WRITE);
	if (ibv_query_device_ex(s.ctx, NULL, &dx))
		die("ibv_query_device_ex");
	check((dx.tm_caps.flags & IBV_TM_CAP_RC) && dx.tm_caps.max_num_tags > 0 &&
		  dx.tm_caps.max_rndv_hdr_size == 64 && dx.tm_caps.max_sge == 1,
	      "TM: tm_caps as a ConnectX-6's (RC, 64-byte rendezvous header, one SGE)",
	      "flags %u tags %u", dx.tm_caps.flags, dx.tm_caps.max_num_tags);
	check(!tm_srq(&s, dx.tm_caps.max_num_tags + 1) && errno == EINVAL,
	      "TM: more tags than max_num_tags (EINVAL)", "errno %d", errno);
	check(!ibv_create_cq_ex(s.ctx, &ca) && errno == EOPNOTSUPP,
	      "TM: tag matching info and timestamps in one CQ (EOPNOTSUPP)", "errno %d", errno);

	plain = ibv_create_srq(s.pd, &basic);
	if (!plain)
		die("basic SRQ");
	memset(&op, 0, sizeof(op));
	op.opcode = IBV_WR_TAG_SYNC;
	check(ibv_post_srq_ops(plain, &op, &bad) == EINVAL,
	      "TM: list operations on a basic SRQ (EINVAL)", "errno %d", errno);
	ibv_destroy_srq(plain);

	srq = tm_srq(&s, 4);
	if (!check(srq != NULL, "TM: a TM SRQ of 4 tags", "errno %d", errno)) {
		side_close(&s);
		return;
	}
	g = sge_of(&s, 0, 64);
	memset(&op, 0, sizeof(op));
	op.wr_id = 1;
	op.opcode = IBV_WR_TAG_ADD;
	op.tm.add.recv_wr_id = 11;
	op.tm.add.sg_list = &g;
	op.tm.add.num_sge = 1;
	op.tm.add.tag = 0x77;
	op.tm.add.mask = ~0ull;
	check(tm_op(&s, srq, &op, &wc) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_TM_ADD && wc.wr_id == 1 &&
		  !(wc.wc_flags & IBV_WC_TM_SYNC_REQ),
	      "TM: ADD completes IBV_WC_TM_ADD", "status %d opcode %d", wc.status, wc.opcode);
	handle = op.tm.handle;
	op.tm.add.num_sge = 2;
	check(ibv_post_srq_ops(srq, &op, &bad) == EINVAL,
	      "TM: a tagged buffer of two SGEs (EINVAL: max_sge 1)", "errno %d", errno);

	memset(&op, 0, sizeof(op));
	op.wr_id = 2;
	op.opcode = IBV_WR_TAG_DEL;
	op.tm.handle = handle;
	check(tm_op(&s, srq, &op, &wc) && wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_TM_DEL,
	      "TM: DEL completes IBV_WC_TM_DEL", "status %d", wc.status);
	check(tm_op(&s, srq, &op, &wc) && wc.status == IBV_WC_TM_ERR,
	      "TM: removing it again is IBV_WC_TM_ERR", "status %d", wc.status);

	memset(&op, 0, sizeof(op));
	op.wr_id = 3;
	op.opcode = IBV_WR_TAG_ADD;
	op.tm.add.sg_list = &g;
	op.tm.add.num_sge = 1;
	op.tm.unexpected_cnt = 5; /* the HW has seen no unexpected message */
	check(tm_op(&s, srq, &op, &wc) && wc.status == IBV_WC_SUCCESS &&
		  (wc.wc_flags & IBV_WC_TM_SYNC_REQ),
	      "TM: a stale unexpected count asks for a sync (IBV_WC_TM_SYNC_REQ)", "flags 0x%x",
	      wc.wc_flags);
	check(ibv_destroy_cq(s.cq) == EBUSY, "TM: the SRQ's CQ is held (EBUSY)", "errno %d", errno);
	check(!ibv_destroy_srq(srq), "TM: the SRQ goes", "errno %d", errno);
	side_close(&s);
}
