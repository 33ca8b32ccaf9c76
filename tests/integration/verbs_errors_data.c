/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors (see verbs_errors.c): the right bytes in the right places,
 * completion channels, UD datagrams, RC order behind an RNR wait, CQ
 * overflow and the SRQ limit event.
 */
#include "verbs_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <string.h>

void test_send_variants(void)
{
	struct side a, b;
	struct ibv_sge g[3], r[2];
	struct ibv_wc wc;
	int i;

	pair_open(&a, &b, ALL, NULL);
	for (i = 0; i < 96; i++)
		a.buf[i] = (char)i;
	/* Three gather segments into two scatter segments. */
	g[0] = sge_of(&a, 0, 32);
	g[1] = sge_of(&a, 32, 40);
	g[2] = sge_of(&a, 72, 24);
	r[0] = sge_of(&b, 1000, 50);
	r[1] = sge_of(&b, 2000, 50);
	post_recv(&b, 1, r, 2);
	post(&a, IBV_WR_SEND, g, 3, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "multi-SGE SEND completes", IBV_WC_SUCCESS, 1000);
	if (!wait_wc(b.cq, &wc, 1000)) {
		bool data = true;

		for (i = 0; i < 96; i++)
			data &= (i < 50 ? b.buf[1000 + i] : b.buf[2000 + i - 50]) == (char)i;
		check(wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RECV &&
			  wc.byte_len == 96 && wc.qp_num == b.qp->qp_num && data,
		      "multi-SGE SEND scatters the right bytes", "status %s len %u data %d",
		      ibv_wc_status_str(wc.status), wc.byte_len, data);
	} else {
		check(false, "multi-SGE SEND scatters the right bytes", "no receive completion");
	}

	/* Inline SEND with immediate data: the source may change right after. */
	memcpy(a.buf, "inline-payload", 15);
	r[0] = sge_of(&b, 0, 64);
	post_recv(&b, 2, r, 1);
	g[0] = sge_of(&a, 0, 15);
	g[0].lkey = 0; /* ignored for inline data */
	{
		struct ibv_send_wr wr = {.wr_id = 9,
					 .sg_list = g,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND_WITH_IMM,
					 .send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
					 .imm_data = htonl(0xabcd)},
				   *bad;

		check(ibv_post_send(a.qp, &wr, &bad) == 0, "inline SEND_WITH_IMM posts", "rc");
		memset(a.buf, 'x', 15);
	}
	expect_wc(a.cq, "inline SEND_WITH_IMM completes", IBV_WC_SUCCESS, 1000);
	check(!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xabcd &&
		  wc.byte_len == 15 && !memcmp(b.buf, "inline-payload", 15),
	      "inline SEND_WITH_IMM delivers bytes and immediate", "wrong receive completion");

	/* Zero-length WRITE_WITH_IMM without SGEs, as NCCL posts it. */
	post_recv(&b, 3, NULL, 0);
	{
		struct ibv_send_wr wr = {.wr_id = 10,
					 .num_sge = 0,
					 .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
					 .send_flags = IBV_SEND_SIGNALED,
					 .imm_data = htonl(77)},
				   *bad;

		wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
		wr.wr.rdma.rkey = b.mr->rkey;
		ibv_post_send(a.qp, &wr, &bad);
	}
	expect_wc(a.cq, "zero-length WRITE_WITH_IMM completes", IBV_WC_SUCCESS, 1000);
	check(!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == 0 &&
		  ntohl(wc.imm_data) == 77 && wc.wr_id == 3,
	      "zero-length WRITE_WITH_IMM -> RECV_RDMA_WITH_IMM", "wrong receive completion");
	pair_close(&a, &b);
}

