/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: ibv_resize_cq. Completions waiting in a CQ survive its
 * growth, in order; shrinking below what waits fails with EINVAL and keeps
 * them; the new size is what the CQ reports and holds.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>
#include <unistd.h>

void test_resize_cq(void)
{
	struct side a, b;
	struct ibv_sge g;
	struct ibv_wc wc;
	int rc, in_order = 1;

	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 8);
	for (int i = 0; i < 10; i++) {
		struct ibv_send_wr wr = {.wr_id = (uint64_t)i,
					 .sg_list = &g,
					 .num_sge = 1,
					 .opcode = IBV_WR_RDMA_WRITE,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
		wr.wr.rdma.rkey = b.mr->rkey;
		if (ibv_post_send(a.qp, &wr, &bad))
			die("post");
	}
	/* On the default (unshaped) fabric the WRITEs complete as they are posted. */
	usleep(50000);
	rc = ibv_resize_cq(a.cq, 4);
	check(rc == EINVAL, "resize below the waiting completions -> EINVAL", "rc %d", rc);
	rc = ibv_resize_cq(a.cq, 1000);
	check(rc == 0 && a.cq->cqe >= 1000, "resize to 1000 entries", "rc %d cqe %d", rc,
	      a.cq->cqe);
	for (int i = 0; i < 10; i++) {
		if (wait_wc(a.cq, &wc, 1000) || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)i)
			in_order = 0;
	}
	check(in_order, "the ten waiting completions come out in order", "lost or reordered");
	pair_close(&a, &b);
}
