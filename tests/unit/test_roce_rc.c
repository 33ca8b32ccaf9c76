/* SPDX-License-Identifier: MIT */
/*
 * The RC transport over real frames: a requester and a responder exchange
 * packets built by roce_pkt_build and read back by roce_pkt_parse over a
 * simulated wire that can lose and reorder them. Every byte placed and every
 * completion is checked: clean, lossy (go-back-N brings every message once),
 * a dead peer (RETRY_EXC_ERR after retry_cnt), a bad R_Key (REM_ACCESS_ERR),
 * and the responder's rules one by one.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/roce_rc.h"

#define PMTU 1024
#define TIMEOUT_NS 200000ull
#define FRAMES 512
#define FRAME_MAX (ROCE_MAX_HDR_LEN + 4096 + 8)
#define MEM_BYTES (1u << 20)
#define MEM_VA 0x7f0000000000ull
#define MEM_RKEY 0x1234
#define RECV_BYTES 65536
#define MAX_MSGS 256

struct wire {
	uint8_t frame[FRAMES][FRAME_MAX];
	uint32_t len[FRAMES];
	uint32_t head, tail;
	uint32_t loss_ppm, reorder_ppm; /* per frame */
	uint64_t dropped;
};

struct peer_b {
	uint8_t mem[MEM_BYTES];
	uint8_t recv[MAX_MSGS][RECV_BYTES];
	uint32_t nrecv_posted, nrecv_used;
	uint32_t ndone;
	struct {
		uint8_t opcode;
		uint32_t len;
		bool has_imm;
		uint32_t imm;
	} done[MAX_MSGS];
};

static struct wire ab, ba;
static struct peer_b b;
static uint8_t src[MAX_MSGS][20000];
static uint8_t rdst[MAX_MSGS][20000]; /* A's buffers for READ replies */
/* B's memory: WRITEs go to the lower half, READs read the upper half's pattern. */
#define READ_AREA (MEM_BYTES / 2)
static uint64_t rng = 0x9e3779b97f4a7c15ull;
/* The wire loses the frame of this PSN once (UINT32_MAX: none). */
static uint32_t drop_once_psn = UINT32_MAX;
static struct roce_tx last_read_req; /* the last READ request put on a wire */

static uint32_t rnd(uint32_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng % n);
}

static const struct roce_addr addr_ab = {
    .smac = {2, 0, 0, 0, 0, 1},
    .dmac = {2, 0, 0, 0, 0, 2},
    .sgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1},
    .dgid = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 1, 2},
    .l3 = ROCE_L3_V2_IPV4,
};
static struct roce_addr addr_ba;

/* Encodes a packet onto the wire, unless the wire loses it; may swap it with the last one. */
static void put(struct wire *w, const struct roce_addr *a, const struct roce_tx *tx)
{
	uint32_t slot = w->tail % FRAMES;
	int n;

	assert_true(w->tail - w->head < FRAMES);
	n = roce_pkt_build(w->frame[slot], FRAME_MAX, a, &tx->bth, &tx->ext, tx->payload, tx->len);
	assert_true(n > 0);
	if (tx->bth.opcode == (ROCE_OP_RC | ROCE_OP_READ_REQUEST))
		last_read_req = *tx;
	if (tx->bth.psn == drop_once_psn) {
		drop_once_psn = UINT32_MAX;
		w->dropped++;
		return;
	}
	if (rnd(1000000) < w->loss_ppm) {
		w->dropped++;
		return;
	}
	w->len[slot] = (uint32_t)n;
	w->tail++;
	if (w->tail - w->head >= 2 && rnd(1000000) < w->reorder_ppm) {
		uint32_t prev = (w->tail - 2) % FRAMES;
		uint8_t tmp[FRAME_MAX];
		uint32_t tl = w->len[prev];

		memcpy(tmp, w->frame[prev], tl);
		memcpy(w->frame[prev], w->frame[slot], w->len[slot]);
		w->len[prev] = w->len[slot];
		memcpy(w->frame[slot], tmp, tl);
		w->len[slot] = tl;
	}
}

