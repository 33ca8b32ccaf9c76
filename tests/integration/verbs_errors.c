/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: checks, through the public libibverbs API only, that a vfab
 * HCA completes work requests with the statuses real hardware gives and
 * moves the right bytes.
 *
 * Usage, inside a node:   vfab exec node0 -- verbs_errors [-d DEV] [-g GIDX]
 *   DEV   device (default: the first one), GIDX GID index (default: the
 *         first RoCE v2 IPv4 GID of port 1).
 * Prints one "ok"/"FAIL" line per check; exits 0 when all pass, 1 otherwise,
 * 2 when the set-up itself fails.
 *
 * Most checks connect two QPs of two contexts of this process. The last ones
 * start a peer process (this program with --peer) to move bytes between
 * processes and then kill it: the survivor must get errors, not hang; then
 * chains of WRITEs go to another peer (--chain-peer), and the node's port
 * is taken down and up again through vfabd (needs root).
 * This file has the error statuses and main(); verbs_errors_data.c the data
 * checks, verbs_errors_peer.c the peer process, verbs_errors_chain.c the
 * chains, verbs_errors_port.c the port events, verbs_harness.c the set-up.
 */
#include "verbs_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void test_loc_prot(void)
{
	struct side a, b;
	struct ibv_sge g;

	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 64);
	g.lkey ^= 0x100; /* another slot's key */
	/* Unsignaled: an error completes anyway. */
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, 0);
	expect_wc(a.cq, "bad lkey -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR, 1000);
	check(qp_state(a.qp) == IBV_QPS_ERR, "requester in ERR after LOC_PROT_ERR", "state %d",
	      qp_state(a.qp));
	g = sge_of(&a, BUF - 8, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "post on ERR QP -> WR_FLUSH_ERR", IBV_WC_WR_FLUSH_ERR, 1000);
	pair_close(&a, &b);

	/* READ into memory without LOCAL_WRITE. */
	pair_open(&a, &b, ALL, NULL);
	ibv_dereg_mr(a.mr);
	a.mr = ibv_reg_mr(a.pd, a.buf, BUF, IBV_ACCESS_REMOTE_READ);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_READ, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "READ into read-only MR -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR, 1000);
	pair_close(&a, &b);
}

void test_rem_access(void)
{
	struct side a, b;
	struct ibv_sge g;

	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey ^ 0x100, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "bad rkey -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 1000);
	check(wait_async(b.ctx, IBV_EVENT_QP_ACCESS_ERR, 1000), "responder gets QP_ACCESS_ERR",
	      "no async event");
	check(qp_state(b.qp) == IBV_QPS_ERR, "responder in ERR after access error", "state %d",
	      qp_state(b.qp));
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf + BUF - 32, b.mr->rkey,
	     IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE past the MR end -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 1000);
	pair_close(&a, &b);

	pair_open(&a, &b, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, NULL);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE to MR without REMOTE_WRITE -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR,
		  1000);
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 8);
	{
		struct ibv_send_wr wr = {.wr_id = 7,
					 .sg_list = &g,
					 .num_sge = 1,
					 .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
					 .send_flags = IBV_SEND_SIGNALED},
				   *bad;

		wr.wr.atomic.remote_addr = (uintptr_t)b.buf + 4;
		wr.wr.atomic.rkey = b.mr->rkey;
		wr.wr.atomic.compare_add = 1;
		ibv_post_send(a.qp, &wr, &bad);
	}
	expect_wc(a.cq, "misaligned atomic -> REM_INV_REQ_ERR", IBV_WC_REM_INV_REQ_ERR, 1000);
	pair_close(&a, &b);

	/*
	 * A registered buffer its process has unmapped (issue 27 #7): an HCA
	 * writes the pinned pages; vfab cannot pin and reports an access outside
	 * any MR, never a SIGSEGV of the copying thread (here the same process).
	 */
	pair_open(&a, &b, ALL, NULL);
	{
		char *gone =
		    mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		struct ibv_mr *mr = gone == MAP_FAILED ? NULL : ibv_reg_mr(b.pd, gone, 4096, ALL);

		if (!mr)
			die("ibv_reg_mr of an mmap'd page");
		munmap(gone, 4096);
		g = sge_of(&a, 0, 64);
		post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)gone, mr->rkey, IBV_SEND_SIGNALED);
		expect_wc(a.cq, "WRITE into a registered, unmapped buffer -> REM_ACCESS_ERR",
			  IBV_WC_REM_ACCESS_ERR, 1000);
		ibv_dereg_mr(mr);
	}
	pair_close(&a, &b);
}

