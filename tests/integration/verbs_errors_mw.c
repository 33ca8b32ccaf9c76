/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: memory windows. b binds a window over part of its MR (type
 * 2 by IBV_WR_BIND_MW, type 1 by ibv_bind_mw); a's WRITEs and READs through
 * its rkey land inside it and fail just outside (REM_ACCESS_ERR, though the
 * MR holds those bytes); after LOCAL_INV or a's SEND_WITH_INV the rkey is
 * dead; a bind past the MR or on an MR without MW_BIND is IBV_WC_MW_BIND_ERR;
 * a window's key is no lkey (LOC_PROT_ERR).
 */
#include "verbs_harness.h"

#include <stdio.h>
#include <string.h>

#define WIN_OFF 4096u
#define WIN_LEN 4096u
#define MWB (ALL | IBV_ACCESS_MW_BIND)
#define WIN_RIGHTS (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

/* The next completion of cq: its status and opcode as expected. */
static void expect_op(struct ibv_cq *cq, const char *name, enum ibv_wc_status st,
		      enum ibv_wc_opcode op, struct ibv_wc *out)
{
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	if (wait_wc(cq, &wc, 1000)) {
		check(false, name, "no completion");
		return;
	}
	check(wc.status == st && (st != IBV_WC_SUCCESS || wc.opcode == op), name,
	      "status %s opcode %d", ibv_wc_status_str(wc.status), wc.opcode);
	if (out)
		*out = wc;
}

/* b binds type 2 window mw to [off, off+len) of its MR through its QP; the new rkey. */
static uint32_t bind2(struct side *b, struct ibv_mw *mw, size_t off, uint64_t len, int rights)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0xb1d;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = b->mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)b->buf + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = (unsigned int)rights;
	if (ibv_post_send(b->qp, &wr, &bad))
		die("post BIND_MW");
	return wr.bind_mw.rkey;
}

static void rdma(struct side *a, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge g = sge_of(a, 0, 8);

	if (post(a, op, &g, 1, raddr, rkey, IBV_SEND_SIGNALED))
		die("post RDMA");
}

/* a adds 5 to the 8 bytes at raddr of b. */
static void atomic_add(struct side *a, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge g = sge_of(a, 0, 8);
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.sg_list = &g;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = 5;
	if (ibv_post_send(a->qp, &wr, &bad))
		die("post FETCH_ADD");
}

static struct ibv_mw *alloc_mw(struct side *s, enum ibv_mw_type type)
{
	struct ibv_mw *mw = ibv_alloc_mw(s->pd, type);

	if (!mw)
		die("ibv_alloc_mw");
	return mw;
}

static void test_caps(void)
{
	struct side a, b;
	struct ibv_device_attr attr;

	pair_open(&a, &b, MWB, NULL);
	check(!ibv_query_device(b.ctx, &attr) && (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW) &&
		  (attr.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B) && attr.max_mw > 0,
	      "device reports MEM_WINDOW | MEM_WINDOW_TYPE_2B", "flags 0x%x max_mw %d",
	      attr.device_cap_flags, attr.max_mw);
	check(ibv_alloc_mw(b.pd, (enum ibv_mw_type)3) == NULL, "alloc_mw of type 3 fails", "%s",
	      "it succeeded");
	pair_close(&a, &b);
}