/* The next frame off the wire, parsed (every frame must parse). */
static bool take(struct wire *w, struct roce_pkt_view *v)
{
	uint32_t slot;

	if (w->head == w->tail)
		return false;
	slot = w->head++ % FRAMES;
	assert_int_equal(roce_pkt_parse(w->frame[slot], w->len[slot], v), 0);
	return true;
}

static int b_write(void *ctx, uint32_t rkey, uint64_t va, const uint8_t *p, uint32_t len)
{
	(void)ctx;
	if (rkey != MEM_RKEY || va < MEM_VA || va - MEM_VA > MEM_BYTES - len)
		return -EACCES;
	memcpy(b.mem + (va - MEM_VA), p, len);
	return 0;
}

static int b_recv(void *ctx, uint32_t offset, const uint8_t *p, uint32_t len)
{
	(void)ctx;
	if (offset == 0) {
		if (b.nrecv_used == b.nrecv_posted)
			return -ENOBUFS;
		b.nrecv_used++;
	}
	if (offset + len > RECV_BYTES)
		return -EMSGSIZE;
	if (len)
		memcpy(b.recv[b.nrecv_used - 1] + offset, p, len);
	return 0;
}

static void b_done(void *ctx, uint8_t opcode, uint32_t len, bool has_imm, uint32_t imm)
{
	(void)ctx;
	assert_true(b.ndone < MAX_MSGS);
	b.done[b.ndone].opcode = opcode;
	b.done[b.ndone].len = len;
	b.done[b.ndone].has_imm = has_imm;
	b.done[b.ndone].imm = imm;
	b.ndone++;
}

static int b_read(void *ctx, uint32_t rkey, uint64_t va, uint8_t *buf, uint32_t len)
{
	(void)ctx;
	if (rkey != MEM_RKEY || va < MEM_VA || va - MEM_VA > MEM_BYTES - len)
		return -EACCES;
	if (buf)
		memcpy(buf, b.mem + (va - MEM_VA), len);
	return 0;
}

static void a_place(void *ctx, const struct roce_wr *w, uint32_t off, const uint8_t *p,
		    uint32_t len)
{
	(void)ctx;
	assert_true(off + len <= sizeof(rdst[0]));
	memcpy(rdst[w->wr_id - 1000] + off, p, len);
}

static uint32_t b_atomics; /* executed, each once */

static int b_atomic(void *ctx, uint32_t op, uint32_t rkey, uint64_t va, uint64_t swap_add,
		    uint64_t compare, uint64_t *orig)
{
	uint64_t v;

	(void)ctx;
	if (rkey != MEM_RKEY || va < MEM_VA || va - MEM_VA > MEM_BYTES - 8)
		return -EACCES;
	if (va % 8)
		return -EINVAL;
	memcpy(&v, b.mem + (va - MEM_VA), 8);
	*orig = v;
	if (op == ROCE_WR_FETCH_ADD)
		v += swap_add;
	else if (v == compare)
		v = swap_add;
	memcpy(b.mem + (va - MEM_VA), &v, 8);
	b_atomics++;
	return 0;
}

/* B's one key a SEND may invalidate (a type 2 window), once. */
#define INV_RKEY 0x5678
static uint32_t b_inv_checks, b_invalidated;

static int b_invalidate(void *ctx, uint32_t rkey, bool commit)
{
	(void)ctx;
	if (rkey != INV_RKEY || b_invalidated)
		return -EINVAL;
	if (commit)
		b_invalidated++;
	else
		b_inv_checks++;
	return 0;
}

static const struct roce_resp_ops ops = {.write = b_write,
					 .recv = b_recv,
					 .read = b_read,
					 .done = b_done,
					 .atomic = b_atomic,
					 .invalidate = b_invalidate};

struct run {
	struct roce_req q;
	struct roce_resp r;
	struct roce_wr wr[MAX_MSGS];
	uint32_t nwr, posted;
	struct roce_wc wc[MAX_MSGS];
	uint32_t nwc;
	uint64_t now;
	uint64_t recv_at_ns; /* B posts its receives then (0: from the start) */
};

