/* SPDX-License-Identifier: MIT */
/*
 * The RC completer (roce_rc.h): ACKs complete work requests in order, a PSN
 * sequence NAK or the ACK timer send the requester back to the first PSN
 * the responder lacks (go-back-N), each such retry spending one of
 * retry_cnt until progress renews them, and a NAK for an invalid request
 * or a remote access error ends the QP with that status, as a ConnectX
 * reports it (rxe's comp.c does the same).
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

/* Every packet up to and including psn arrived: their WRs complete. */
static int acked(struct roce_req *q, uint32_t psn, uint64_t now_ns, struct roce_wc *wc)
{
	int n = 0;

	while (q->head != q->tail && roce_psn_diff(last_psn(at(q, q->head)), psn) <= 0) {
		wc[n++] = (struct roce_wc){.wr_id = at(q, q->head)->wr_id,
					   .opcode = at(q, q->head)->opcode,
					   .status = ROCE_WC_SUCCESS};
		q->head++;
	}
	if (roce_psn_diff(roce_psn_add(psn, 1), q->una_psn) > 0) {
		q->una_psn = roce_psn_add(psn, 1);
		q->retries = q->retry_cnt; /* progress */
		/* Originals got through while a retry was queued: skip what arrived. */
		if (roce_psn_diff(q->psn, q->una_psn) < 0)
			seek(q, q->una_psn);
	}
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

/* A sequence NAK or a timeout: go back to psn, or give up. */
static int retry(struct roce_req *q, uint32_t psn, uint64_t now_ns, struct roce_wc *wc, int n)
{
	if (!q->retries)
		return fail(q, ROCE_WC_RETRY_EXC_ERR, wc, n);
	q->retries--;
	seek(q, psn);
	q->deadline_ns = now_ns + q->timeout_ns;
	return n;
}

int roce_comp_ack(struct roce_req *q, const struct roce_bth *bth, const struct roce_ext *x,
		  uint64_t now_ns, struct roce_wc *wc, int max)
{
	uint32_t psn = bth->psn & ROCE_PSN_MASK;
	uint8_t syn = x->aeth_syndrome;
	int n;

	if (max < ROCE_RC_MAX_WR)
		return -EINVAL;
	/* Only an ACK, for a PSN sent and not older than the last one acknowledged. */
	if (q->error || bth->opcode != (ROCE_OP_RC | ROCE_OP_ACK) ||
	    roce_psn_diff(psn, q->una_psn) < -1 || roce_psn_diff(psn, q->max_sent_psn) >= 0)
		return 0;
	switch (syn >> 5) {
	case 0: /* ACK */
		return acked(q, psn, now_ns, wc);
	case 3: /* NAK: psn is the responder's ePSN, what precedes it arrived */
		n = acked(q, roce_psn_add(psn, ROCE_PSN_MASK), now_ns, wc);
		switch (syn) {
		case ROCE_AETH_NAK_PSN_SEQ:
			q->st.seq_naks++;
			return retry(q, psn, now_ns, wc, n);
		case ROCE_AETH_NAK_INV_REQ:
			return fail(q, ROCE_WC_REM_INV_REQ_ERR, wc, n);
		case ROCE_AETH_NAK_REM_ACCESS:
			return fail(q, ROCE_WC_REM_ACCESS_ERR, wc, n);
		default:
			return fail(q, ROCE_WC_REM_OP_ERR, wc, n);
		}
	default: /* RNR NAK (not sent by roce_resp yet) and reserved codes */
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