void test_receive_errors(void)
{
	struct side a, b;
	struct ibv_sge g, r;
	struct ibv_wc wc;

	pair_open(&a, &b, ALL, NULL);
	r = sge_of(&b, 0, 16);
	post_recv(&b, 21, &r, 1);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND into a too small buffer -> REM_INV_REQ_ERR", IBV_WC_REM_INV_REQ_ERR,
		  1000);
	expect_wc(b.cq, "receiver of a too long SEND -> LOC_LEN_ERR", IBV_WC_LOC_LEN_ERR, 1000);
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	r = sge_of(&b, 0, 64);
	r.lkey ^= 0x100;
	post_recv(&b, 22, &r, 1);
	post_recv(&b, 23, &r, 1);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND into a bad receive lkey -> REM_OP_ERR", IBV_WC_REM_OP_ERR, 1000);
	expect_wc(b.cq, "receive with a bad lkey -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR, 1000);
	if (!wait_wc(b.cq, &wc, 1000))
		check(wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 23,
		      "the next receive is flushed", "status %s wr_id %lu",
		      ibv_wc_status_str(wc.status), (unsigned long)wc.wr_id);
	else
		check(false, "the next receive is flushed", "no completion");
	pair_close(&a, &b);
}

void test_rnr(void)
{
	struct side a, b;
	struct conn c;
	struct ibv_sge g;
	double t0;

	side_open(&b, ALL);
	qp_open(&b, IBV_QPT_RC);
	c = conn_to(NULL);
	c.rnr_retry = 1;
	c.min_rnr_timer = 1; /* 0.01 ms */
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c.dest_qpn = b.qp->qp_num;
	if (rc_connect(a.qp, &c))
		die("connect");
	c = conn_to(a.qp);
	c.min_rnr_timer = 1;
	if (rc_connect(b.qp, &c))
		die("connect");
	g = sge_of(&a, 0, 64);
	t0 = now_ms();
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND with no receive posted -> RNR_RETRY_EXC_ERR",
		  IBV_WC_RNR_RETRY_EXC_ERR, 2000);
	check(now_ms() - t0 < 1000, "RNR retries end quickly", "took %.1f ms", now_ms() - t0);
	pair_close(&a, &b);
}

void test_retry_exceeded(void)
{
	struct side a;
	struct conn c;
	struct ibv_sge g;
	struct ibv_wc wc;
	double t0, ms;

	/* A QPN nothing answers: timeout 8 (1.05 ms), one retry. */
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = 0x7fffff;
	c.timeout = 8;
	c.retry_cnt = 1;
	if (rc_connect(a.qp, &c))
		die("connect");
	g = sge_of(&a, 0, 64);
	t0 = now_ms();
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, 0x1000, 0x1234, IBV_SEND_SIGNALED);
	if (wait_wc(a.cq, &wc, 5000))
		check(false, "WRITE to a QPN nobody has -> RETRY_EXC_ERR", "no completion");
	else
		check(wc.status == IBV_WC_RETRY_EXC_ERR && wc.vendor_err == 0x81,
		      "WRITE to a QPN nobody has -> RETRY_EXC_ERR, vendor_err 0x81 (libmlx5's)",
		      "status %s, vendor_err 0x%x", ibv_wc_status_str(wc.status), wc.vendor_err);
	ms = now_ms() - t0;
	check(ms >= 2.0 && ms < 1000, "retries take (retry_cnt+1) x 4.096us x 2^timeout",
	      "took %.2f ms, expected about 2.1", ms);
	side_close(&a);

	/* A GID nobody owns (a wrong GID index on a real fabric ends like this). */
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = 0x123;
	c.timeout = 8;
	c.retry_cnt = 1;
	inet_pton(AF_INET6, "::ffff:198.18.0.250", &c.dgid);
	if (rc_connect(a.qp, &c))
		die("connect");
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND to an unknown GID -> RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR, 5000);
	side_close(&a);
}