static void setup(struct run *x, uint32_t psn, uint32_t loss_ppm, uint32_t reorder_ppm)
{
	memset(x, 0, sizeof(*x));
	memset(&ab, 0, sizeof(ab));
	memset(&ba, 0, sizeof(ba));
	memset(&b, 0, sizeof(b));
	b_inv_checks = b_invalidated = 0;
	ab.loss_ppm = ba.loss_ppm = loss_ppm;
	drop_once_psn = UINT32_MAX;
	ab.reorder_ppm = ba.reorder_ppm = reorder_ppm;
	addr_ba = addr_ab;
	memcpy(addr_ba.smac, addr_ab.dmac, 6);
	memcpy(addr_ba.dmac, addr_ab.smac, 6);
	memcpy(addr_ba.sgid, addr_ab.dgid, 16);
	memcpy(addr_ba.dgid, addr_ab.sgid, 16);
	assert_int_equal(roce_req_init(&x->q, 0x11, PMTU, psn, 7, TIMEOUT_NS), 0);
	assert_int_equal(roce_resp_init(&x->r, 0x22, PMTU, psn), 0);
	x->q.place = a_place;
	b.nrecv_posted = MAX_MSGS;
	for (uint32_t k = READ_AREA; k < MEM_BYTES; k++)
		b.mem[k] = (uint8_t)(k * 7 + 3);
	memset(rdst, 0, sizeof(rdst));
}

/* WR i: an operation, a length, a place in B's memory, its bytes. */
static void add_wr(struct run *x, uint32_t opcode, uint32_t len)
{
	struct roce_wr *w = &x->wr[x->nwr];
	uint32_t i = x->nwr++;

	assert_true(len <= sizeof(src[0]));
	for (uint32_t k = 0; k < len; k++)
		src[i][k] = (uint8_t)rnd(256);
	*w = (struct roce_wr){.wr_id = 1000 + i,
			      .opcode = opcode,
			      .data = src[i],
			      .len = len,
			      .va = MEM_VA + (opcode == ROCE_WR_READ ? READ_AREA : 0) +
				    (uint64_t)i * 4096 % (READ_AREA - 20000),
			      .rkey = MEM_RKEY,
			      .imm = 0xa0000000u + i};
}

/* Runs until every WR completed or max_ns passed; completions land in x->wc. */
static void run(struct run *x, uint64_t max_ns)
{
	struct roce_pkt_view v;
	struct roce_tx tx;
	struct roce_wc wc[ROCE_RC_MAX_WR];
	int n;

	while (x->nwc < x->nwr && x->now < max_ns) {
		x->now += 1000;
		if (x->recv_at_ns && x->now >= x->recv_at_ns)
			b.nrecv_posted = MAX_MSGS;
		while (x->posted < x->nwr && roce_req_post(&x->q, &x->wr[x->posted]) == 0)
			x->posted++;
		for (int k = 0; k < 16 && roce_req_next(&x->q, x->now, &tx); k++)
			put(&ab, &addr_ab, &tx);
		while (take(&ab, &v)) {
			uint8_t buf[PMTU];

			if (roce_resp_rx(&x->r, &v.bth, &v.ext, v.payload, v.paylen, &ops, NULL,
					 &tx))
				put(&ba, &addr_ba, &tx);
			while (roce_resp_next(&x->r, &ops, NULL, buf, &tx))
				put(&ba, &addr_ba, &tx);
		}
		while (take(&ba, &v)) {
			n = roce_comp_rx(&x->q, &v.bth, &v.ext, v.payload, v.paylen, x->now, wc,
					 ROCE_RC_MAX_WR);
			assert_true(n >= 0);
			memcpy(&x->wc[x->nwc], wc, (size_t)n * sizeof(*wc));
			x->nwc += (uint32_t)n;
		}
		n = roce_comp_timer(&x->q, x->now, wc, ROCE_RC_MAX_WR);
		assert_true(n >= 0);
		memcpy(&x->wc[x->nwc], wc, (size_t)n * sizeof(*wc));
		x->nwc += (uint32_t)n;
	}
}

