/* SPDX-License-Identifier: MIT */
/*
 * nccl_pattern (see nccl_pattern.c): the traffic of NCCL's net_ib between a
 * sender and a receiver, round after round:
 *
 *  receiver  posts a receive with num_sge 0, then RDMA-writes a 64-byte CTS
 *            entry (where to write, rkey, size, tag; idx last) into the
 *            sender's FIFO, signaling one CTS write in 256;
 *  sender    spins on the entry's last 8 bytes, then finds the rest already
 *            there (a WRITE's bytes appear in ascending address order), and
 *            posts with one ibv_post_send a chain of unsignaled RDMA_WRITEs
 *            followed by a signaled RDMA_WRITE_WITH_IMM (zero-length with
 *            num_sge 0 after several WRITEs, carrying the data when alone);
 *  receiver  polls IBV_WC_RECV_RDMA_WITH_IMM, checks imm_data and every byte
 *            of the round at that moment, and now and then flushes with a
 *            4-byte RDMA_READ on the QP connected to itself.
 *
 * NP_SLOTS rounds are in flight; a slot is reused once its round is done.
 */
#include "nccl_pattern.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#define SPIN_LIMIT_MS 20000.0 /* a round that takes this long has hung */

/*
 * A poll that found nothing lets other threads run, as NCCL's proxy thread
 * does ("No request progressed. Let others run."): the sender and receiver
 * threads of one process may share one core (a node's cpuset).
 */
static void idle(void)
{
	sched_yield();
}

/* Round r: message size, and the number of WRITEs it is split into. */
static uint32_t round_size(const struct np_side *s, uint32_t r)
{
	static const uint32_t sizes[] = {
	    8, 64, 0, 4096, 1000, 65536, 128, NP_SLOT_BYTES, 3 * 4096 + 17};

	if (s->bench_size)
		return s->bench_size;
	return sizes[r % (sizeof(sizes) / sizeof(sizes[0]))];
}

static uint32_t round_writes(const struct np_side *s, uint32_t r)
{
	uint32_t n = 1 + (r / 3) % NP_MAX_CHAIN, size = round_size(s, r);

	if (s->bench_size)
		return 1;
	return size && n > size ? size : (size ? n : 1);
}

/* Whether round r's bytes are written and checked (every round outside --bench). */
static bool round_checked(const struct np_side *s, uint32_t r)
{
	return !s->bench_size || r % NP_BENCH_CHECK_EVERY == 0;
}

static uint8_t *slot(const struct np_side *s, uint32_t r)
{
	return s->data + (size_t)(r % s->depth) * s->slot_bytes;
}

static uint8_t pattern(uint32_t r, uint32_t off)
{
	return (uint8_t)(r * 131u + off * 7u + (off >> 9));
}

static bool wc_ok(struct np_side *s, const struct ibv_wc *wc, const char *what)
{
	if (wc->status == IBV_WC_SUCCESS)
		return true;
	np_check(s, false, what, "completion %s (vendor_err 0x%x) wr_id %llu",
		 ibv_wc_status_str(wc->status), wc->vendor_err, (unsigned long long)wc->wr_id);
	return false;
}

/* ---- sender ---- */