void test_flush(void)
{
	struct side a, b;
	struct ibv_qp_attr attr = {.qp_state = IBV_QPS_ERR};
	struct ibv_sge r;
	struct ibv_wc wc;
	int i, flushed = 0;

	pair_open(&a, &b, ALL, NULL);
	r = sge_of(&b, 0, 64);
	for (i = 0; i < 3; i++)
		post_recv(&b, 100 + i, &r, 1);
	if (ibv_modify_qp(b.qp, &attr, IBV_QP_STATE))
		die("modify to ERR");
	for (i = 0; i < 3; i++)
		if (!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_WR_FLUSH_ERR &&
		    wc.opcode == IBV_WC_RECV && wc.wr_id == (uint64_t)(100 + i))
			flushed++;
	check(flushed == 3, "receives flushed in order when the QP enters ERR", "%d of 3 flushed",
	      flushed);
	post_recv(&b, 200, &r, 1);
	check(!wait_wc(b.cq, &wc, 1000) && wc.status == IBV_WC_WR_FLUSH_ERR && wc.wr_id == 200,
	      "receive posted to an ERR QP is flushed", "no flush completion");
	pair_close(&a, &b);
}

/*
 * An empty source GID index: the kernel's rdma_get_gid_attr answers ENODATA,
 * which ibv_modify_qp (to RTR) and ibv_create_ah return.
 */