/* Every WR succeeded in order, and B holds exactly what was sent, once. */
static void check_all_delivered(const struct run *x)
{
	uint32_t sends = 0, d = 0;

	assert_int_equal(x->nwc, x->nwr);
	for (uint32_t i = 0; i < x->nwr; i++) {
		const struct roce_wr *w = &x->wr[i];
		bool imm = w->opcode == 1 || w->opcode == 3;

		assert_int_equal(x->wc[i].status, ROCE_WC_SUCCESS);
		assert_int_equal(x->wc[i].wr_id, w->wr_id);
		if (w->opcode == ROCE_WR_READ) {
			/* The reply: B's pattern, which nothing writes. */
			if (w->len)
				assert_memory_equal(rdst[i], b.mem + (w->va - MEM_VA), w->len);
			continue;
		}
		/* SENDs and WRITEs end a message at B, in order; READs do not. */
		assert_true(d < b.ndone);
		assert_int_equal(b.done[d].len, w->len);
		assert_int_equal(b.done[d].has_imm, imm);
		if (imm)
			assert_int_equal(b.done[d].imm, w->imm);
		d++;
		if (w->opcode >= 2 && w->len)
			assert_memory_equal(b.recv[sends], w->data, w->len);
		/* A SEND and a WRITE with immediate take a receive each. */
		sends += w->opcode >= 1;
	}
	assert_int_equal(b.ndone, d);
	/* WRITEs land in order, so a later one over an earlier one wins: check them last to first.
	 */
	for (uint32_t i = x->nwr; i-- > 0;) {
		const struct roce_wr *w = &x->wr[i];
		bool later = false;

		for (uint32_t j = i + 1; j < x->nwr; j++)
			later |= x->wr[j].opcode < 2 && x->wr[j].len &&
				 x->wr[j].va < w->va + w->len && w->va < x->wr[j].va + x->wr[j].len;
		if (w->opcode < 2 && w->len && !later)
			assert_memory_equal(b.mem + (w->va - MEM_VA), w->data, w->len);
	}
	assert_int_equal(b.nrecv_used, sends);
}

/* An atomic WR: on the 8 bytes at B's offset off. */
static void add_atomic(struct run *x, uint32_t opcode, uint32_t off, uint64_t swap_add,
		       uint64_t compare)
{
	uint32_t i = x->nwr++;

	x->wr[i] = (struct roce_wr){.wr_id = 1000 + i,
				    .opcode = opcode,
				    .len = 8,
				    .va = MEM_VA + off,
				    .rkey = MEM_RKEY,
				    .swap_add = swap_add,
				    .compare = compare};
}

/*
 * Atomics through a wire that loses and swaps 5 % of the frames each way,
 * among WRITEs: each executes once (a lost ATOMIC ACKNOWLEDGE is answered
 * again from the responder's record), in order, and its original value
 * comes back. Then one misaligned: an invalid request.
 */
static void test_atomic(void **state)
{
	static struct run x;
	uint64_t v, sum = 0;

	(void)state;
	setup(&x, 0xffffe0, 50000, 50000);
	b_atomics = 0;
	for (uint32_t i = 0; i < 100; i++) {
		add_atomic(&x, ROCE_WR_FETCH_ADD, 64, i + 1, 0);
		if (i % 10 == 0)
			add_wr(&x, 0, 3000); /* a WRITE between them */
	}
	add_atomic(&x, ROCE_WR_CMP_SWAP, 64, 7, 5050); /* matches: swapped */
	add_atomic(&x, ROCE_WR_CMP_SWAP, 64, 9, 1);    /* does not: left */
	run(&x, 2000000000ull);
	assert_int_equal(x.nwc, x.nwr);
	for (uint32_t i = 0; i < x.nwr; i++) {
		const struct roce_wr *w = &x.wr[i];

		assert_int_equal(x.wc[i].status, ROCE_WC_SUCCESS);
		assert_int_equal(x.wc[i].wr_id, w->wr_id);
		if (w->opcode < ROCE_WR_CMP_SWAP)
			continue;
		memcpy(&v, rdst[i], 8);
		assert_int_equal(v, w->opcode == ROCE_WR_FETCH_ADD ? sum
				    : i + 1 == x.nwr		   ? 7
								   : 5050);
		if (w->opcode == ROCE_WR_FETCH_ADD)
			sum += w->swap_add;
	}
	assert_int_equal(b_atomics, 102); /* once each, however often they were sent */
	assert_true(ab.dropped + ba.dropped > 0);
	memcpy(&v, b.mem + 64, 8);
	assert_int_equal(v, 7);

	setup(&x, 0, 0, 0);
	add_atomic(&x, ROCE_WR_FETCH_ADD, 60, 1, 0);
	run(&x, 100000000);
	assert_int_equal(x.nwc, 1);
	assert_int_equal(x.wc[0].status, ROCE_WC_REM_INV_REQ_ERR);
}

