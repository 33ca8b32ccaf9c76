/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: device memory (see verbs_errors.c), with a ConnectX-6's
 * MEMIC rules as libmlx5 applies them: at most max_dm_size, copies of
 * 4-byte words inside the allocation, MRs on it zero based. A peer's WRITE
 * lands in it through a DM MR, and a SEND goes out of it.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <string.h>

void test_dm(void)
{
	struct ibv_device_attr_ex dx;
	struct ibv_alloc_dm_attr da = {.length = 4096};
	struct ibv_sge g, r;
	struct ibv_mr *dmr, *amr;
	struct ibv_dm *dm, *adm;
	struct side a, b;
	struct ibv_wc wc;
	char word[8] = "vfab-dm", back[8];
	int rc;

	pair_open(&a, &b, ALL, NULL);
	if (ibv_query_device_ex(b.ctx, NULL, &dx))
		die("ibv_query_device_ex");
	check(dx.max_dm_size == 128 * 1024, "DM: max_dm_size as a ConnectX-6's", "%llu",
	      (unsigned long long)dx.max_dm_size);
	da.length = dx.max_dm_size + 1;
	check(!ibv_alloc_dm(b.ctx, &da) && errno == EINVAL, "DM: more than max_dm_size -> EINVAL",
	      "errno %d", errno);
	da.length = 4096;
	da.comp_mask = 1;
	check(!ibv_alloc_dm(b.ctx, &da) && errno == EINVAL, "DM: an unknown comp_mask -> EINVAL",
	      "errno %d", errno);
	da.comp_mask = 0;
	dm = ibv_alloc_dm(b.ctx, &da);
	if (!dm)
		die("ibv_alloc_dm");
	rc = ibv_memcpy_to_dm(dm, 2, word, 4);
	check(rc == EINVAL, "DM: a copy at an offset not a multiple of 4 -> EINVAL", "rc %d", rc);
	rc = ibv_memcpy_to_dm(dm, 4092, word, 8);
	check(rc == EFAULT, "DM: a copy past the end -> EFAULT", "rc %d", rc);
	rc = ibv_memcpy_to_dm(dm, 8, word, 8);
	memset(back, 0, sizeof(back));
	check(!rc && !ibv_memcpy_from_dm(back, dm, 8, 8) && !memcmp(back, word, 8),
	      "DM: what is copied in is read back", "rc %d", rc);
	check(!ibv_reg_dm_mr(b.pd, dm, 0, 4096, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL,
	      "DM: an MR that is not zero based -> EINVAL", "errno %d", errno);
	dmr =
	    ibv_reg_dm_mr(b.pd, dm, 1024, 1024,
			  IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!dmr)
		die("ibv_reg_dm_mr");
	rc = ibv_free_dm(dm);
	check(rc == EBUSY, "DM: memory with an MR on it is not freed", "rc %d", rc);

	/* A peer's WRITE at MR offset 16: DM offset 1040. */
	g = sge_of(&a, 0, 64);
	memset(a.buf, 'D', 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, 16, dmr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "DM: a WRITE into a DM MR completes", IBV_WC_SUCCESS, 2000);
	memset(back, 0, sizeof(back));
	check(!ibv_memcpy_from_dm(back, dm, 1040, 8) && back[0] == 'D' && back[7] == 'D',
	      "DM: the WRITE landed at the MR's zero-based offset", "byte %d", back[0]);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, 1000, dmr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "DM: a WRITE past the DM MR -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR,
		  2000);
	ibv_dereg_mr(dmr);
	check(!ibv_free_dm(dm), "DM: freed once its MR is gone", "%s", "");
	pair_close(&a, &b);

	/* A SEND out of device memory: the local SGE is an offset in the DM MR. */
	pair_open(&a, &b, ALL, NULL);
	adm = ibv_alloc_dm(a.ctx, &da);
	if (!adm)
		die("ibv_alloc_dm");
	amr = ibv_reg_dm_mr(a.pd, adm, 0, 4096, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	if (!amr)
		die("ibv_reg_dm_mr");
	ibv_memcpy_to_dm(adm, 256, word, 8);
	r = sge_of(&b, 0, 64);
	post_recv(&b, 5, &r, 1);
	g = (struct ibv_sge){.addr = 256, .length = 8, .lkey = amr->lkey};
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "DM: a SEND out of a DM MR completes", IBV_WC_SUCCESS, 2000);
	check(!wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.byte_len == 8 &&
		  !memcmp(b.buf, word, 8),
	      "DM: its bytes arrive", "status %s", ibv_wc_status_str(wc.status));
	ibv_dereg_mr(amr);
	ibv_free_dm(adm);
	pair_close(&a, &b);
}