/* A type 2 window: inside works (WRITE, READ), one byte before it does not. */
static void test_type2_range(void)
{
	struct side a, b;
	struct ibv_mw *mw;
	uint32_t rkey;
	char *win;

	pair_open(&a, &b, MWB, NULL);
	win = b.buf + WIN_OFF;
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	rkey = bind2(&b, mw, WIN_OFF, WIN_LEN, WIN_RIGHTS);
	expect_op(b.cq, "type 2 bind -> IBV_WC_BIND_MW", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	a.buf[0] = 0x51;
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)win, rkey);
	expect_op(a.cq, "WRITE inside the window", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	check(win[0] == 0x51, "its byte is there", "got 0x%x", (unsigned)win[0]);
	win[WIN_LEN - 8] = 0x52;
	rdma(&a, IBV_WR_RDMA_READ, (uintptr_t)win + WIN_LEN - 8, rkey);
	expect_op(a.cq, "READ of the window's last bytes", IBV_WC_SUCCESS, IBV_WC_RDMA_READ, NULL);
	check(a.buf[0] == 0x52, "the byte read", "got 0x%x", (unsigned)a.buf[0]);
	atomic_add(&a, (uintptr_t)win + 64, rkey);
	expect_op(a.cq, "an atomic without the window's REMOTE_ATOMIC -> REM_ACCESS_ERR",
		  IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);

	pair_open(&a, &b, MWB, NULL);
	win = b.buf + WIN_OFF;
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	rkey = bind2(&b, mw, WIN_OFF, WIN_LEN, WIN_RIGHTS | IBV_ACCESS_REMOTE_ATOMIC);
	expect_op(b.cq, "type 2 bind with REMOTE_ATOMIC", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	memset(win + 64, 0, 8);
	atomic_add(&a, (uintptr_t)win + 64, rkey);
	expect_op(a.cq, "FETCH_ADD inside the window", IBV_WC_SUCCESS, IBV_WC_FETCH_ADD, NULL);
	check(win[64] == 5, "the sum is there", "got %d", win[64]);
	rdma(&a, IBV_WR_RDMA_READ, (uintptr_t)win + WIN_LEN - 4, rkey);
	expect_op(a.cq, "READ across the window's end -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 0,
		  NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);

	pair_open(&a, &b, MWB, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	rkey = bind2(&b, mw, WIN_OFF, WIN_LEN, WIN_RIGHTS);
	expect_op(b.cq, "type 2 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	b.buf[WIN_OFF - 8] = 0;
	a.buf[0] = 0x53;
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)b.buf + WIN_OFF - 8, rkey);
	expect_op(a.cq, "WRITE just before the window -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 0,
		  NULL);
	check(b.buf[WIN_OFF - 8] == 0, "nothing landed", "got 0x%x", (unsigned)b.buf[WIN_OFF - 8]);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);
}

/* LOCAL_INV by b, or SEND_WITH_INV by a: the rkey then fails. */
static void test_invalidate(bool remote)
{
	struct side a, b;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge g;
	struct ibv_wc wc;
	struct ibv_mw *mw;
	uint32_t rkey;

	pair_open(&a, &b, MWB, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	rkey = bind2(&b, mw, WIN_OFF, WIN_LEN, WIN_RIGHTS);
	expect_op(b.cq, "type 2 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	memset(&wc, 0, sizeof(wc));
	memset(&wr, 0, sizeof(wr));
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	if (remote) {
		g = sge_of(&b, 0, 64);
		if (post_recv(&b, 7, &g, 1))
			die("post_recv");
		g = sge_of(&a, 0, 16);
		wr.opcode = IBV_WR_SEND_WITH_INV;
		wr.sg_list = &g;
		wr.num_sge = 1;
		if (ibv_post_send(a.qp, &wr, &bad))
			die("post SEND_WITH_INV");
		expect_op(a.cq, "SEND_WITH_INV completes as a SEND", IBV_WC_SUCCESS, IBV_WC_SEND,
			  NULL);
		expect_op(b.cq, "its receive", IBV_WC_SUCCESS, IBV_WC_RECV, &wc);
		check((wc.wc_flags & IBV_WC_WITH_INV) && wc.invalidated_rkey == rkey,
		      "the receive says IBV_WC_WITH_INV and the rkey", "flags 0x%x rkey 0x%x",
		      wc.wc_flags, wc.invalidated_rkey);
	} else {
		wr.opcode = IBV_WR_LOCAL_INV;
		if (ibv_post_send(b.qp, &wr, &bad))
			die("post LOCAL_INV");
		expect_op(b.cq, "LOCAL_INV -> IBV_WC_LOCAL_INV", IBV_WC_SUCCESS, IBV_WC_LOCAL_INV,
			  NULL);
	}
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)b.buf + WIN_OFF, rkey);
	expect_op(a.cq,
		  remote ? "WRITE after SEND_WITH_INV -> REM_ACCESS_ERR"
			 : "WRITE after LOCAL_INV -> REM_ACCESS_ERR",
		  IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);
}

/* Invalidations of what is no type 2 window: an MR's key, locally and remotely. */
static void test_bad_invalidate(void)
{
	struct side a, b;
	struct ibv_send_wr wr, *bad;
	struct ibv_sge g;

	pair_open(&a, &b, MWB, NULL);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = b.mr->rkey;
	if (ibv_post_send(b.qp, &wr, &bad))
		die("post LOCAL_INV");
	expect_op(b.cq, "LOCAL_INV of an MR's key -> LOC_QP_OP_ERR", IBV_WC_LOC_QP_OP_ERR, 0, NULL);
	pair_close(&a, &b);

	pair_open(&a, &b, MWB, NULL);
	g = sge_of(&b, 0, 64);
	if (post_recv(&b, 8, &g, 1))
		die("post_recv");
	g = sge_of(&a, 0, 16);
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.invalidate_rkey = b.mr->rkey;
	wr.sg_list = &g;
	wr.num_sge = 1;
	if (ibv_post_send(a.qp, &wr, &bad))
		die("post SEND_WITH_INV");
	expect_op(a.cq, "SEND_WITH_INV of an MR's key -> REM_INV_REQ_ERR", IBV_WC_REM_INV_REQ_ERR,
		  0, NULL);
	pair_close(&a, &b);
}

