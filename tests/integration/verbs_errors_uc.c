/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: UC, the unreliable connection (see verbs_errors.c). No ACK
 * comes back, so the requester's WRs complete successfully whatever the
 * responder makes of them: a WRITE with a bad rkey is dropped (no NAK, the
 * responder's QP stays up), a SEND finding no receive is dropped (no RNR);
 * what the responder takes lands as on RC. RDMA READ and atomics do not
 * exist on UC: post_send refuses them.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <string.h>

/* INIT, RTR, RTS with only the attributes UC has (no timers, retries, RD atomics). */
static int uc_connect(struct ibv_qp *qp, uint32_t dest_qpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = PORT;
	if (ibv_modify_qp(qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

void test_uc(void)
{
	struct side a, b;
	struct ibv_qp_attr attr;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	int rc;

	side_open(&a, ALL);
	side_open(&b, ALL);
	qp_open(&a, IBV_QPT_UC);
	qp_open(&b, IBV_QPT_UC);
	/* RC's RTR attributes include some UC does not have: refused. */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.port_num = PORT;
	ibv_modify_qp(a.qp, &attr,
		      IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = IBV_MTU_1024;
	attr.ah_attr.is_global = 1;
	attr.ah_attr.grh.dgid = gid;
	attr.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	rc = ibv_modify_qp(a.qp, &attr,
			   IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC);
	check(rc == EINVAL, "UC: RTR with MAX_DEST_RD_ATOMIC -> EINVAL", "rc %d", rc);
	attr.qp_state = IBV_QPS_RESET;
	ibv_modify_qp(a.qp, &attr, IBV_QP_STATE);
	if (uc_connect(a.qp, b.qp->qp_num) || uc_connect(b.qp, a.qp->qp_num))
		die("UC connect");

	g = sge_of(&a, 0, 256);
	memset(a.buf, 'U', 256);
	rc = post(&a, IBV_WR_RDMA_READ, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	check(rc == EINVAL, "UC: RDMA READ refused by post_send", "rc %d", rc);

	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey ^ 0x55, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "UC: WRITE with a bad rkey completes (no NAK on UC)", IBV_WC_SUCCESS, 2000);
	check(qp_state(b.qp) == IBV_QPS_RTS && b.buf[0] == 0,
	      "UC: the bad WRITE is dropped, the responder's QP stays in RTS", "state %d, byte %d",
	      qp_state(b.qp), b.buf[0]);

	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "UC: SEND with no receive posted completes (no RNR on UC)", IBV_WC_SUCCESS,
		  2000);
	r = sge_of(&b, 4096, 4096);
	post_recv(&b, 7, &r, 1);
	check(wait_wc(b.cq, &wc, 100) != 0, "UC: the dropped SEND does not take a later receive",
	      "a completion came: wr_id %llu", (unsigned long long)wc.wr_id);

	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "UC: WRITE completes", IBV_WC_SUCCESS, 2000);
	check(b.buf[0] == 'U' && b.buf[255] == 'U' && b.buf[256] == 0,
	      "UC: the WRITE's bytes landed", "bytes %d %d %d", b.buf[0], b.buf[255], b.buf[256]);
	memset(a.buf, 'S', 256);
	post(&a, IBV_WR_SEND_WITH_IMM, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "UC: SEND_WITH_IMM completes", IBV_WC_SUCCESS, 2000);
	check(!wait_wc(b.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 7 &&
		  wc.opcode == IBV_WC_RECV && wc.byte_len == 256 &&
		  (wc.wc_flags & IBV_WC_WITH_IMM) && b.buf[4096] == 'S',
	      "UC: the SEND lands in the receive posted after the dropped one",
	      "status %s wr_id %llu", ibv_wc_status_str(wc.status), (unsigned long long)wc.wr_id);
	pair_close(&a, &b);
}