static void test_empty_gid(void)
{
	struct ibv_port_attr pa;
	struct ibv_qp_attr a;
	struct ibv_ah_attr ah = {.is_global = 1, .port_num = PORT};
	struct ibv_gid_entry e;
	struct ibv_ah *h;
	struct side s;
	int empty = -1, rc;

	side_open(&s, ALL);
	if (ibv_query_port(s.ctx, PORT, &pa))
		die("ibv_query_port");
	for (int i = pa.gid_tbl_len - 1; i > 0 && empty < 0; i--)
		if (ibv_query_gid_ex(s.ctx, PORT, (uint32_t)i, &e, 0))
			empty = i;
	if (empty < 0)
		die("no empty GID index");
	qp_open(&s, IBV_QPT_RC);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qp_access_flags = ALL;
	if (ibv_modify_qp(s.qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = s.qp->qp_num;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = (uint8_t)empty;
	a.ah_attr.port_num = PORT;
	rc = ibv_modify_qp(s.qp, &a,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	check(rc == ENODATA, "modify_qp to RTR with an empty GID index -> ENODATA", "rc %d", rc);
	ah.grh.dgid = gid;
	ah.grh.sgid_index = (uint8_t)empty;
	errno = 0;
	h = ibv_create_ah(s.pd, &ah);
	check(!h && errno == ENODATA, "create_ah with an empty GID index -> ENODATA",
	      "ah %p errno %d", (void *)h, errno);
	if (h)
		ibv_destroy_ah(h);
	side_close(&s);
}

void test_bad_post(void)
{
	struct side a;
	struct ibv_send_wr wr = {.opcode = IBV_WR_SEND}, *bad = NULL;
	int rc;

	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	rc = ibv_post_send(a.qp, &wr, &bad);
	check(rc == EINVAL && bad == &wr, "post_send in RESET -> EINVAL and bad_wr", "rc %d", rc);
	side_close(&a);
}

/*
 * A receive queue holds max_recv_wr WQEs; one more is ENOMEM until a
 * receive has completed and been polled (libmlx5 frees its slots at poll).
 * Then the ring goes round several times, one receive posted per message
 * polled, each completing in order with its own bytes.
 */
static void test_rq_depth(void)
{
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr attr;
	struct ibv_recv_wr rwr, *bad = NULL;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	struct side a, b;
	uint32_t depth, i, posted = 0, wrong = 0;
	int rc = 0;

	pair_open(&a, &b, ALL, NULL);
	if (ibv_query_qp(b.qp, &attr, IBV_QP_CAP, &init))
		die("ibv_query_qp");
	depth = attr.cap.max_recv_wr;
	r = sge_of(&b, 0, 8);
	for (i = 0; i < depth && !rc; i++)
		rc = post_recv(&b, posted++, &r, 1);
	check(rc == 0, "max_recv_wr receives posted", "rc %d after %u of %u", rc, i, depth);
	rwr = (struct ibv_recv_wr){.wr_id = 999, .sg_list = &r, .num_sge = 1};
	rc = ibv_post_recv(b.qp, &rwr, &bad);
	check(rc == ENOMEM && bad == &rwr, "one receive more than max_recv_wr -> ENOMEM", "rc %d",
	      rc);
	for (i = 0; i < 3 * depth; i++) {
		memcpy(a.buf + 64, &i, sizeof(i));
		g = sge_of(&a, 64, sizeof(i));
		if (post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED) ||
		    wait_wc(a.cq, &wc, 1000) || wc.status != IBV_WC_SUCCESS ||
		    wait_wc(b.cq, &wc, 1000) || wc.status != IBV_WC_SUCCESS || wc.wr_id != i ||
		    memcmp(b.buf, &i, sizeof(i)))
			wrong++;
		rc = post_recv(&b, posted++, &r, 1);
		if (rc || wrong)
			break;
		if (i == 0) {
			rc = ibv_post_recv(b.qp, &rwr, &bad);
			check(rc == ENOMEM, "full again after one receive polled and reposted",
			      "rc %d", rc);
			rc = 0;
		}
	}
	check(!rc && !wrong && i == 3 * depth,
	      "the receive queue goes round 3 times, a receive posted per one polled",
	      "stopped at message %u of %u: post rc %d, %u wrong", i, 3 * depth, rc, wrong);
	pair_close(&a, &b);
}

/* The inline room libmlx5 gives a QP: what its WQE leaves (default RC ops count MW binds). */
static void test_inline_cap(void)
{
	static const struct {
		enum ibv_qp_type type;
		uint32_t sge, want, got;
	} cases[] = {{IBV_QPT_RC, 1, 0, 60}, {IBV_QPT_RC, 1, 64, 124}, {IBV_QPT_UD, 1, 0, 60}};
	struct side s;

	side_open(&s, ALL);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct ibv_qp_init_attr a = {.send_cq = s.cq,
					     .recv_cq = s.cq,
					     .cap = {.max_send_wr = 8,
						     .max_recv_wr = 8,
						     .max_send_sge = cases[i].sge,
						     .max_recv_sge = 1,
						     .max_inline_data = cases[i].want},
					     .qp_type = cases[i].type};
		struct ibv_qp *qp = ibv_create_qp(s.pd, &a);

		check(qp && a.cap.max_inline_data == cases[i].got,
		      "max_inline_data reported as a ConnectX's (RC 1 SGE: 60, asked 64: 124, UD: "
		      "60)",
		      "%s, %u SGE, asked %u: got %u, want %u",
		      cases[i].type == IBV_QPT_UD ? "UD" : "RC", cases[i].sge, cases[i].want,
		      qp ? a.cap.max_inline_data : 0, cases[i].got);
		if (qp)
			ibv_destroy_qp(qp);
	}
	side_close(&s);
}

int main(int argc, char **argv)
{
	const char *want = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx;
	bool peer = false, chain_peer = false;
	int i, opt;

	static const struct option longopts[] = {
	    {"peer", no_argument, NULL, 'P'}, {"chain-peer", no_argument, NULL, 'C'}, {0}};

	while ((opt = getopt_long(argc, argv, "d:g:", longopts, NULL)) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'P')
			peer = true;
		else if (opt == 'C')
			chain_peer = true;
		else
			return fprintf(stderr, "usage: %s [-d DEV] [-g GID_INDEX]\n", argv[0]), 2;
	}
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no RDMA device");
	for (i = 0; list[i]; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	dev = list[i];
	if (!dev)
		die("device not found");
	ctx = ibv_open_device(dev);
	if (!ctx)
		die("ibv_open_device");
	if (gid_index < 0)
		gid_index = find_gid(ctx);
	if (gid_index < 0 || ibv_query_gid(ctx, PORT, gid_index, &gid))
		die("no RoCE v2 IPv4 GID");
	ibv_close_device(ctx);
	if (peer)
		return peer_main();
	if (chain_peer)
		return chain_peer_main();

	printf("# %s, GID index %d\n", ibv_get_device_name(dev), gid_index);
	test_bad_post();
	test_rq_depth();
	test_inline_cap();
	test_empty_gid();
	test_loc_prot();
	test_rem_access();
	test_receive_errors();
	test_rnr();
	test_retry_exceeded();
	test_flush();
	test_error_counters();
	test_timestamps();
	test_resize_cq();
	test_scatter_cqe();
	test_rereg();
	test_mw();
	test_odp();
	test_parent_domain();
	test_send_variants();
	test_rdma_and_atomics();
	test_rnr_order();
	test_cq_overflow();
	test_srq_limit();
	test_comp_channel();
	test_ud();
	test_uc();
	test_xrc();
	test_dm();
	test_raw();
	test_tm();
	test_cross_process("/proc/self/exe");
	test_chains("/proc/self/exe");
	test_port_down();
	ibv_free_device_list(list);
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