static void test_psn(void **state)
{
	(void)state;
	assert_int_equal(roce_psn_add(0xfffffe, 3), 1);
	assert_int_equal(roce_psn_diff(1, 0xfffffe), 3);
	assert_int_equal(roce_psn_diff(0xfffffe, 1), -3);
	assert_int_equal(roce_psn_diff(5, 5), 0);
}

static void test_clean(void **state)
{
	static const uint32_t lens[] = {0,    1, 1023, 1024, 1025, 5000, 20000,
					4096, 3, 0,    2048, 777,  9000, 0};
	static struct run x;

	(void)state;
	setup(&x, 0xfffff0, 0, 0); /* the PSNs wrap */
	for (uint32_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		add_wr(&x, i % 5, lens[i]); /* WRITE, WRITE_IMM, SEND, SEND_IMM, READ */
	run(&x, 100000000);
	check_all_delivered(&x);
	assert_int_equal(x.q.st.retransmitted, 0);
	assert_int_equal(x.q.st.timeouts, 0);
	assert_int_equal(x.r.st.naks, 0);
	assert_int_equal(x.r.st.duplicates, 0);
	/*
	 * One PSN per packet: 20000 B is 20 packets of 1 KiB, 0 B one; a READ
	 * is one request packet and a PSN per packet of its reply.
	 */
	assert_int_equal(x.q.st.packets, 1 + 1 + 1 + 1 + 1 + 5 + 20 + 4 + 1 + 1 + 2 + 1 + 9 + 1);
	assert_int_equal(x.r.epsn, roce_psn_add(0xfffff0, 50));
	assert_int_equal(x.r.msn, 14);
}

static void test_lossy(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 100, 50000, 50000); /* 5 % lost, 5 % swapped, each way */
	for (uint32_t i = 0; i < 200; i++)
		add_wr(&x, rnd(5), rnd(4) ? rnd(3000) : rnd(20000));
	run(&x, 20000000000ull);
	check_all_delivered(&x);
	assert_true(ab.dropped > 0 && ba.dropped > 0);
	assert_true(x.q.st.retransmitted > 0);
	assert_true(x.r.st.out_of_seq > 0);
	print_message("lossy: %llu packets, %llu again, %llu timeouts, %llu NAKs; %llu+%llu lost\n",
		      (unsigned long long)x.q.st.packets, (unsigned long long)x.q.st.retransmitted,
		      (unsigned long long)x.q.st.timeouts, (unsigned long long)x.q.st.seq_naks,
		      (unsigned long long)ab.dropped, (unsigned long long)ba.dropped);
}

static void test_dead_peer(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 7, 1000000, 0); /* nothing arrives */
	add_wr(&x, 0, 3000);
	add_wr(&x, 2, 10);
	add_wr(&x, 3, 0);
	run(&x, 1000000000);
	assert_int_equal(x.nwc, 3);
	assert_int_equal(x.wc[0].status, ROCE_WC_RETRY_EXC_ERR);
	assert_int_equal(x.wc[0].wr_id, 1000);
	assert_int_equal(x.wc[1].status, ROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(x.wc[2].status, ROCE_WC_WR_FLUSH_ERR);
	/* The first try and retry_cnt (7) retries, each ended by the timer. */
	assert_int_equal(x.q.st.timeouts, 8);
	assert_true(x.now >= 8 * TIMEOUT_NS && x.now < 9 * TIMEOUT_NS + 10000);
	assert_int_equal(b.ndone, 0);
	/* In error, nothing more goes out. */
	struct roce_tx tx;

	assert_int_equal(roce_req_next(&x.q, x.now, &tx), 0);
}

static void test_access_error(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 0, 0, 0);
	add_wr(&x, 0, 2000);
	add_wr(&x, 2, 100);
	add_wr(&x, 0, 3000);
	x.wr[2].rkey = MEM_RKEY + 1;
	add_wr(&x, 2, 100);
	run(&x, 100000000);
	assert_int_equal(x.nwc, 4);
	assert_int_equal(x.wc[0].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.wc[1].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.wc[2].status, ROCE_WC_REM_ACCESS_ERR);
	assert_int_equal(x.wc[3].status, ROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(x.r.st.naks, 1);
	assert_true(x.r.error);
	assert_int_equal(b.ndone, 2);
}

