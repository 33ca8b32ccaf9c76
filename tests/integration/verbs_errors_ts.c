/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: completion timestamps. A CQ made with ibv_create_cq_ex and
 * IBV_WC_EX_WITH_COMPLETION_TIMESTAMP(_WALLCLOCK) stamps each completion with
 * the device clock (hca_core_clock kHz); ibv_query_rt_values_ex reads that
 * clock. A completion's stamp lies between two readings taken around it,
 * and its wall-clock time within a second of CLOCK_REALTIME.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static uint64_t raw_clock(struct ibv_context *ctx)
{
	struct ibv_values_ex v = {.comp_mask = IBV_VALUES_MASK_RAW_CLOCK};

	if (ibv_query_rt_values_ex(ctx, &v))
		die("ibv_query_rt_values_ex");
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

void test_timestamps(void)
{
	struct ibv_cq_init_attr_ex ca = {.cqe = 16,
					 .wc_flags = IBV_WC_STANDARD_FLAGS |
						     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
						     IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK};
	struct ibv_poll_cq_attr pa = {0};
	struct ibv_device_attr_ex da;
	struct side a, b;
	struct ibv_sge g;
	struct ibv_cq_ex *cqx;
	struct timespec real;
	uint64_t t0, t1, ts = 0, wall = 0, now;
	int rc = ENOENT;

	side_open(&a, ALL);
	if (ibv_query_device_ex(a.ctx, NULL, &da))
		die("ibv_query_device_ex");
	check(da.hca_core_clock > 0 && da.completion_timestamp_mask != 0,
	      "hca_core_clock and completion_timestamp_mask are reported", "%lu kHz, mask 0x%lx",
	      (unsigned long)da.hca_core_clock, (unsigned long)da.completion_timestamp_mask);
	cqx = ibv_create_cq_ex(a.ctx, &ca);
	check(cqx != NULL, "ibv_create_cq_ex with completion timestamps", "errno %d", errno);
	if (cqx)
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)); /* before its context closes */
	side_close(&a);
	if (!cqx)
		return;

	/* a's send completions go to the stamping CQ. */
	side_open(&b, ALL);
	qp_open(&b, IBV_QPT_RC);
	side_open(&a, ALL);
	cqx = ibv_create_cq_ex(a.ctx, &ca);
	if (!cqx)
		die("ibv_create_cq_ex");
	{
		struct ibv_qp_init_attr qa = {.send_cq = ibv_cq_ex_to_cq(cqx),
					      .recv_cq = a.cq,
					      .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 16,
						      .max_recv_wr = 16,
						      .max_send_sge = 1,
						      .max_recv_sge = 1}};
		struct conn c = conn_to(b.qp);

		a.qp = ibv_create_qp(a.pd, &qa);
		if (!a.qp || rc_connect(a.qp, &c))
			die("stamping QP");
		c = conn_to(a.qp);
		if (rc_connect(b.qp, &c))
			die("connect");
	}
	g = sge_of(&a, 0, 64);
	t0 = raw_clock(a.ctx);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	for (int i = 0; i < 100000 && rc == ENOENT; i++) {
		rc = ibv_start_poll(cqx, &pa);
		if (rc == 0) {
			check(cqx->status == IBV_WC_SUCCESS, "stamped WRITE completes", "status %s",
			      ibv_wc_status_str(cqx->status));
			ts = ibv_wc_read_completion_ts(cqx);
			wall = ibv_wc_read_completion_wallclock_ns(cqx);
			ibv_end_poll(cqx);
		}
	}
	t1 = raw_clock(a.ctx);
	clock_gettime(CLOCK_REALTIME, &real);
	now = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	check(rc == 0 && ts >= t0 && ts <= t1, "completion timestamp between two clock readings",
	      "rc %d, %lu not in [%lu, %lu]", rc, (unsigned long)ts, (unsigned long)t0,
	      (unsigned long)t1);
	check(wall <= now && now - wall < 1000000000ull, "wall-clock timestamp is CLOCK_REALTIME",
	      "%lu vs now %lu", (unsigned long)wall, (unsigned long)now);
	ibv_destroy_qp(a.qp);
	a.qp = NULL;
	ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	pair_close(&a, &b);
}
