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
 * processes and then kill it: the survivor must get errors, not hang.
 */
#include <infiniband/verbs.h>

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BUF 65536
#define PORT 1
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)
#define ALL (RW | IBV_ACCESS_REMOTE_ATOMIC)

static struct ibv_device *dev;
static int gid_index = -1;
static union ibv_gid gid;
static int failures, checks;

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
};

struct conn {
	int access;
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint32_t dest_qpn;
	union ibv_gid dgid;
};

static void die(const char *what)
{
	fprintf(stderr, "verbs_errors: set-up failed: %s: %s\n", what, strerror(errno));
	exit(2);
}

static bool check(bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	checks++;
	if (ok) {
		printf("ok   %s\n", name);
		return true;
	}
	failures++;
	printf("FAIL %s: ", name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void side_open(struct side *s, int access)
{
	memset(s, 0, sizeof(*s));
	s->ctx = ibv_open_device(dev);
	if (!s->ctx)
		die("ibv_open_device");
	s->pd = ibv_alloc_pd(s->ctx);
	if (!s->pd)
		die("ibv_alloc_pd");
	s->cq = ibv_create_cq(s->ctx, 256, NULL, NULL, 0);
	if (!s->cq)
		die("ibv_create_cq");
	if (posix_memalign((void **)&s->buf, 4096, BUF))
		die("posix_memalign");
	memset(s->buf, 0, BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, BUF, access);
	if (!s->mr)
		die("ibv_reg_mr");
}

static void qp_open(struct side *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = s->cq,
	    .recv_cq = s->cq,
	    .cap = {.max_send_wr = 64,
		    .max_recv_wr = 64,
		    .max_send_sge = 4,
		    .max_recv_sge = 4,
		    .max_inline_data = 64},
	    .qp_type = type,
	};

	s->qp = ibv_create_qp(s->pd, &a);
	if (!s->qp)
		die("ibv_create_qp");
}

static void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

static struct conn conn_to(struct ibv_qp *peer)
{
	struct conn c = {.access = ALL,
			 .timeout = 14,
			 .retry_cnt = 7,
			 .rnr_retry = 7,
			 .min_rnr_timer = 12,
			 .dest_qpn = peer ? peer->qp_num : 0,
			 .dgid = gid};

	return c;
}

static int rc_connect(struct ibv_qp *qp, const struct conn *c)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qp_access_flags = c->access;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = c->dest_qpn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = c->min_rnr_timer;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = c->dgid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = PORT;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = c->timeout;
	a.retry_cnt = c->retry_cnt;
	a.rnr_retry = c->rnr_retry;
	a.max_rd_atomic = 4;
	return ibv_modify_qp(qp, &a,
			     IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Two fresh sides of two contexts, RC-connected to each other. */
static void pair_open(struct side *a, struct side *b, int b_access, const struct conn *ca)
{
	struct conn c;

	side_open(a, ALL);
	side_open(b, b_access);
	qp_open(a, IBV_QPT_RC);
	qp_open(b, IBV_QPT_RC);
	c = ca ? *ca : conn_to(b->qp);
	c.dest_qpn = b->qp->qp_num;
	if (rc_connect(a->qp, &c))
		die("connect a");
	c = conn_to(a->qp);
	if (rc_connect(b->qp, &c))
		die("connect b");
}

static void pair_close(struct side *a, struct side *b)
{
	side_close(a);
	side_close(b);
}

/* Waits up to ms for one completion; 0 or -1 on timeout. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
{
	double end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n == 1)
			return 0;
	} while (now_ms() < end);
	return -1;
}

static bool wait_async(struct ibv_context *ctx, enum ibv_event_type type, int ms)
{
	struct pollfd p = {.fd = ctx->async_fd, .events = POLLIN};
	struct ibv_async_event ev;
	double end = now_ms() + ms;

	while (now_ms() < end) {
		if (poll(&p, 1, (int)(end - now_ms()) + 1) <= 0)
			return false;
		if (ibv_get_async_event(ctx, &ev))
			return false;
		ibv_ack_async_event(&ev);
		if (ev.event_type == type)
			return true;
	}
	return false;
}

static int post(struct side *s, enum ibv_wr_opcode op, struct ibv_sge *sge, int nsge,
		uint64_t raddr, uint32_t rkey, unsigned int flags)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x1000 + op;
	wr.opcode = op;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

static int post_recv(struct side *s, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = nsge}, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

static struct ibv_sge sge_of(struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge g = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};

	return g;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &i) ? IBV_QPS_UNKNOWN : a.qp_state;
}

static bool expect_wc(struct ibv_cq *cq, const char *name, enum ibv_wc_status st, int ms)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc, ms))
		return check(false, name, "no completion within %d ms", ms);
	return check(wc.status == st, name, "status %s, expected %s", ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(st));
}

/* ---- error statuses ---- */

static void test_loc_prot(void)
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

static void test_rem_access(void)
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
}

static void test_receive_errors(void)
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

static void test_rnr(void)
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

static void test_retry_exceeded(void)
{
	struct side a;
	struct conn c;
	struct ibv_sge g;
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
	expect_wc(a.cq, "WRITE to a QPN nobody has -> RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR, 5000);
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

static void test_flush(void)
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

static void test_bad_post(void)
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

/* ---- data correctness ---- */

static void test_send_variants(void)
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

static void test_rdma_and_atomics(void)
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

static void test_comp_channel(void)
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

static void test_ud(void)
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

/* ---- across processes ---- */

static int peer_main(void)
{
	struct side s;
	struct conn c;
	unsigned int qpn;
	char line[128];
	struct ibv_wc wc;
	struct ibv_sge r;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	for (int i = 0; i < 4096; i++)
		s.buf[32768 + i] = (char)(255 - i);
	printf("%u %u %lu\n", s.qp->qp_num, s.mr->rkey, (unsigned long)(uintptr_t)s.buf);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || sscanf(line, "%u", &qpn) != 1)
		return 2;
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	if (rc_connect(s.qp, &c))
		return 2;
	r = sge_of(&s, 4096, 4096);
	post_recv(&s, 1, &r, 1);
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		bool ok = false;

		if (!strncmp(line, "check-write", 11))
			ok = s.buf[0] == 'W' && s.buf[2047] == 'W' && s.buf[2048] == 0;
		else if (!strncmp(line, "check-send", 10))
			ok = !wait_wc(s.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
			     wc.byte_len == 3000 && s.buf[4096] == 'S' && s.buf[4096 + 2999] == 'S';
		puts(ok ? "ok" : "bad");
		fflush(stdout);
	}
	return 0;
}

static void test_cross_process(const char *self)
{
	int to_peer[2], from_peer[2], status;
	unsigned int qpn, rkey;
	unsigned long addr;
	char line[128], gidx[16];
	struct side a;
	struct conn c;
	struct ibv_sge g;
	struct ibv_wc wc;
	FILE *in, *out;
	pid_t pid;
	double t0;

	if (pipe(to_peer) || pipe(from_peer))
		die("pipe");
	snprintf(gidx, sizeof(gidx), "%d", gid_index);
	pid = fork();
	if (pid == 0) {
		dup2(to_peer[0], 0);
		dup2(from_peer[1], 1);
		execl(self, self, "--peer", "-d", ibv_get_device_name(dev), "-g", gidx,
		      (char *)NULL);
		_exit(127);
	}
	close(to_peer[0]);
	close(from_peer[1]);
	out = fdopen(to_peer[1], "w");
	in = fdopen(from_peer[0], "r");
	if (!fgets(line, sizeof(line), in) || sscanf(line, "%u %u %lu", &qpn, &rkey, &addr) != 3)
		die("peer start");
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	c.timeout = 10; /* 4.2 ms */
	c.retry_cnt = 2;
	if (rc_connect(a.qp, &c))
		die("connect to peer");
	fprintf(out, "%u\n", a.qp->qp_num);
	fflush(out);
	if (!fgets(line, sizeof(line), in))
		die("peer ready");

	memset(a.buf, 'W', 2048);
	g = sge_of(&a, 0, 2048);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE to another process completes", IBV_WC_SUCCESS, 1000);
	fputs("check-write\n", out);
	fflush(out);
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "WRITE bytes arrive in the other process", "peer says %s", line);

	memset(a.buf, 'S', 3000);
	g = sge_of(&a, 0, 3000);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND to another process completes", IBV_WC_SUCCESS, 1000);
	fputs("check-send\n", out);
	fflush(out);
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "SEND bytes and completion arrive in the other process", "peer says %s", line);

	g = sge_of(&a, 8192, 4096);
	post(&a, IBV_WR_RDMA_READ, &g, 1, addr + 32768, rkey, IBV_SEND_SIGNALED);
	check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  (unsigned char)a.buf[8192] == 255 && (unsigned char)a.buf[8192 + 4095] == 0,
	      "READ from another process", "wrong READ completion or data");

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	g = sge_of(&a, 0, 64);
	t0 = now_ms();
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE to a killed peer -> RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR, 5000);
	check(now_ms() - t0 < 1000, "the survivor is not held up", "took %.1f ms", now_ms() - t0);
	fclose(in);
	fclose(out);
	side_close(&a);
}