/*
 * SEND with invalidate: its last packet carries the IETH, the key is checked
 * before the bytes are received and invalidated once they are, the message
 * ends with that key; through loss, once. A key the responder may not
 * invalidate (here: the same one again) is an invalid request.
 */
static void test_send_inv(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 0xfffff0, 50000, 0);
	add_wr(&x, 2, 3000);
	add_wr(&x, ROCE_WR_SEND_INV, 5000); /* 5 packets: SEND_FIRST .. SEND_LAST_INV */
	x.wr[1].inv_rkey = INV_RKEY;
	add_wr(&x, ROCE_WR_SEND_INV, 0); /* SEND_ONLY_INV */
	x.wr[2].inv_rkey = INV_RKEY;
	add_wr(&x, 2, 100);
	run(&x, 100000000);
	assert_int_equal(x.nwc, 4);
	assert_int_equal(x.wc[0].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.wc[1].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.wc[1].opcode, ROCE_WR_SEND_INV);
	assert_int_equal(x.wc[2].status, ROCE_WC_REM_INV_REQ_ERR);
	assert_int_equal(x.wc[3].status, ROCE_WC_WR_FLUSH_ERR);
	assert_int_equal(b_invalidated, 1);
	assert_true(b_inv_checks >= 1);
	assert_int_equal(b.ndone, 2);
	assert_int_equal(b.done[1].opcode, ROCE_OP_RC | ROCE_OP_SEND_LAST_INV);
	assert_int_equal(b.done[1].len, 5000);
	assert_false(b.done[1].has_imm);
	assert_int_equal(b.done[1].imm, INV_RKEY);
	assert_memory_equal(b.recv[1], src[1], 5000);
	assert_true(x.r.error);
}

/* The responder's rules, one packet at a time. */
static void test_responder(void **state)
{
	static struct run x;
	struct roce_bth bth = {.pkey = 0xffff, .dqpn = 0x22, .ackreq = true};
	struct roce_ext ext = {.va = MEM_VA, .rkey = MEM_RKEY, .dma_len = 8};
	uint8_t pay[PMTU] = {0};
	struct roce_tx ack;

	(void)state;
	setup(&x, 50, 0, 0);
	/* ePSN 50: 51 is out of sequence, NAKed once with ePSN. */
	bth.opcode = ROCE_OP_WRITE_ONLY;
	bth.psn = 51;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_NAK_PSN_SEQ);
	assert_int_equal(ack.bth.psn, 50);
	assert_int_equal(ack.bth.dqpn, 0x22);
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 0);
	/* 50 executes and is acknowledged; again, it is a duplicate: ACK 50, not executed. */
	bth.psn = 50;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_ACK);
	assert_int_equal(ack.ext.msn, 1);
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.bth.psn, 50);
	assert_int_equal(x.r.st.duplicates, 1);
	assert_int_equal(b.ndone, 1);
	/* A FIRST shorter than the path MTU is an invalid request, and ends the QP. */
	bth.opcode = ROCE_OP_SEND_FIRST;
	bth.psn = 51;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU - 4, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_NAK_INV_REQ);
	assert_true(x.r.error);
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU, &ops, NULL, &ack), 0);

	/* A MIDDLE with no FIRST before it. */
	setup(&x, 0, 0, 0);
	bth.opcode = ROCE_OP_SEND_MIDDLE;
	bth.psn = 0;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_NAK_INV_REQ);
	/* A WRITE FIRST then a SEND LAST: not the same message. */
	setup(&x, 0, 0, 0);
	ext.dma_len = 2 * PMTU;
	bth.opcode = ROCE_OP_WRITE_FIRST;
	bth.ackreq = false;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU, &ops, NULL, &ack), 0);
	bth.ackreq = true;
	bth.opcode = ROCE_OP_SEND_LAST;
	bth.psn = 1;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_NAK_INV_REQ);
	/* A WRITE longer than its RETH says. */
	setup(&x, 0, 0, 0);
	ext.dma_len = 4;
	bth.opcode = ROCE_OP_WRITE_ONLY;
	bth.psn = 0;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome,
			 ROCE_AETH_NAK_INV_REQ); /* A SEND with no receive posted: RNR NAK with the
						    QP's timer; ePSN stays. */
	setup(&x, 0, 0, 0);
	b.nrecv_posted = 0;
	bth.opcode = ROCE_OP_SEND_ONLY;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_RNR_NAK);
	assert_int_equal(x.r.epsn, 0);
	assert_false(x.r.error);
	/* A SEND longer than the receive buffer: an invalid request. */
	setup(&x, 0, 0, 0);
	bth.opcode = ROCE_OP_SEND_FIRST;
	bth.ackreq = false;
	for (uint32_t k = 0; k < RECV_BYTES / PMTU; k++, bth.psn++)
		assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, PMTU, &ops, NULL, &ack), 0),
		    bth.opcode = ROCE_OP_SEND_MIDDLE;
	bth.opcode = ROCE_OP_SEND_LAST;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, pay, 8, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_NAK_INV_REQ);
	bth.ackreq = true;
	bth.psn = 0;
	/* A zero-length WRITE checks no R_Key. */
	setup(&x, 0, 0, 0);
	ext.rkey = 0xdead;
	ext.dma_len = 0;
	bth.opcode = ROCE_OP_WRITE_ONLY;
	assert_int_equal(roce_resp_rx(&x.r, &bth, &ext, NULL, 0, &ops, NULL, &ack), 1);
	assert_int_equal(ack.ext.aeth_syndrome, ROCE_AETH_ACK);
}