/* Binds the MR does not allow: past its end, or without IBV_ACCESS_MW_BIND. */
static void test_bind_errors(void)
{
	struct side a, b;
	struct ibv_mw *mw;
	struct ibv_sge g;

	pair_open(&a, &b, MWB, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	bind2(&b, mw, BUF - WIN_LEN / 2, WIN_LEN, WIN_RIGHTS);
	expect_op(b.cq, "bind past the MR's end -> MW_BIND_ERR", IBV_WC_MW_BIND_ERR, 0, NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);

	/* A window's key is no lkey. */
	pair_open(&a, &b, MWB, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	g = sge_of(&b, 0, 8);
	g.lkey = bind2(&b, mw, 0, WIN_LEN, WIN_RIGHTS | IBV_ACCESS_LOCAL_WRITE);
	expect_op(b.cq, "type 2 bind", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	if (post(&b, IBV_WR_RDMA_READ, &g, 1, (uintptr_t)a.buf, a.mr->rkey, IBV_SEND_SIGNALED))
		die("post READ");
	expect_op(b.cq, "a window's rkey as an lkey -> LOC_PROT_ERR", IBV_WC_LOC_PROT_ERR, 0, NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);

	pair_open(&a, &b, ALL, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_2);
	bind2(&b, mw, 0, WIN_LEN, WIN_RIGHTS);
	expect_op(b.cq, "bind on an MR without MW_BIND -> MW_BIND_ERR", IBV_WC_MW_BIND_ERR, 0,
		  NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);
}

/* Type 1 by ibv_bind_mw; a rebind moves the window (and its rkey). */
static void test_type1(void)
{
	struct side a, b;
	struct ibv_mw_bind mb;
	struct ibv_mw *mw;
	uint32_t first;
	int rc;

	pair_open(&a, &b, MWB, NULL);
	mw = alloc_mw(&b, IBV_MW_TYPE_1);
	memset(&mb, 0, sizeof(mb));
	mb.wr_id = 0x71;
	mb.send_flags = IBV_SEND_SIGNALED;
	mb.bind_info.mr = b.mr;
	mb.bind_info.addr = (uintptr_t)b.buf;
	mb.bind_info.length = WIN_LEN;
	mb.bind_info.mw_access_flags = WIN_RIGHTS;
	rc = ibv_bind_mw(b.qp, mw, &mb);
	check(rc == 0, "ibv_bind_mw of a type 1 window", "rc %d", rc);
	expect_op(b.cq, "its completion -> IBV_WC_BIND_MW", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	first = mw->rkey;
	a.buf[0] = 0x61;
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)b.buf, mw->rkey);
	expect_op(a.cq, "WRITE through the type 1 window", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	check(b.buf[0] == 0x61, "its byte is there", "got 0x%x", (unsigned)b.buf[0]);
	mb.bind_info.addr = (uintptr_t)b.buf + 2 * WIN_LEN;
	rc = ibv_bind_mw(b.qp, mw, &mb);
	expect_op(b.cq, "rebind to another range", IBV_WC_SUCCESS, IBV_WC_BIND_MW, NULL);
	check(rc == 0 && mw->rkey != first, "the rebind gives a new rkey", "rc %d rkey 0x%x", rc,
	      mw->rkey);
	a.buf[0] = 0x62;
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)b.buf + 2 * WIN_LEN, mw->rkey);
	expect_op(a.cq, "WRITE at the new range", IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, NULL);
	check(b.buf[2 * WIN_LEN] == 0x62, "its byte is there", "got 0x%x",
	      (unsigned)b.buf[2 * WIN_LEN]);
	rdma(&a, IBV_WR_RDMA_WRITE, (uintptr_t)b.buf, mw->rkey);
	expect_op(a.cq, "WRITE at the old range -> REM_ACCESS_ERR", IBV_WC_REM_ACCESS_ERR, 0, NULL);
	ibv_dealloc_mw(mw);
	pair_close(&a, &b);
}

void test_mw(void)
{
	test_caps();
	test_type2_range();
	test_invalidate(false);
	test_invalidate(true);
	test_bad_invalidate();
	test_bind_errors();
	test_type1();
}