static int find_gid(struct ibv_context *ctx)
{
	struct ibv_port_attr pa;
	int i;

	if (ibv_query_port(ctx, PORT, &pa))
		return -1;
	for (i = 0; i < pa.gid_tbl_len; i++) {
		struct ibv_gid_entry e;

		if (ibv_query_gid_ex(ctx, PORT, (uint32_t)i, &e, 0))
			continue;
		if (e.gid_type == IBV_GID_TYPE_ROCE_V2 && e.gid.raw[10] == 0xff &&
		    e.gid.raw[11] == 0xff)
			return i;
	}
	return -1;
}

int main(int argc, char **argv)
{
	const char *want = NULL;
	struct ibv_device **list;
	struct ibv_context *ctx;
	bool peer = false;
	int i, opt;

	static const struct option longopts[] = {{"peer", no_argument, NULL, 'P'}, {0}};

	while ((opt = getopt_long(argc, argv, "d:g:", longopts, NULL)) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'P')
			peer = true;
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

	printf("# %s, GID index %d\n", ibv_get_device_name(dev), gid_index);
	test_bad_post();
	test_loc_prot();
	test_rem_access();
	test_receive_errors();
	test_rnr();
	test_retry_exceeded();
	test_flush();
	test_send_variants();
	test_rdma_and_atomics();
	test_comp_channel();
	test_ud();
	test_cross_process("/proc/self/exe");
	ibv_free_device_list(list);
	printf("# %d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