static int post_round(struct np_side *s, uint32_t r, const struct np_cts *cts)
{
	struct ibv_send_wr wr[NP_MAX_CHAIN + 1], *bad = NULL;
	struct ibv_sge sg[NP_MAX_CHAIN];
	uint32_t n = round_writes(s, r), size = cts->size, off = 0, i, k = 0;
	uint8_t *src = slot(s, r);

	for (i = 0; round_checked(s, r) && i < size; i++)
		src[i] = pattern(r, i);
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < n; i++) {
		uint32_t len = i + 1 < n ? size / n : size - off;

		sg[i].addr = (uintptr_t)src + off;
		sg[i].length = len;
		sg[i].lkey = s->data_mr->lkey;
		wr[k].wr_id = r;
		wr[k].opcode = IBV_WR_RDMA_WRITE;
		wr[k].sg_list = &sg[i];
		wr[k].num_sge = len ? 1 : 0;
		wr[k].wr.rdma.remote_addr = cts->addr + off;
		wr[k].wr.rdma.rkey = cts->rkey;
		off += len;
		k++;
	}
	/* Several WRITEs end with a zero-length WRITE_WITH_IMM; one carries the data. */
	if (n > 1) {
		wr[k].wr_id = r;
		wr[k].num_sge = 0;
		wr[k].wr.rdma.remote_addr = cts->addr;
		wr[k].wr.rdma.rkey = cts->rkey;
		k++;
	}
	wr[k - 1].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[k - 1].imm_data = htonl(r);
	wr[k - 1].send_flags = IBV_SEND_SIGNALED;
	for (i = 0; i + 1 < k; i++)
		wr[i].next = &wr[i + 1];
	return ibv_post_send(s->qp, wr, &bad);
}

/* Signaled completions come back in posting order, one per round. */
static int reap_sends(struct np_side *s, uint32_t *completed)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(s->cq, 16, wc);

	if (n == 0)
		idle();
	for (int i = 0; i < n; i++) {
		if (!wc_ok(s, &wc[i], "sender completions succeed"))
			return -1;
		if (wc[i].opcode != IBV_WC_RDMA_WRITE || wc[i].wr_id != *completed) {
			np_check(s, false, "one completion per round, in order",
				 "opcode %d wr_id %llu, expected round %u", wc[i].opcode,
				 (unsigned long long)wc[i].wr_id, *completed);
			return -1;
		}
		(*completed)++;
	}
	return n < 0 ? -1 : 0;
}

int np_run_sender(struct np_side *s, uint32_t rounds)
{
	uint32_t r, completed = 0, disorder = 0, chains = 0;
	double t0 = np_now_ms();

	for (r = 0; r < rounds; r++) {
		volatile struct np_cts *e = &s->fifo[r % NP_SLOTS];
		double start = np_now_ms();
		struct np_cts cts;

		/* The source slot is free once its previous round completed. */
		while (r >= s->depth && completed <= r - s->depth)
			if (reap_sends(s, &completed))
				return -1;
		while (e->idx != (uint64_t)r + 1) {
			if (reap_sends(s, &completed))
				return -1;
			if (np_now_ms() - start > SPIN_LIMIT_MS)
				return np_check(s, false, "CTS entries arrive",
						"round %u never came", r),
				       -1;
		}
		/* idx is the last 8 bytes: everything before it must be there now. */
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cts.addr = e->addr;
		cts.rkey = e->rkey;
		cts.size = e->size;
		cts.tag = e->tag;
		if (cts.tag != (NP_TAG ^ r) || cts.size != round_size(s, r) ||
		    cts.rkey != s->peer.data_rkey ||
		    cts.addr != s->peer.data_addr + (uint64_t)(r % s->depth) * s->slot_bytes) {
			disorder++;
			return np_check(s, false, "CTS entry complete when its idx is visible",
					"round %u: tag %llx size %u", r,
					(unsigned long long)cts.tag, cts.size),
			       -1;
		}
		if (post_round(s, r, &cts))
			return np_check(s, false, "chains posted with one ibv_post_send",
					"round %u: %s", r, strerror(errno)),
			       -1;
		chains += round_writes(s, r) > 1;
	}
	while (completed < rounds) {
		if (reap_sends(s, &completed))
			return -1;
		if (np_now_ms() - t0 > SPIN_LIMIT_MS * 3)
			return np_check(s, false, "all rounds complete", "%u of %u", completed,
					rounds),
			       -1;
	}
	np_check(s, disorder == 0, "every CTS entry complete once its last 8 bytes were seen",
		 "%u out of order", disorder);
	np_check(s, chains > 0 || s->bench_size,
		 "chains of up to 8 unsignaled WRITEs + signaled WRITE_WITH_IMM, retired in order",
		 "no chain was posted");
	printf("#    [sender] %u rounds (%u chains) in %.0f ms\n", rounds, chains,
	       np_now_ms() - t0);
	return 0;
}