/* A READ: a lost reply packet is asked for again with the rest only; a bad key. */
static void test_read(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 100, 0, 0);
	add_wr(&x, ROCE_WR_READ, 5 * PMTU - 10);
	drop_once_psn = 102; /* the third reply packet */
	run(&x, 100000000);
	check_all_delivered(&x);
	assert_int_equal(x.q.st.packets, 2);
	assert_int_equal(x.q.st.retransmitted, 1);
	/* The second request: from the lost packet on, at its place. */
	assert_int_equal(last_read_req.bth.psn, 102);
	assert_int_equal(last_read_req.ext.va, x.wr[0].va + 2 * PMTU);
	assert_int_equal(last_read_req.ext.dma_len, 3 * PMTU - 10);
	assert_int_equal(x.r.st.duplicates, 1);
	assert_int_equal(x.r.epsn, 105);

	/* A SEND, then a READ with a wrong R_Key, then a WRITE. */
	setup(&x, 0, 0, 0);
	add_wr(&x, 2, 100);
	add_wr(&x, ROCE_WR_READ, 3000);
	x.wr[1].rkey = 0xbad;
	add_wr(&x, 0, 100);
	run(&x, 100000000);
	assert_int_equal(x.nwc, 3);
	assert_int_equal(x.wc[0].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.wc[1].status, ROCE_WC_REM_ACCESS_ERR);
	assert_int_equal(x.wc[2].status, ROCE_WC_WR_FLUSH_ERR);
}

/* SENDs before the receives: RNR NAKs, then all arrive; or rnr_retry runs out. */
static void test_rnr(void **state)
{
	static struct run x;

	(void)state;
	setup(&x, 0, 0, 0);
	x.r.min_rnr_timer = 14; /* 1.28 ms */
	b.nrecv_posted = 0;
	x.recv_at_ns = 3000000;
	add_wr(&x, 0, 500);
	add_wr(&x, 2, 3000);
	add_wr(&x, 3, 10);
	run(&x, 100000000);
	check_all_delivered(&x);
	/* Asked at 0, 1.28 and 2.56 ms; the receives came at 3 ms. */
	assert_int_equal(x.q.st.rnr_naks, 3);
	assert_int_equal(x.r.st.rnr_naks, 3);
	assert_true(x.now >= 3840000 && x.now < 3840000 + 100000);
	assert_int_equal(x.q.st.timeouts, 0);

	/* A WRITE with immediate finds no receive at its last packet: RNR, then done. */
	setup(&x, 0, 0, 0);
	x.r.min_rnr_timer = 14;
	b.nrecv_posted = 0;
	x.recv_at_ns = 2000000;
	add_wr(&x, 1, 5000); /* 5 packets */
	run(&x, 100000000);
	check_all_delivered(&x);
	assert_int_equal(x.r.st.rnr_naks, 2);
	assert_int_equal(b.nrecv_used, 1);

	setup(&x, 0, 0, 0);
	x.r.min_rnr_timer = 1; /* 10 us */
	x.q.rnr_retry = 2;
	b.nrecv_posted = 0;
	add_wr(&x, 2, 100);
	add_wr(&x, 0, 100);
	run(&x, 100000000);
	assert_int_equal(x.nwc, 2);
	assert_int_equal(x.wc[0].status, ROCE_WC_RNR_RETRY_EXC_ERR);
	assert_int_equal(x.wc[1].status, ROCE_WC_WR_FLUSH_ERR);
	/* The first try and rnr_retry (2) retries. */
	assert_int_equal(x.q.st.rnr_naks, 3);
	assert_int_equal(roce_rnr_timer_ns(0), 655360000);
	assert_int_equal(roce_rnr_timer_ns(31), 491520000);
}

