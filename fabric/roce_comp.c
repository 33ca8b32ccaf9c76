/* SPDX-License-Identifier: MIT */
/*
 * The RC completer (roce_rc.h): ACKs and READ replies complete work
 * requests in order; a PSN sequence NAK, a lost reply packet or the ACK
 * timer send the requester back to the first PSN the responder lacks
 * (go-back-N), each such retry spending one of retry_cnt until progress
 * renews them; a NAK for an invalid request or a remote access or
 * operational error ends the QP with that status, as a ConnectX reports it
 * (rxe's comp.c does the same).
 */
#include "fabric/roce_rc.h"

#include <errno.h>

static struct roce_wr *at(struct roce_req *q, uint32_t pos)
{
	return &q->wr[pos % ROCE_RC_MAX_WR];
}

static uint32_t last_psn(const struct roce_wr *w)
{
	return roce_psn_add(w->first_psn, w->npkts - 1);
}

/* The requester resumes at psn: the WR holding it (or past the last). */
static void seek(struct roce_req *q, uint32_t psn)
{
	q->psn = psn;
	q->cur = q->head;
	while (q->cur != q->tail && roce_psn_diff(psn, last_psn(at(q, q->cur))) > 0)
		q->cur++;
}

static void arm(struct roce_req *q, uint64_t now_ns)
{
	q->deadline_ns =
	    roce_psn_diff(q->max_sent_psn, q->una_psn) > 0 ? now_ns + q->timeout_ns : 0;
}

static bool is_atomic(const struct roce_wr *w)
{
	return w->opcode == ROCE_WR_CMP_SWAP || w->opcode == ROCE_WR_FETCH_ADD;
}

/* A READ or an atomic: completed by its response, never by an ACK. */
static bool is_read(const struct roce_wr *w)
{
	return w->opcode == ROCE_WR_READ || is_atomic(w);
}

static struct roce_wc success(const struct roce_wr *w)
{
	return (struct roce_wc){.wr_id = w->wr_id, .opcode = w->opcode, .status = ROCE_WC_SUCCESS};
}

/* una moved: the retries are renewed, and what arrived is not sent again. */
static void advanced(struct roce_req *q, uint32_t una)
{
	q->una_psn = una;
	q->retries = q->retry_cnt;
	q->rnr_used = 0;
	q->retrying = false;
	if (roce_psn_diff(q->psn, q->una_psn) < 0)
		seek(q, q->una_psn);
}

/*
 * The responder executed every request before PSN upto: their WRs complete,
 * up to a READ whose reply is not all in (a READ completes by its reply).
 * Returns the completions; *lost when upto lies beyond such a READ's
 * received part: its reply was lost on the way.
 */
static int acked(struct roce_req *q, uint32_t upto, uint64_t now_ns, struct roce_wc *wc, bool *lost)
{
	uint32_t to = upto;
	int n = 0;

	*lost = false;
	while (q->head != q->tail && roce_psn_diff(last_psn(at(q, q->head)), upto) < 0 &&
	       !is_read(at(q, q->head)))
		wc[n++] = success(at(q, q->head++));
	if (q->head != q->tail && is_read(at(q, q->head))) {
		const struct roce_wr *w = at(q, q->head);
		uint32_t got =
		    roce_psn_diff(q->una_psn, w->first_psn) > 0 ? q->una_psn : w->first_psn;

		if (roce_psn_diff(to, got) > 0) {
			*lost = true;
			to = got;
		}
	}
	if (roce_psn_diff(to, q->una_psn) > 0)
		advanced(q, to);
	arm(q, now_ns);
	return n;
}

/* The QP fails: the oldest WR with status, the others flushed. */
static int fail(struct roce_req *q, enum roce_wc_status status, struct roce_wc *wc, int n)
{
	for (uint32_t p = q->head; p != q->tail; p++)
		wc[n++] = (struct roce_wc){.wr_id = at(q, p)->wr_id,
					   .opcode = at(q, p)->opcode,
					   .status = p == q->head ? status : ROCE_WC_WR_FLUSH_ERR};
	q->head = q->cur = q->tail;
	q->error = status;
	q->deadline_ns = 0;
	return n;
}

/*
 * A sequence NAK, a lost READ reply or a timeout: go back to psn, or give
 * up. A gap seen again before progress is the same loss: no second retry.
 */
static int retry(struct roce_req *q, uint32_t psn, uint64_t now_ns, struct roce_wc *wc, int n)
{
	if (!q->retries)
		return fail(q, ROCE_WC_RETRY_EXC_ERR, wc, n);
	q->retries--;
	q->retrying = true;
	seek(q, psn);
	q->deadline_ns = now_ns + q->timeout_ns;
	return n;
}

/* An RNR NAK: from psn on after the timer, rnr_retry times at most. */
static int rnr(struct roce_req *q, uint32_t psn, uint32_t timer, uint64_t now_ns,
	       struct roce_wc *wc, int n)
{
	q->st.rnr_naks++;
	if (q->rnr_retry != ROCE_RNR_RETRY_FOREVER && q->rnr_used++ == q->rnr_retry)
		return fail(q, ROCE_WC_RNR_RETRY_EXC_ERR, wc, n);
	seek(q, psn);
	q->hold_ns = now_ns + roce_rnr_timer_ns(timer);
	q->deadline_ns = q->hold_ns + q->timeout_ns;
	return n;
}

/*
 * A packet of an RDMA READ's reply: in order it is stored and moves una;
 * the READ completes with its last. It also says the responder executed
 * every request before the READ.
 */
