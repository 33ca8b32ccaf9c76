/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: ibv_resize_cq. Completions waiting in a CQ survive its
 * growth, in order; shrinking below what waits fails with EINVAL and keeps
 * them; the new size is what the CQ reports and holds. Scatter to CQE: a
 * receive of at most 32 bytes reaches its buffer when its completion is
 * polled (as libmlx5 copies a ConnectX's inline scatter), a larger one
 * before the sender's completion; through a resize and into a buffer
 * whose first segment is too short, the right bytes.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
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

/* SEND len bytes of pattern seed from a's buffer; true once the sender's completion is in. */
static bool send_pattern(struct side *a, uint32_t len, int seed)
{
	struct ibv_sge g = sge_of(a, 0, len);

	for (uint32_t i = 0; i < len; i++)
		a->buf[i] = (char)(seed + i);
	post(a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	return expect_wc(a->cq, "the SEND completes", IBV_WC_SUCCESS, 1000);
}

static bool has_pattern(const char *at, uint32_t len, int seed)
{
	for (uint32_t i = 0; i < len; i++)
		if (at[i] != (char)(seed + i))
			return false;
	return true;
}

void test_scatter_cqe(void)
{
	struct side a, b;
	struct ibv_sge r[2];
	struct ibv_wc wc;
	bool data = true;
	int rc;

	pair_open(&a, &b, ALL, NULL);
	memset(b.buf, 0xee, 4096);
	r[0] = sge_of(&b, 0, 64);
	post_recv(&b, 1, r, 1);
	send_pattern(&a, 8, 1);
	check((unsigned char)b.buf[0] == 0xee && (unsigned char)b.buf[7] == 0xee,
	      "8 B SEND: not in the buffer before its completion is polled", "already there");
	rc = wait_wc(b.cq, &wc, 1000);
	check(!rc && wc.status == IBV_WC_SUCCESS && wc.byte_len == 8 && wc.wc_flags == 0 &&
		  wc.wr_id == 1 && has_pattern(b.buf, 8, 1) && (unsigned char)b.buf[8] == 0xee,
	      "8 B SEND: the bytes, and nothing past them, once polled",
	      "rc %d status %s len %u flags 0x%x", rc, ibv_wc_status_str(wc.status), wc.byte_len,
	      wc.wc_flags);

	r[0] = sge_of(&b, 100, 64);
	post_recv(&b, 2, r, 1);
	send_pattern(&a, 33, 2);
	check(has_pattern(b.buf + 100, 33, 2), "33 B SEND: in the buffer before the poll",
	      "not there");
	rc = wait_wc(b.cq, &wc, 1000);
	check(!rc && wc.byte_len == 33, "33 B SEND completes", "rc %d len %u", rc, wc.byte_len);

	/* A first segment shorter than the message: the bytes go on into the second. */
	r[0] = sge_of(&b, 200, 4);
	r[1] = sge_of(&b, 300, 60);
	post_recv(&b, 3, r, 2);
	send_pattern(&a, 16, 3);
	rc = wait_wc(b.cq, &wc, 1000);
	check(!rc && wc.byte_len == 16 && has_pattern(b.buf + 200, 4, 3) &&
		  has_pattern(b.buf + 300, 12, 3 + 4),
	      "16 B SEND into 4 + 60 B segments", "rc %d len %u", rc, wc.byte_len);

	/* Small receives waiting in the CQ keep their bytes through a resize. */
	for (int i = 0; i < 4; i++) {
		r[0] = sge_of(&b, 1000 + 64 * (size_t)i, 64);
		post_recv(&b, 10 + (uint64_t)i, r, 1);
	}
	for (int i = 0; i < 4; i++)
		send_pattern(&a, 24, 40 + i);
	rc = ibv_resize_cq(b.cq, 500);
	check(rc == 0, "resize with small receives waiting", "rc %d", rc);
	for (int i = 0; i < 4; i++)
		data &= !wait_wc(b.cq, &wc, 1000) && wc.wr_id == 10 + (uint64_t)i &&
			has_pattern(b.buf + 1000 + 64 * i, 24, 40 + i);
	check(data, "their bytes after the resize", "lost or wrong");
	pair_close(&a, &b);
}
