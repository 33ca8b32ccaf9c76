/* SPDX-License-Identifier: MIT */
/* The verbs_errors harness (see verbs_harness.h). */
#include "verbs_harness.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct ibv_device *dev;
int gid_index = -1;
union ibv_gid gid;
int failures, checks;

void die(const char *what)
{
	fprintf(stderr, "verbs_errors: set-up failed: %s: %s\n", what, strerror(errno));
	exit(2);
}

bool check(bool ok, const char *name, const char *fmt, ...)
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

double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

void side_open(struct side *s, int access)
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

void qp_open(struct side *s, enum ibv_qp_type type)
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

void side_close(struct side *s)
{
	if (s->qp)
		ibv_destroy_qp(s->qp);
	ibv_dereg_mr(s->mr);
	ibv_destroy_cq(s->cq);
	ibv_dealloc_pd(s->pd);
	ibv_close_device(s->ctx);
	free(s->buf);
}

struct conn conn_to(struct ibv_qp *peer)
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

int rc_connect(struct ibv_qp *qp, const struct conn *c)
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
void pair_open(struct side *a, struct side *b, int b_access, const struct conn *ca)
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

void pair_close(struct side *a, struct side *b)
{
	side_close(a);
	side_close(b);
}

/* Waits up to ms for one completion; 0 or -1 on timeout. */
int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, int ms)
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

bool wait_async(struct ibv_context *ctx, enum ibv_event_type type, int ms)
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

int post(struct side *s, enum ibv_wr_opcode op, struct ibv_sge *sge, int nsge, uint64_t raddr,
	 uint32_t rkey, unsigned int flags)
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

int post_recv(struct side *s, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = sge, .num_sge = nsge}, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

struct ibv_sge sge_of(struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge g = {.addr = (uintptr_t)s->buf + off, .length = len, .lkey = s->mr->lkey};

	return g;
}

enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr i;

	return ibv_query_qp(qp, &a, IBV_QP_STATE, &i) ? IBV_QPS_UNKNOWN : a.qp_state;
}

bool expect_wc(struct ibv_cq *cq, const char *name, enum ibv_wc_status st, int ms)
{
	struct ibv_wc wc;

	if (wait_wc(cq, &wc, ms))
		return check(false, name, "no completion within %d ms", ms);
	return check(wc.status == st, name, "status %s, expected %s", ibv_wc_status_str(wc.status),
		     ibv_wc_status_str(st));
}

int find_gid(struct ibv_context *ctx)
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
