/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: parent and thread domains. A parent domain carries its PD's
 * objects (an MR and an RC QP made on it move data), holds the PD and the
 * thread domain it names (both busy until it goes), and cannot wrap
 * another parent domain.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>

void test_parent_domain(void)
{
	struct ibv_td_init_attr ta = {0};
	struct ibv_parent_domain_init_attr pa = {0};
	struct side a, b;
	struct ibv_pd *parent, *nested;
	struct ibv_td *td;
	struct ibv_mr *mr;
	struct ibv_sge g;

	pair_open(&a, &b, ALL, NULL);
	td = ibv_alloc_td(a.ctx, &ta);
	check(td != NULL, "ibv_alloc_td", "errno %d", errno);
	if (!td) {
		pair_close(&a, &b);
		return;
	}
	pa.pd = a.pd;
	pa.td = td;
	parent = ibv_alloc_parent_domain(a.ctx, &pa);
	check(parent != NULL, "ibv_alloc_parent_domain", "errno %d", errno);
	if (!parent) {
		ibv_dealloc_td(td);
		pair_close(&a, &b);
		return;
	}
	pa.pd = parent;
	pa.td = NULL;
	nested = ibv_alloc_parent_domain(a.ctx, &pa);
	check(!nested && errno == EINVAL, "a parent domain of a parent domain -> EINVAL",
	      "%p errno %d", (void *)nested, errno);
	check(ibv_dealloc_td(td) == EBUSY, "a thread domain in use -> EBUSY", "not busy");
	check(ibv_dealloc_pd(a.pd) == EBUSY, "a PD with a parent domain -> EBUSY", "not busy");
	/* An MR registered on the parent domain is the PD's: a WRITE from it lands. */
	mr = ibv_reg_mr(parent, a.buf, BUF, ALL);
	check(mr != NULL, "ibv_reg_mr on a parent domain", "errno %d", errno);
	if (mr) {
		a.buf[0] = 0x5a;
		b.buf[0] = 0;
		g = (struct ibv_sge){.addr = (uintptr_t)a.buf, .length = 64, .lkey = mr->lkey};
		post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
		expect_wc(a.cq, "WRITE from an MR of the parent domain", IBV_WC_SUCCESS, 1000);
		check(b.buf[0] == 0x5a, "its bytes arrive", "got 0x%x", (unsigned)b.buf[0]);
		ibv_dereg_mr(mr);
	}
	check(ibv_dealloc_pd(parent) == 0, "dealloc the parent domain", "failed");
	check(ibv_dealloc_td(td) == 0, "then its thread domain", "still busy");
	pair_close(&a, &b);
}
