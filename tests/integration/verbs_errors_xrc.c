/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: XRC (see verbs_errors.c). An XRC_SEND QP of one context
 * sends through an XRC_RECV QP of another into the XRC SRQ each message
 * names: the receive completes on the SRQ's CQ with the XRC_RECV QP's
 * number, a WRITE lands under the SRQ's PD, and an SRQ of another domain
 * is an invalid request. Neither XRC QP takes receives; the target sends
 * nothing; a domain in use does not close.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>

static struct ibv_xrcd *open_domain(struct ibv_context *ctx)
{
	struct ibv_xrcd_init_attr a = {.comp_mask =
					   IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
				       .fd = -1,
				       .oflags = O_CREAT};
	struct ibv_xrcd *x = ibv_open_xrcd(ctx, &a);

	if (!x)
		die("ibv_open_xrcd");
	return x;
}

static struct ibv_srq *xrc_srq(struct side *s, struct ibv_xrcd *x)
{
	struct ibv_srq_init_attr_ex a = {.attr = {.max_wr = 16, .max_sge = 1},
					 .comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
						      IBV_SRQ_INIT_ATTR_XRCD |
						      IBV_SRQ_INIT_ATTR_CQ | IBV_SRQ_INIT_ATTR_PD,
					 .srq_type = IBV_SRQT_XRC,
					 .pd = s->pd,
					 .xrcd = x,
					 .cq = s->cq};
	struct ibv_srq *srq = ibv_create_srq_ex(s->ctx, &a);

	if (!srq)
		die("ibv_create_srq_ex XRC");
	return srq;
}

static int xrc_post(struct ibv_qp *qp, enum ibv_wr_opcode op, struct ibv_sge *g, uint32_t srqn,
		    uint64_t raddr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.opcode = op;
	wr.sg_list = g;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	wr.qp_type.xrc.remote_srqn = srqn;
	return ibv_post_send(qp, &wr, &bad);
}

void test_xrc(void)
{
	struct side a, b;
	struct ibv_xrcd *x1, *x2;
	struct ibv_srq *s1, *s2;
	struct ibv_qp *ini, *tgt;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_recv_wr rwr = {0}, *rbad;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	struct conn c;
	uint32_t n1, n2;
	int rc;

	side_open(&a, ALL);
	side_open(&b, ALL);
	x1 = open_domain(b.ctx);
	x2 = open_domain(b.ctx);
	s1 = xrc_srq(&b, x1);
	s2 = xrc_srq(&b, x2);
	if (ibv_get_srq_num(s1, &n1) || ibv_get_srq_num(s2, &n2))
		die("ibv_get_srq_num");
	check(n1 != n2, "XRC: two SRQs, two numbers", "%u %u", n1, n2);

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_RECV;
	qa.comp_mask = IBV_QP_INIT_ATTR_XRCD;
	qa.xrcd = x1;
	tgt = ibv_create_qp_ex(b.ctx, &qa);
	if (!tgt)
		die("ibv_create_qp_ex XRC_RECV");
	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_XRC_SEND;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = a.pd;
	qa.send_cq = a.cq;
	qa.recv_cq = a.cq;
	qa.cap.max_send_wr = 16;
	qa.cap.max_send_sge = 1;
	ini = ibv_create_qp_ex(a.ctx, &qa);
	if (!ini)
		die("ibv_create_qp_ex XRC_SEND");
	rc = ibv_close_xrcd(x1);
	check(rc == EBUSY, "XRC: a domain with an SRQ and a QP does not close", "rc %d", rc);

	c = conn_to(tgt);
	if (rc_connect(ini, &c))
		die("XRC_SEND connect");
	c = conn_to(ini);
	if (rc_connect(tgt, &c))
		die("XRC_RECV connect");
	r = sge_of(&b, 0, 64);
	rc = ibv_post_recv(tgt, &rwr, &rbad);
	check(rc == EINVAL, "XRC: an XRC_RECV QP takes no receives", "rc %d", rc);
	g = sge_of(&b, 0, 64);
	rc = xrc_post(tgt, IBV_WR_SEND, &g, n1, 0, 0);
	check(rc == EINVAL, "XRC: an XRC_RECV QP sends nothing", "rc %d", rc);

	rwr.wr_id = 42;
	rwr.sg_list = &r;
	rwr.num_sge = 1;
	if (ibv_post_srq_recv(s1, &rwr, &rbad))
		die("ibv_post_srq_recv");
	g = sge_of(&a, 0, 64);
	memset(a.buf, 'X', 64);
	xrc_post(ini, IBV_WR_SEND, &g, n1, 0, 0);
	expect_wc(a.cq, "XRC: SEND to the domain's SRQ completes", IBV_WC_SUCCESS, 2000);
	check(!wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 42 &&
		  wc.qp_num == tgt->qp_num && wc.byte_len == 64 && b.buf[0] == 'X',
	      "XRC: the receive completes on the SRQ's CQ with the XRC_RECV QP's number",
	      "status %s wr_id %llu qp %u", ibv_wc_status_str(wc.status),
	      (unsigned long long)wc.wr_id, wc.qp_num);

	memset(a.buf, 'W', 64);
	xrc_post(ini, IBV_WR_RDMA_WRITE, &g, n1, (uintptr_t)b.buf + 1024, b.mr->rkey);
	expect_wc(a.cq, "XRC: WRITE under the SRQ's PD completes", IBV_WC_SUCCESS, 2000);
	check(b.buf[1024] == 'W' && b.buf[1087] == 'W', "XRC: the WRITE's bytes landed", "%d",
	      b.buf[1024]);

	xrc_post(ini, IBV_WR_SEND, &g, n2, 0, 0);
	expect_wc(a.cq, "XRC: SEND naming an SRQ of another domain -> REM_INV_REQ_ERR",
		  IBV_WC_REM_INV_REQ_ERR, 2000);

	ibv_destroy_qp(ini);
	ibv_destroy_qp(tgt);
	ibv_destroy_srq(s1);
	ibv_destroy_srq(s2);
	check(!ibv_close_xrcd(x1) && !ibv_close_xrcd(x2), "XRC: unused domains close", "%s", "");
	side_close(&a);
	side_close(&b);
}
