/* SPDX-License-Identifier: MIT */
/*
 * The RC requester (roce_rc.h): work requests become packets of at most the
 * path MTU, numbered by PSN, in posting order. A retransmission is the same
 * walk from an earlier PSN (the completer rewinds q->psn), so what is sent
 * again is byte for byte what was sent first.
 */
#include "fabric/roce_rc.h"

#include <errno.h>
#include <string.h>

static uint32_t npkts(uint32_t len, uint32_t pmtu)
{
	return len ? (len + pmtu - 1) / pmtu : 1;
}

int roce_req_init(struct roce_req *q, uint32_t dqpn, uint32_t pmtu_bytes, uint32_t psn,
		  uint8_t retry_cnt, uint64_t timeout_ns)
{
	if (pmtu_bytes < 256 || pmtu_bytes > 4096 || (pmtu_bytes & (pmtu_bytes - 1)) ||
	    retry_cnt > 7 || !timeout_ns)
		return -EINVAL;
	memset(q, 0, sizeof(*q));
	q->dqpn = dqpn & ROCE_PSN_MASK;
	q->pmtu_bytes = pmtu_bytes;
	q->pkey = ROCE_DEFAULT_PKEY;
	q->retry_cnt = retry_cnt;
	q->retries = retry_cnt;
	q->rnr_retry = ROCE_RNR_RETRY_FOREVER;
	q->timeout_ns = timeout_ns;
	q->una_psn = q->psn = q->next_psn = q->max_sent_psn = psn & ROCE_PSN_MASK;
	return 0;
}

static bool is_atomic(uint32_t op)
{
	return op == ROCE_WR_CMP_SWAP || op == ROCE_WR_FETCH_ADD;
}

int roce_req_post(struct roce_req *q, const struct roce_wr *wr)
{
	struct roce_wr *w;

	bool carries = wr->opcode < ROCE_WR_READ || wr->opcode == ROCE_WR_SEND_INV;

	if ((wr->opcode > ROCE_WR_FETCH_ADD && wr->opcode != ROCE_WR_SEND_INV) ||
	    (is_atomic(wr->opcode) && wr->len != 8) || (wr->len && !wr->data && carries))
		return -EINVAL;
	if (q->tail - q->head == ROCE_RC_MAX_WR)
		return -ENOMEM;
	w = &q->wr[q->tail % ROCE_RC_MAX_WR];
	*w = *wr;
	w->first_psn = q->next_psn;
	w->npkts = is_atomic(wr->opcode) ? 1 : npkts(wr->len, q->pmtu_bytes);
	q->next_psn = roce_psn_add(q->next_psn, w->npkts);
	q->tail++;
	return 0;
}

/*
 * An RDMA READ from its k-th reply packet on: one request for the rest (a
 * retry asks only for what did not arrive, as the IB specification allows).
 */
static void fill_read(const struct roce_req *q, const struct roce_wr *w, uint32_t k,
		      struct roce_tx *tx)
{
	uint32_t off = k * q->pmtu_bytes;

	memset(tx, 0, sizeof(*tx));
	tx->bth.opcode = ROCE_OP_RC | ROCE_OP_READ_REQUEST;
	tx->bth.pkey = q->pkey;
	tx->bth.dqpn = q->dqpn;
	tx->bth.psn = roce_psn_add(w->first_psn, k);
	tx->ext.va = w->va + off;
	tx->ext.rkey = w->rkey;
	tx->ext.dma_len = w->len - off;
}

/* An atomic: one request packet, answered by an ATOMIC ACKNOWLEDGE. */
static void fill_atomic(const struct roce_req *q, const struct roce_wr *w, struct roce_tx *tx)
{
	memset(tx, 0, sizeof(*tx));
	tx->bth.opcode =
	    ROCE_OP_RC | (w->opcode == ROCE_WR_CMP_SWAP ? ROCE_OP_CMP_SWAP : ROCE_OP_FETCH_ADD);
	tx->bth.pkey = q->pkey;
	tx->bth.dqpn = q->dqpn;
	tx->bth.psn = w->first_psn;
	tx->bth.ackreq = true;
	tx->ext.va = w->va;
	tx->ext.rkey = w->rkey;
	tx->ext.swap_add = w->swap_add;
	tx->ext.compare = w->compare;
}

/* Packet k of w: its opcode, headers and slice of the data. */
static void fill(const struct roce_req *q, const struct roce_wr *w, uint32_t k, struct roce_tx *tx)
{
	enum roce_pos pos = w->npkts == 1	? ROCE_POS_ONLY
			    : k == 0		? ROCE_POS_FIRST
			    : k + 1 == w->npkts ? ROCE_POS_LAST
						: ROCE_POS_MIDDLE;
	uint32_t off = k * q->pmtu_bytes;

	memset(tx, 0, sizeof(*tx));
	tx->bth.opcode = (uint8_t)roce_req_opcode(2 /* IBV_QPT_RC */, w->opcode, pos);
	tx->bth.pkey = q->pkey;
	tx->bth.dqpn = q->dqpn;
	tx->bth.psn = roce_psn_add(w->first_psn, k);
	tx->bth.ackreq = pos == ROCE_POS_ONLY || pos == ROCE_POS_LAST;
	/* RETH in the first packet of a WRITE; ImmDt in the last of an _IMM. */
	tx->ext.va = w->va;
	tx->ext.rkey = w->rkey;
	tx->ext.dma_len = w->len;
	tx->ext.imm = w->imm;
	tx->ext.inv_rkey = w->inv_rkey; /* IETH in the last of a SEND with invalidate */
	tx->payload = w->len ? w->data + off : NULL;
	tx->len = w->len - off < q->pmtu_bytes ? w->len - off : q->pmtu_bytes;
}

int roce_req_next(struct roce_req *q, uint64_t now_ns, struct roce_tx *tx)
{
	const struct roce_wr *w;
	uint32_t k;
	if (q->error || q->cur == q->tail || now_ns < q->hold_ns ||
	    roce_psn_diff(q->psn, q->una_psn) >= ROCE_RC_MAX_UNACKED)
		return 0;
	w = &q->wr[q->cur % ROCE_RC_MAX_WR];
	k = (uint32_t)roce_psn_diff(q->psn, w->first_psn);
	if (w->opcode == ROCE_WR_READ) {
		fill_read(q, w, k, tx);
		/* The reply takes the PSNs up to the READ's last. */
		q->psn = roce_psn_add(q->psn, w->npkts - k - 1);
		k = w->npkts - 1;
	} else if (is_atomic(w->opcode)) {
		fill_atomic(q, w, tx);
	} else {
		fill(q, w, k, tx);
	}
	if (++q->since_ackreq >= ROCE_RC_ACK_EVERY)
		tx->bth.ackreq = true;
	if (tx->bth.ackreq)
		q->since_ackreq = 0;
	q->st.packets++;
	if (roce_psn_diff(q->psn, q->max_sent_psn) < 0)
		q->st.retransmitted++;
	q->psn = roce_psn_add(q->psn, 1);
	if (roce_psn_diff(q->psn, q->max_sent_psn) > 0)
		q->max_sent_psn = q->psn;
	if (k + 1 == w->npkts)
		q->cur++;
	if (!q->deadline_ns)
		q->deadline_ns = now_ns + q->timeout_ns;
	return 1;
}