static int read_reply(struct roce_req *q, uint32_t psn, const uint8_t *payload, uint32_t len,
		      uint64_t now_ns, struct roce_wc *wc)
{
	uint32_t pos = q->head;
	const struct roce_wr *w;
	uint32_t k, want;
	bool lost;
	int n;

	while (pos != q->tail && roce_psn_diff(last_psn(at(q, pos)), psn) < 0)
		pos++;
	if (pos == q->tail || !is_read(at(q, pos)) || roce_psn_diff(psn, at(q, pos)->first_psn) < 0)
		return 0; /* no READ of ours asked for it */
	w = at(q, pos);
	n = acked(q, w->first_psn, now_ns, wc, &lost);
	if (lost)
		return q->retrying ? n : retry(q, q->una_psn, now_ns, wc, n);
	if (q->head != pos || psn != q->una_psn) {
		/* Earlier than una: a duplicate. Later: a packet of it was lost. */
		if (roce_psn_diff(psn, q->una_psn) < 0 || q->retrying)
			return n;
		return retry(q, q->una_psn, now_ns, wc, n);
	}
	k = (uint32_t)roce_psn_diff(psn, w->first_psn);
	want =
	    w->len - k * q->pmtu_bytes < q->pmtu_bytes ? w->len - k * q->pmtu_bytes : q->pmtu_bytes;
	if (len != want)
		return fail(q, ROCE_WC_BAD_RESP_ERR, wc, n);
	if (len && q->place)
		q->place(q->place_ctx, w, k * q->pmtu_bytes, payload, len);
	advanced(q, roce_psn_add(psn, 1));
	if (k + 1 == w->npkts)
		wc[n++] = success(at(q, q->head++));
	arm(q, now_ns);
	return n;
}

/*
 * An atomic's answer: the original value, for the atomic at psn. It also
 * says the responder executed every request before it.
 */
static int atomic_ack(struct roce_req *q, uint32_t psn, uint64_t orig, uint64_t now_ns,
		      struct roce_wc *wc)
{
	uint32_t pos = q->head;
	const struct roce_wr *w;
	bool lost;
	int n;

	while (pos != q->tail && roce_psn_diff(at(q, pos)->first_psn, psn) < 0)
		pos++;
	if (pos == q->tail || at(q, pos)->first_psn != psn || !is_atomic(at(q, pos)))
		return 0; /* no atomic of ours asked for it */
	w = at(q, pos);
	n = acked(q, psn, now_ns, wc, &lost);
	if (lost) /* a READ before it lost part of its reply */
		return q->retrying ? n : retry(q, q->una_psn, now_ns, wc, n);
	if (q->head != pos)
		return n;
	if (q->place)
		q->place(q->place_ctx, w, 0, (const uint8_t *)&orig, sizeof(orig));
	advanced(q, roce_psn_add(psn, 1));
	wc[n++] = success(at(q, q->head++));
	arm(q, now_ns);
	return n;
}

int roce_comp_rx(struct roce_req *q, const struct roce_bth *bth, const struct roce_ext *x,
		 const uint8_t *payload, uint32_t len, uint64_t now_ns, struct roce_wc *wc, int max)
{
	uint32_t psn = bth->psn & ROCE_PSN_MASK;
	uint8_t syn = x->aeth_syndrome;
	bool lost;
	int n;

	if (max < ROCE_RC_MAX_WR)
		return -EINVAL;
	/* Only for a PSN sent and not older than the last one acknowledged. */
	if (q->error || roce_psn_diff(psn, q->una_psn) < -1 ||
	    roce_psn_diff(psn, q->max_sent_psn) >= 0)
		return 0;
	if (bth->opcode >= (ROCE_OP_RC | ROCE_OP_READ_RESP_FIRST) &&
	    bth->opcode <= (ROCE_OP_RC | ROCE_OP_READ_RESP_ONLY))
		return read_reply(q, psn, payload, len, now_ns, wc);
	if (bth->opcode == (ROCE_OP_RC | ROCE_OP_ATOMIC_ACK))
		return atomic_ack(q, psn, x->orig, now_ns, wc);
	if (bth->opcode != (ROCE_OP_RC | ROCE_OP_ACK))
		return 0;
	switch (syn >> 5) {
	case 0: /* ACK: everything up to psn executed */
		n = acked(q, roce_psn_add(psn, 1), now_ns, wc, &lost);
		return lost && !q->retrying ? retry(q, q->una_psn, now_ns, wc, n) : n;
	case 3: /* NAK: psn is the responder's ePSN, what precedes it executed */
		n = acked(q, psn, now_ns, wc, &lost);
		switch (syn) {
		case ROCE_AETH_NAK_PSN_SEQ:
			q->st.seq_naks++;
			return retry(q, q->una_psn, now_ns, wc, n);
		case ROCE_AETH_NAK_INV_REQ:
			return fail(q, ROCE_WC_REM_INV_REQ_ERR, wc, n);
		case ROCE_AETH_NAK_REM_ACCESS:
			return fail(q, ROCE_WC_REM_ACCESS_ERR, wc, n);
		default:
			return fail(q, ROCE_WC_REM_OP_ERR, wc, n);
		}
	case 1: /* RNR NAK: no receive at psn yet; send it again after its timer */
		n = acked(q, psn, now_ns, wc, &lost);
		return rnr(q, psn, syn & 0x1f, now_ns, wc, n);
	default: /* reserved codes */
		return 0;
	}
}

int roce_comp_timer(struct roce_req *q, uint64_t now_ns, struct roce_wc *wc, int max)
{
	if (max < ROCE_RC_MAX_WR)
		return -EINVAL;
	if (q->error || !q->deadline_ns || now_ns < q->deadline_ns)
		return 0;
	if (roce_psn_diff(q->max_sent_psn, q->una_psn) <= 0) {
		q->deadline_ns = 0;
		return 0;
	}
	q->st.timeouts++;
	return retry(q, q->una_psn, now_ns, wc, 0);
}
