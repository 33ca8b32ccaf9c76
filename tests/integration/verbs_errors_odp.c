/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: on-demand paging. The device reports ODP (implicit too) as
 * a ConnectX-6; the implicit MR (NULL, SIZE_MAX) takes WRITEs into memory
 * mapped after it was registered and gives REM_ACCESS_ERR for memory that
 * is not mapped; without ON_DEMAND that registration fails; ibv_advise_mr
 * answers as mlx5's driver: EOPNOTSUPP for an unknown advice or flag,
 * ENOENT for a key that names no ODP MR, EPERM for PREFETCH_WRITE into a
 * read-only one, EFAULT for a flushed prefetch outside the MR, 0 inside.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>

#define ODP_ALL (ALL | IBV_ACCESS_ON_DEMAND)

static void write_at(struct side *a, uint64_t raddr, uint32_t rkey, char marker)
{
	struct ibv_sge g = sge_of(a, 0, 8);

	a->buf[0] = marker;
	post(a, IBV_WR_RDMA_WRITE, &g, 1, raddr, rkey, IBV_SEND_SIGNALED);
}

static void odp_caps(struct side *s)
{
	struct ibv_device_attr_ex attr = {0};
	const uint32_t rc = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |
			    IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC |
			    IBV_ODP_SUPPORT_SRQ_RECV;
	int rc_q = ibv_query_device_ex(s->ctx, NULL, &attr);

	check(rc_q == 0 && (attr.odp_caps.general_caps & IBV_ODP_SUPPORT) &&
		  (attr.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT),
	      "ODP and implicit ODP reported", "rc %d general 0x%llx", rc_q,
	      (unsigned long long)attr.odp_caps.general_caps);
	check((attr.odp_caps.per_transport_caps.rc_odp_caps & rc) == rc,
	      "RC: send, receive, write, read, atomic, SRQ receive on demand", "rc caps 0x%x",
	      attr.odp_caps.per_transport_caps.rc_odp_caps);
}

static void implicit_mr(struct side *a, struct side *b)
{
	struct ibv_mr *imr = ibv_reg_mr(b->pd, NULL, SIZE_MAX, ODP_ALL), *bad;
	char *late, *gone;

	check(imr != NULL, "the implicit ODP MR (NULL, SIZE_MAX) registers", "errno %d", errno);
	bad = ibv_reg_mr(b->pd, NULL, SIZE_MAX, ALL);
	check(bad == NULL, "the same without ON_DEMAND fails", "registered");
	if (bad)
		ibv_dereg_mr(bad);
	if (!imr)
		return;
	late = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	gone = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (late == MAP_FAILED || gone == MAP_FAILED)
		die("mmap");
	munmap(gone, 4096);
	write_at(a, (uintptr_t)late + 64, imr->rkey, 0x51);
	expect_wc(a->cq, "a WRITE into memory mapped after the registration", IBV_WC_SUCCESS, 1000);
	check(late[64] == 0x51, "its byte is there", "got 0x%x", (unsigned)late[64]);
	write_at(a, (uintptr_t)gone, imr->rkey, 0x52);
	expect_wc(a->cq, "a WRITE into unmapped memory -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR,
		  1000);
	munmap(late, 4096);
	ibv_dereg_mr(imr);
}

static void advise(struct side *a, struct side *b)
{
	struct ibv_mr *ro = ibv_reg_mr(b->pd, b->buf, BUF, IBV_ACCESS_ON_DEMAND);
	struct ibv_sge in = {(uintptr_t)b->buf, 4096, b->mr->lkey};
	struct ibv_sge out = {(uintptr_t)b->buf + BUF - 8, 4096, b->mr->lkey};
	struct ibv_sge plain = {(uintptr_t)a->buf, 4096, a->mr->lkey};
	int rc;

	if (!ro)
		die("read-only ODP MR");
	rc = ibv_advise_mr(b->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, IBV_ADVISE_MR_FLAG_FLUSH,
			   &in, 1);
	check(rc == 0, "a flushed PREFETCH_WRITE inside the ODP MR", "rc %d", rc);
	rc = ibv_advise_mr(b->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, IBV_ADVISE_MR_FLAG_FLUSH, &out, 1);
	check(rc == EFAULT, "a flushed PREFETCH past its end -> EFAULT", "rc %d", rc);
	rc = ibv_advise_mr(b->pd, (enum ibv_advise_mr_advice)7, 0, &in, 1);
	check(rc == EOPNOTSUPP, "an unknown advice -> EOPNOTSUPP", "rc %d", rc);
	rc = ibv_advise_mr(b->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 1u << 5, &in, 1);
	check(rc == EOPNOTSUPP, "an unknown flag -> EOPNOTSUPP", "rc %d", rc);
	rc = ibv_advise_mr(a->pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &plain, 1);
	check(rc == ENOENT, "a key of an MR that is not on demand -> ENOENT", "rc %d", rc);
	in.lkey = ro->lkey;
	rc = ibv_advise_mr(b->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &in, 1);
	check(rc == EPERM, "PREFETCH_WRITE into a read-only ODP MR -> EPERM", "rc %d", rc);
	rc = ibv_advise_mr(b->pd, IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, &in, 1);
	check(rc == 0, "PREFETCH_NO_FAULT of it", "rc %d", rc);
	ibv_dereg_mr(ro);
}

void test_odp(void)
{
	struct side a, b;

	pair_open(&a, &b, ODP_ALL, NULL);
	odp_caps(&a);
	implicit_mr(&a, &b);
	advise(&a, &b);
	pair_close(&a, &b);
}