/* The timer rewound, then the ACK of the originals came: nothing is sent again. */
static void test_ack_after_rewind(void **state)
{
	static struct run x;
	struct roce_bth bth = {.opcode = ROCE_OP_RC | ROCE_OP_ACK};
	struct roce_ext ext = {.aeth_syndrome = ROCE_AETH_ACK};
	struct roce_wc wc[ROCE_RC_MAX_WR];
	struct roce_tx tx;

	(void)state;
	setup(&x, 0xfffffe, 0, 0);
	add_wr(&x, 0, 3 * PMTU);
	assert_int_equal(roce_req_post(&x.q, &x.wr[0]), 0);
	for (int k = 0; k < 3; k++)
		assert_int_equal(roce_req_next(&x.q, 1000, &tx), 1);
	assert_int_equal(roce_req_next(&x.q, 1000, &tx), 0);
	assert_int_equal(roce_comp_timer(&x.q, 1000 + TIMEOUT_NS, wc, ROCE_RC_MAX_WR), 0);
	assert_int_equal(x.q.psn, 0xfffffe); /* back to the first packet */
	assert_int_equal(x.q.retries, 6);
	assert_int_equal(roce_req_next(&x.q, 2000 + TIMEOUT_NS, &tx), 1);
	assert_int_equal(x.q.st.retransmitted, 1);
	/* A stale ACK (before una - 1) and one for a PSN never sent are ignored. */
	bth.psn = 0xfffff0;
	assert_int_equal(
	    roce_comp_rx(&x.q, &bth, &ext, NULL, 0, 3000 + TIMEOUT_NS, wc, ROCE_RC_MAX_WR), 0);
	bth.psn = 1; /* the packets were 0xfffffe, 0xffffff, 0 */
	assert_int_equal(
	    roce_comp_rx(&x.q, &bth, &ext, NULL, 0, 3000 + TIMEOUT_NS, wc, ROCE_RC_MAX_WR), 0);
	bth.psn = 0;
	assert_int_equal(
	    roce_comp_rx(&x.q, &bth, &ext, NULL, 0, 3000 + TIMEOUT_NS, wc, ROCE_RC_MAX_WR), 1);
	assert_int_equal(wc[0].status, ROCE_WC_SUCCESS);
	assert_int_equal(x.q.retries, 7); /* progress renews them */
	assert_int_equal(x.q.deadline_ns, 0);
	assert_int_equal(roce_req_next(&x.q, 4000 + TIMEOUT_NS, &tx), 0);
	/* Completions need room for every WR. */
	assert_int_equal(roce_comp_timer(&x.q, 0, wc, 1), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_psn),
	    cmocka_unit_test(test_clean),
	    cmocka_unit_test(test_lossy),
	    cmocka_unit_test(test_read),
	    cmocka_unit_test(test_rnr),
	    cmocka_unit_test(test_dead_peer),
	    cmocka_unit_test(test_access_error),
	    cmocka_unit_test(test_responder),
	    cmocka_unit_test(test_ack_after_rewind),
	    cmocka_unit_test(test_atomic),
	    cmocka_unit_test(test_send_inv),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