void test_rdma_and_atomics(void)
{
	struct side a, b;
	struct ibv_sge g;
	struct ibv_wc wc;
	uint64_t *remote, *local;
	int i;

	pair_open(&a, &b, ALL, NULL);
	for (i = 0; i < 4096; i++)
		b.buf[8192 + i] = (char)(i * 7);
	g = sge_of(&a, 0, 4096);
	post(&a, IBV_WR_RDMA_READ, &g, 1, (uintptr_t)b.buf + 8192, b.mr->rkey, IBV_SEND_SIGNALED);
	check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == 4096 &&
		  !memcmp(a.buf, b.buf + 8192, 4096),
	      "RDMA READ returns the remote bytes", "wrong READ completion or data");

	memset(a.buf, 0x5a, 1000);
	g = sge_of(&a, 0, 1000);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf + 100, b.mr->rkey, IBV_SEND_SIGNALED);
	check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  wc.opcode == IBV_WC_RDMA_WRITE && b.buf[100] == 0x5a && b.buf[1099] == 0x5a &&
		  b.buf[1100] != 0x5a,
	      "RDMA WRITE lands exactly", "wrong WRITE completion or data");

	remote = (uint64_t *)(b.buf + 16384);
	local = (uint64_t *)a.buf;
	*remote = 40;
	g = sge_of(&a, 0, 8);
	{
		struct ibv_send_wr wr = {.wr_id = 11,
					 .sg_list = &g,
					 .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)remote;
		wr.wr.atomic.rkey = b.mr->rkey;
		wr.wr.atomic.compare_add = 2;
		ibv_post_send(a.qp, &wr, &bad);
		check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
			  wc.opcode == IBV_WC_FETCH_ADD && *local == 40 && *remote == 42,
		      "FETCH_AND_ADD returns the old value and adds", "local %lu remote %lu",
		      (unsigned long)*local, (unsigned long)*remote);

		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 1000;
		ibv_post_send(a.qp, &wr, &bad);
		check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
			  wc.opcode == IBV_WC_COMP_SWAP && *local == 42 && *remote == 1000,
		      "CMP_AND_SWP swaps on a match", "local %lu remote %lu", (unsigned long)*local,
		      (unsigned long)*remote);

		wr.wr.atomic.compare_add = 5;
		wr.wr.atomic.swap = 7;
		ibv_post_send(a.qp, &wr, &bad);
		check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS && *local == 1000 &&
			  *remote == 1000,
		      "CMP_AND_SWP leaves a mismatch alone", "local %lu remote %lu",
		      (unsigned long)*local, (unsigned long)*remote);
	}
	pair_close(&a, &b);
}

void test_comp_channel(void)
{
	struct side a, b;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *ev_cq;
	struct pollfd p;
	struct ibv_sge g, r;
	struct conn c;
	void *ev_ctx;

	side_open(&a, ALL);
	side_open(&b, ALL);
	ch = ibv_create_comp_channel(b.ctx);
	if (!check(ch != NULL, "ibv_create_comp_channel on a vfab context", "%s", strerror(errno)))
		goto out;
	/* b's QP gets a receive CQ bound to the channel. */
	cq = ibv_create_cq(b.ctx, 16, (void *)0x77, ch, 0);
	if (!cq)
		die("ibv_create_cq with a channel");
	{
		struct ibv_qp_init_attr at = {
		    .send_cq = b.cq,
		    .recv_cq = cq,
		    .qp_type = IBV_QPT_RC,
		    .cap = {
			.max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1}};

		b.qp = ibv_create_qp(b.pd, &at);
		if (!b.qp)
			die("ibv_create_qp");
	}
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(b.qp);
	if (rc_connect(a.qp, &c))
		die("connect a");
	c = conn_to(a.qp);
	if (rc_connect(b.qp, &c))
		die("connect b");
	ibv_req_notify_cq(cq, 0);
	r = sge_of(&b, 0, 64);
	post_recv(&b, 5, &r, 1);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, 0);
	p.fd = ch->fd;
	p.events = POLLIN;
	if (check(poll(&p, 1, 2000) == 1, "armed CQ wakes its channel", "no event in 2 s") &&
	    check(ibv_get_cq_event(ch, &ev_cq, &ev_ctx) == 0 && ev_cq == cq &&
		      ev_ctx == (void *)0x77,
		  "ibv_get_cq_event names the CQ", "wrong CQ"))
		ibv_ack_cq_events(cq, 1);
	check(ibv_destroy_comp_channel(ch) == EBUSY, "channel in use is busy", "not EBUSY");
	ibv_destroy_qp(b.qp);
	b.qp = NULL;
	ibv_destroy_cq(cq);
	check(ibv_destroy_comp_channel(ch) == 0, "channel destroyed", "failed");