/* ---- receiver ---- */

static int post_cts(struct np_side *s, uint32_t r)
{
	struct np_cts *e = &s->fifo[r % NP_SLOTS];
	struct ibv_recv_wr rwr = {.wr_id = r, .num_sge = 0}, *rbad;
	struct ibv_sge sg = {.addr = (uintptr_t)e, .length = sizeof(*e), .lkey = s->fifo_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 1u << 31 | r,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_WRITE},
			   *bad;

	if (ibv_post_recv(s->qp, &rwr, &rbad))
		return -1;
	e->addr = (uintptr_t)slot(s, r);
	e->rkey = s->data_mr->rkey;
	e->size = round_size(s, r);
	e->tag = NP_TAG ^ r;
	e->idx = (uint64_t)r + 1;
	if (r % NP_CTS_SIGNAL_EVERY == NP_CTS_SIGNAL_EVERY - 1)
		wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = s->peer.fifo_addr + (r % NP_SLOTS) * sizeof(*e);
	wr.wr.rdma.rkey = s->peer.fifo_rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

/* Whether round r's bytes are all there (the data before the completion). */
static bool data_ok(const struct np_side *s, uint32_t r, uint32_t *bad_off)
{
	const uint8_t *p = slot(s, r);
	uint32_t size = round_size(s, r);

	for (uint32_t i = 0; round_checked(s, r) && i < size; i++)
		if (p[i] != pattern(r, i)) {
			*bad_off = i;
			return false;
		}
	return true;
}

/* Completions the flush's wait took out of the CQ for the main loop. */
struct stash {
	struct ibv_wc wc[64];
	int n;
};

/* GDR-style flush: a 4-byte READ of the round's data through the self QP. */
static bool flush(struct np_side *s, uint32_t r, struct stash *st)
{
	const uint8_t *p = slot(s, r);
	struct ibv_sge sg = {
	    .addr = (uintptr_t)s->flush_buf, .length = 4, .lkey = s->flush_mr->lkey};
	struct ibv_send_wr wr = {.wr_id = 0xf1u,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = IBV_WR_RDMA_READ,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	double start = np_now_ms();
	struct ibv_wc wc;
	int n;

	wr.wr.rdma.remote_addr = (uintptr_t)p;
	wr.wr.rdma.rkey = s->data_mr->rkey;
	*s->flush_buf = 0;
	if (ibv_post_send(s->flush_qp, &wr, &bad))
		return false;
	/* The flush QP shares the CQ with the connection (as in NCCL). */
	for (;;) {
		n = ibv_poll_cq(s->cq, 1, &wc);
		if (n < 0 || np_now_ms() - start > SPIN_LIMIT_MS)
			return false;
		if (!n) {
			idle();
			continue;
		}
		if (wc.qp_num == s->flush_qp->qp_num)
			break;
		if (st->n == (int)(sizeof(st->wc) / sizeof(st->wc[0])))
			return false;
		st->wc[st->n++] = wc;
	}
	return wc.status == IBV_WC_SUCCESS && wc.opcode == IBV_WC_RDMA_READ && wc.wr_id == 0xf1u &&
	       !memcmp(s->flush_buf, p, 4);
}

/* The next completions: those the flush put aside first, in order. */
static int next_wcs(struct np_side *s, struct stash *st, struct ibv_wc *wc, int max)
{
	int n;

	if (!st->n)
		return ibv_poll_cq(s->cq, max, wc);
	n = st->n < max ? st->n : max;
	memcpy(wc, st->wc, (size_t)n * sizeof(*wc));
	memmove(st->wc, st->wc + n, (size_t)(st->n - n) * sizeof(*wc));
	st->n -= n;
	return n;
}

/* One RECV_RDMA_WITH_IMM, for round r: the immediate, length and bytes. */
static bool round_done(struct np_side *s, const struct ibv_wc *wc, uint32_t r, uint32_t *zero_len)
{
	uint32_t bad_off = 0;

	if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc->wr_id != r ||
	    !(wc->wc_flags & IBV_WC_WITH_IMM) || ntohl(wc->imm_data) != r ||
	    wc->qp_num != s->qp->qp_num)
		return np_check(s, false, "RECV_RDMA_WITH_IMM per round, in order",
				"opcode %d wr_id %llu imm %u, expected round %u", wc->opcode,
				(unsigned long long)wc->wr_id, ntohl(wc->imm_data), r);
	if (wc->byte_len != (round_writes(s, r) > 1 ? 0 : round_size(s, r)))
		return np_check(s, false, "byte_len of the WRITE_WITH_IMM", "round %u: %u", r,
				wc->byte_len);
	*zero_len += round_writes(s, r) > 1;
	if (!data_ok(s, r, &bad_off))
		return np_check(s, false, "data visible when its completion is",
				"round %u, byte %u of %u", r, bad_off, round_size(s, r));
	return true;
}

int np_run_receiver(struct np_side *s, uint32_t rounds)
{
	uint32_t posted = 0, done = 0, zero_len = 0, flushes = 0, cts_signaled = 0;
	double t0 = np_now_ms(), last = t0;
	struct stash st = {.n = 0};
	struct ibv_wc wc[16];

	while (done < rounds || cts_signaled < rounds / NP_CTS_SIGNAL_EVERY) {
		int n;

		while (posted < rounds && posted - done < s->depth)
			if (post_cts(s, posted++))
				return np_check(s, false, "receives and CTS writes posted", "%s",
						strerror(errno)),
				       -1;
		n = next_wcs(s, &st, wc, 16);
		if (n < 0)
			return -1;
		if (n)
			last = np_now_ms();
		else
			idle();
		if (!n && np_now_ms() - last > SPIN_LIMIT_MS)
			return np_check(s, false, "data rounds arrive", "stuck at round %u", done),
			       -1;
		for (int i = 0; i < n; i++) {
			if (!wc_ok(s, &wc[i], "receiver completions succeed"))
				return -1;
			if (wc[i].opcode == IBV_WC_RDMA_WRITE) {
				cts_signaled++;
				continue;
			}
			if (!round_done(s, &wc[i], done, &zero_len))
				return -1;
			if (done % NP_FLUSH_EVERY == 1 && round_size(s, done) >= 4) {
				if (!flush(s, done, &st))
					return np_check(s, false, "flush READ on the self QP",
							"round %u", done),
					       -1;
				flushes++;
			}
			done++;
		}
	}
	np_check(s, true, "every round's bytes visible when its RECV_RDMA_WITH_IMM is", "%s", "");
	np_check(s, zero_len > 0 || s->bench_size,
		 "zero-length WRITE_WITH_IMM (num_sge 0): byte_len 0, right imm", "none seen");
	np_check(s, flushes > 0, "4-byte RDMA_READ flushes through the QP connected to itself",
		 "none done");
	np_check(s, cts_signaled == rounds / NP_CTS_SIGNAL_EVERY,
		 "1 CTS write in 256 signaled, the unsignaled ones retired by it",
		 "%u signaled completions for %u rounds", cts_signaled, rounds);
	printf("#    [receiver] %u rounds, %u flushes in %.0f ms\n", rounds, flushes,
	       np_now_ms() - t0);
	if (s->bench_size) {
		double ms = np_now_ms() - t0;

		printf("bench_bytes=%llu bench_ms=%.3f bench_gbit_per_s=%.3f\n",
		       (unsigned long long)rounds * s->bench_size, ms,
		       (double)rounds * s->bench_size * 8 / (ms * 1e6));
	}
	return 0;
}