out:
	pair_close(&a, &b);
}

void test_ud(void)
{
	struct side a, b;
	struct ibv_qp_attr at;
	struct ibv_ah_attr ah_attr = {.is_global = 1, .port_num = PORT};
	struct ibv_ah *ah;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	struct side *s[2] = {&a, &b};
	int i;

	side_open(&a, ALL);
	side_open(&b, ALL);
	qp_open(&a, IBV_QPT_UD);
	qp_open(&b, IBV_QPT_UD);
	for (i = 0; i < 2; i++) {
		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = PORT;
		at.qkey = 0x11111111;
		ibv_modify_qp(s[i]->qp, &at,
			      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
		at.qp_state = IBV_QPS_RTR;
		ibv_modify_qp(s[i]->qp, &at, IBV_QP_STATE);
		at.qp_state = IBV_QPS_RTS;
		if (ibv_modify_qp(s[i]->qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN))
			die("UD to RTS");
	}
	ah_attr.grh.dgid = gid;
	ah_attr.grh.sgid_index = (uint8_t)gid_index;
	ah_attr.grh.hop_limit = 1;
	ah = ibv_create_ah(a.pd, &ah_attr);
	if (!ah)
		die("ibv_create_ah");
	r = sge_of(&b, 0, 40 + 256);
	post_recv(&b, 8, &r, 1);
	memcpy(a.buf, "datagram", 8);
	g = sge_of(&a, 0, 8);
	{
		struct ibv_send_wr wr = {.wr_id = 12,
					 .sg_list = &g,
					 .num_sge = 1,
					 .opcode = IBV_WR_SEND,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = b.qp->qp_num;
		wr.wr.ud.remote_qkey = 0x22222222; /* wrong: dropped */
		ibv_post_send(a.qp, &wr, &bad);
		expect_wc(a.cq, "UD send with a wrong Q_Key still succeeds", IBV_WC_SUCCESS, 1000);
		check(wait_wc(b.cq, &wc, 100) != 0, "UD datagram with a wrong Q_Key is dropped",
		      "it was delivered");
		wr.wr.ud.remote_qkey = 0x11111111;
		ibv_post_send(a.qp, &wr, &bad);
		expect_wc(a.cq, "UD send completes", IBV_WC_SUCCESS, 1000);
	}
	check(!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  (wc.wc_flags & IBV_WC_GRH) && wc.byte_len == 48 && wc.src_qp == a.qp->qp_num &&
		  !memcmp(b.buf + 40, "datagram", 8),
	      "UD receive: GRH, source QP, payload after 40 bytes", "wrong receive completion");
	ibv_destroy_ah(ah);
	pair_close(&a, &b);
}

/* A WR waiting for RNR holds back the WRs posted after it (RC order). */
void test_rnr_order(void)
{
	struct side a, b;
	struct ibv_sge g, w, r;
	struct ibv_wc wc[2];
	int n = 0;
	double end;

	pair_open(&a, &b, ALL, NULL); /* rnr_retry 7: wait forever */
	g = sge_of(&a, 0, 64);
	w = sge_of(&a, 64, 64);
	memset(a.buf + 64, 'o', 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	post(&a, IBV_WR_RDMA_WRITE, &w, 1, (uintptr_t)b.buf + 8192, b.mr->rkey, IBV_SEND_SIGNALED);
	end = now_ms() + 20;
	while (now_ms() < end && n == 0)
		n = ibv_poll_cq(a.cq, 2, wc);
	check(n == 0 && b.buf[8192] == 0, "nothing completes while the receiver is not ready",
	      "%d completions", n);
	r = sge_of(&b, 0, 64);
	post_recv(&b, 1, &r, 1);
	end = now_ms() + 2000;
	while (now_ms() < end && n < 2) {
		int k = ibv_poll_cq(a.cq, 2 - n, wc + n);

		if (k > 0)
			n += k;
	}
	check(n == 2 && wc[0].status == IBV_WC_SUCCESS && wc[0].opcode == IBV_WC_SEND &&
		  wc[1].status == IBV_WC_SUCCESS && wc[1].opcode == IBV_WC_RDMA_WRITE &&
		  b.buf[8192] == 'o',
	      "after the receive is posted: SEND, then the WRITE behind it", "%d completions", n);
	pair_close(&a, &b);
}

void test_cq_overflow(void)
{
	struct side a, b;
	struct ibv_cq *small;
	struct ibv_sge g;
	int i;

	side_open(&a, ALL);
	side_open(&b, ALL);
	small = ibv_create_cq(a.ctx, 1, NULL, NULL, 0);
	if (!small)
		die("ibv_create_cq");
	check(small->cqe >= 1, "a CQ holds at least the entries asked for", "cqe %d", small->cqe);
	{
		struct ibv_qp_init_attr at = {
		    .send_cq = small,
		    .recv_cq = small,
		    .qp_type = IBV_QPT_RC,
		    .cap = {
			.max_send_wr = 16, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
		struct conn c;

		a.qp = ibv_create_qp(a.pd, &at);
		qp_open(&b, IBV_QPT_RC);
		c = conn_to(b.qp);
		if (!a.qp || rc_connect(a.qp, &c))
			die("connect a");
		c = conn_to(a.qp);
		if (rc_connect(b.qp, &c))
			die("connect b");
	}
	g = sge_of(&a, 0, 8);
	for (i = 0; i < small->cqe + 3; i++)
		post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	check(wait_async(a.ctx, IBV_EVENT_CQ_ERR, 1000), "CQ overflow raises CQ_ERR",
	      "no async event");
	ibv_destroy_qp(a.qp);
	a.qp = NULL;
	ibv_destroy_cq(small);
	pair_close(&a, &b);
}

void test_srq_limit(void)
{
	struct side a, b;
	struct ibv_srq_init_attr si = {.attr = {.max_wr = 8, .max_sge = 1}};
	struct ibv_srq_attr lim = {.srq_limit = 3};
	struct ibv_srq *srq;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	int i;

	side_open(&a, ALL);
	side_open(&b, ALL);
	srq = ibv_create_srq(b.pd, &si);
	if (!srq)
		die("ibv_create_srq");
	{
		struct ibv_qp_init_attr at = {.send_cq = b.cq,
					      .recv_cq = b.cq,
					      .srq = srq,
					      .qp_type = IBV_QPT_RC,
					      .cap = {.max_send_wr = 4, .max_send_sge = 1}};
		struct conn c;

		b.qp = ibv_create_qp(b.pd, &at);
		qp_open(&a, IBV_QPT_RC);
		c = conn_to(b.qp);
		if (!b.qp || rc_connect(a.qp, &c))
			die("connect a");
		c = conn_to(a.qp);
		if (rc_connect(b.qp, &c))
			die("connect b");
	}
	r = sge_of(&b, 0, 64);
	for (i = 0; i < 4; i++) {
		struct ibv_recv_wr wr = {.wr_id = 50 + i, .sg_list = &r, .num_sge = 1}, *bad;

		ibv_post_srq_recv(srq, &wr, &bad);
	}
	check(ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT) == 0, "SRQ limit armed", "failed");
	g = sge_of(&a, 0, 16);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND through an SRQ completes", IBV_WC_SUCCESS, 1000);
	check(!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 50,
	      "the SRQ's first WQE receives it", "wrong receive completion");
	check(!wait_async(b.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 50),
	      "no limit event while 3 WQEs are left", "early event");
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "second SEND through the SRQ completes", IBV_WC_SUCCESS, 1000);
	check(wait_async(b.ctx, IBV_EVENT_SRQ_LIMIT_REACHED, 1000),
	      "SRQ_LIMIT_REACHED below the limit", "no async event");
	ibv_query_srq(srq, &lim);
	check(lim.srq_limit == 0, "the limit disarms after firing", "limit %u", lim.srq_limit);
	ibv_destroy_qp(b.qp);
	b.qp = NULL;
	ibv_destroy_srq(srq);
	pair_close(&a, &b);
}
