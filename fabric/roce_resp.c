/* SPDX-License-Identifier: MIT */
/*
 * The RC responder (roce_rc.h), one check per IB rule (chapter 9.7): the
 * PSN against ePSN (a duplicate is acknowledged again and not executed,
 * except a READ, whose reply is sent again; a later PSN gets one sequence
 * NAK until ePSN arrives), the opcode against the message in progress, the
 * payload against the path MTU and the RETH's length, then the placement, * whose refusal is a
 * remote access (WRITE, READ) or invalid request / operational (SEND) NAK that ends the QP; a SEND
 * with no receive posted gets an RNR NAK and nothing ends. A READ's reply is read from memory
 * packet by packet as roce_resp_next sends it. An atomic is executed once: its answer is kept,
 * and a repeated request (its ACK was lost) gets it again.
 */
#include "fabric/roce_rc.h"

#include <errno.h>
#include <string.h>

int roce_resp_init(struct roce_resp *r, uint32_t dqpn, uint32_t pmtu_bytes, uint32_t epsn)
{
	if (pmtu_bytes < 256 || pmtu_bytes > 4096 || (pmtu_bytes & (pmtu_bytes - 1)))
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->dqpn = dqpn & ROCE_PSN_MASK;
	r->pmtu_bytes = pmtu_bytes;
	r->pkey = ROCE_DEFAULT_PKEY;
	r->epsn = epsn & ROCE_PSN_MASK;
	return 0;
}

static int reply(struct roce_resp *r, uint8_t syndrome, uint32_t psn, struct roce_tx *ack)
{
	memset(ack, 0, sizeof(*ack));
	ack->bth.opcode = ROCE_OP_RC | ROCE_OP_ACK;
	ack->bth.pkey = r->pkey;
	ack->bth.dqpn = r->dqpn;
	ack->bth.psn = psn & ROCE_PSN_MASK;
	ack->ext.aeth_syndrome = syndrome;
	ack->ext.msn = r->msn;
	if (syndrome != ROCE_AETH_ACK)
		r->st.naks++;
	return 1;
}

/* A NAK that ends the QP: the requester completes with its status. */
static int fatal(struct roce_resp *r, uint8_t syndrome, uint32_t psn, struct roce_tx *ack)
{
	r->error = true;
	return reply(r, syndrome, psn, ack);
}

static bool is_write(uint8_t op)
{
	return op >= ROCE_OP_WRITE_FIRST && op <= ROCE_OP_WRITE_ONLY_IMM;
}

static bool starts(uint8_t op)
{
	return op == ROCE_OP_SEND_FIRST || op == ROCE_OP_SEND_ONLY || op == ROCE_OP_SEND_ONLY_IMM ||
	       op == ROCE_OP_SEND_ONLY_INV || op == ROCE_OP_WRITE_FIRST ||
	       op == ROCE_OP_WRITE_ONLY || op == ROCE_OP_WRITE_ONLY_IMM ||
	       op == ROCE_OP_READ_REQUEST;
}

static bool has_inv(uint8_t op)
{
	return op == ROCE_OP_SEND_LAST_INV || op == ROCE_OP_SEND_ONLY_INV;
}

/* The opcodes of a message the responder takes (atomics aside): RC's 0x00..0x0C, 0x16, 0x17. */
static bool known(uint8_t op)
{
	return op <= ROCE_OP_READ_REQUEST || has_inv(op);
}

static bool ends(uint8_t op)
{
	return op != ROCE_OP_SEND_FIRST && op != ROCE_OP_SEND_MIDDLE && op != ROCE_OP_WRITE_FIRST &&
	       op != ROCE_OP_WRITE_MIDDLE;
}

static bool has_imm(uint8_t op)
{
	return op == ROCE_OP_SEND_LAST_IMM || op == ROCE_OP_SEND_ONLY_IMM ||
	       op == ROCE_OP_WRITE_LAST_IMM || op == ROCE_OP_WRITE_ONLY_IMM;
}

/* A message starts with FIRST or ONLY and goes on in kind. */
static bool check_sequence(const struct roce_resp *r, uint8_t op)
{
	if (!r->in_msg)
		return starts(op);
	return !starts(op) && is_write(op) == is_write(r->msg_op);
}

/* FIRST and MIDDLE carry exactly the path MTU; LAST 1..PMTU; ONLY 0..PMTU. */
static bool check_length(const struct roce_resp *r, uint8_t op, uint32_t len)
{
	if (!ends(op))
		return len == r->pmtu_bytes;
	return len <= r->pmtu_bytes && (starts(op) || len > 0);
}

/* A WRITE packet: within the RETH's length, placed under its R_Key. */
static int write_pkt(struct roce_resp *r, uint8_t op, const struct roce_ext *x, const uint8_t *p,
		     uint32_t len, const struct roce_resp_ops *ops, void *ctx)
{
	if (starts(op)) {
		r->va = x->va;
		r->rkey = x->rkey;
		r->total_bytes = x->dma_len;
	}
	if (len > r->total_bytes - r->done_bytes ||
	    (ends(op) && r->done_bytes + len != r->total_bytes))
		return ROCE_AETH_NAK_INV_REQ;
	/* A zero-length WRITE checks no key. */
	if (len && ops->write(ctx, r->rkey, r->va + r->done_bytes, p, len))
		return ROCE_AETH_NAK_REM_ACCESS;
	return 0;
}

/*
 * An RDMA READ request, new or repeated: its reply waits for roce_resp_next.
 * The whole range must be readable before a byte goes out.
 */
static int read_req(struct roce_resp *r, uint32_t psn, const struct roce_ext *x,
		    const struct roce_resp_ops *ops, void *ctx)
{
	if (x->dma_len > (1u << 31) ||
	    (x->dma_len && ops->read(ctx, x->rkey, x->va, NULL, x->dma_len)))
		return ROCE_AETH_NAK_REM_ACCESS;
	r->rd_on = true;
	r->rd_psn = psn;
	r->rd_va = x->va;
	r->rd_rkey = x->rkey;
	r->rd_left = r->rd_total = x->dma_len;
	return 0;
}

static int send_pkt(struct roce_resp *r, const uint8_t *p, uint32_t len,
		    const struct roce_resp_ops *ops, void *ctx)
{
	int ret = ops->recv(ctx, r->done_bytes, p, len);
	if (ret == -EMSGSIZE)
		return ROCE_AETH_NAK_INV_REQ;
	if (ret == -ENOBUFS)
		return ROCE_AETH_RNR_NAK | r->min_rnr_timer;
	return ret ? ROCE_AETH_NAK_REM_OP : 0;
}

static bool is_atomic_op(uint8_t op)
{
	return op == ROCE_OP_CMP_SWAP || op == ROCE_OP_FETCH_ADD;
}

/* The ATOMIC ACKNOWLEDGE of the atomic at psn, which found orig. */
static int atomic_reply(struct roce_resp *r, uint32_t psn, uint64_t orig, struct roce_tx *ack)
{
	reply(r, ROCE_AETH_ACK, psn, ack);
	ack->bth.opcode = ROCE_OP_RC | ROCE_OP_ATOMIC_ACK;
	ack->ext.orig = orig;
	return 1;
}

/* A new atomic: executed, its answer kept for a repeated request. */
static int atomic_req(struct roce_resp *r, uint8_t op, uint32_t psn, const struct roce_ext *x,
		      const struct roce_resp_ops *ops, void *ctx, struct roce_tx *ack)
{
	uint32_t wr_op = op == ROCE_OP_CMP_SWAP ? ROCE_WR_CMP_SWAP : ROCE_WR_FETCH_ADD;
	uint64_t orig = 0;
	int rc = ops->atomic
		     ? ops->atomic(ctx, wr_op, x->rkey, x->va, x->swap_add, x->compare, &orig)
		     : -EINVAL;

	if (rc)
		return fatal(r, rc == -EINVAL ? ROCE_AETH_NAK_INV_REQ : ROCE_AETH_NAK_REM_ACCESS,
			     psn, ack);
	r->replay[r->replay_next].used = true;
	r->replay[r->replay_next].psn = psn;
	r->replay[r->replay_next].orig = orig;
	r->replay_next = (r->replay_next + 1) % ROCE_RC_ATOMIC_REPLAY;
	r->epsn = roce_psn_add(r->epsn, 1);
	r->msn = roce_psn_add(r->msn, 1);
	r->st.messages++;
	return atomic_reply(r, psn, orig, ack);
}

/* A repeated atomic: its first answer, or nothing when it is too old to be kept. */
static int atomic_again(struct roce_resp *r, uint32_t psn, struct roce_tx *ack)
{
	for (int i = 0; i < ROCE_RC_ATOMIC_REPLAY; i++)
		if (r->replay[i].used && r->replay[i].psn == psn)
			return atomic_reply(r, psn, r->replay[i].orig, ack);
	return 0;
}

/* The receive a WRITE with immediate completes into: recv of no bytes. */
static int recv_for_imm(struct roce_resp *r, const struct roce_resp_ops *ops, void *ctx)
{
	int ret = ops->recv(ctx, 0, NULL, 0);

	if (ret == -ENOBUFS)
		return ROCE_AETH_RNR_NAK | r->min_rnr_timer;
	return ret ? ROCE_AETH_NAK_REM_OP : 0;
}

int roce_resp_rx(struct roce_resp *r, const struct roce_bth *bth, const struct roce_ext *x,
		 const uint8_t *payload, uint32_t len, const struct roce_resp_ops *ops, void *ctx,
		 struct roce_tx *ack)
{
	uint32_t psn = bth->psn & ROCE_PSN_MASK;
	int32_t d = roce_psn_diff(psn, r->epsn);
	uint8_t op = bth->opcode & 0x1f;
	int nak;

	if (r->error || (bth->opcode & 0xe0) != ROCE_OP_RC)
		return 0;
	if (d > 0) {
		r->st.out_of_seq++;
		if (r->nak_sent)
			return 0;
		r->nak_sent = true;
		return reply(r, ROCE_AETH_NAK_PSN_SEQ, r->epsn, ack);
	}
	if (d < 0) {
		r->st.duplicates++;
		/* A READ's reply is sent again (its data may have changed: that is allowed). */
		if (op == ROCE_OP_READ_REQUEST)
			return read_req(r, psn, x, ops, ctx)
				   ? fatal(r, ROCE_AETH_NAK_REM_ACCESS, psn, ack)
				   : 0;
		if (is_atomic_op(op))
			return atomic_again(r, psn, ack);
		/* Already executed: say again how far this responder got. */
		return reply(r, ROCE_AETH_ACK, roce_psn_add(r->epsn, ROCE_PSN_MASK), ack);
	}
	r->nak_sent = false;
	if (is_atomic_op(op) && !r->in_msg && !len)
		return atomic_req(r, op, psn, x, ops, ctx, ack);
	if (!known(op) || !check_sequence(r, op) || !check_length(r, op, len))
		return fatal(r, ROCE_AETH_NAK_INV_REQ, psn, ack);
	if (op == ROCE_OP_READ_REQUEST) {
		if (read_req(r, psn, x, ops, ctx))
			return fatal(r, ROCE_AETH_NAK_REM_ACCESS, psn, ack);
		/* The reply takes a PSN per packet. */
		r->epsn = roce_psn_add(
		    r->epsn, x->dma_len ? (x->dma_len + r->pmtu_bytes - 1) / r->pmtu_bytes : 1);
		r->msn = roce_psn_add(r->msn, 1);
		r->st.messages++;
		return 0;
	}
	if (starts(op))
		r->done_bytes = 0;
	/*
	 * A WRITE with immediate completes into a receive, taken at its last
	 * packet before anything of it is placed: none posted is an RNR NAK
	 * of that packet, which comes again (rxe's RWR packets).
	 */
	nak = is_write(op) && has_imm(op) ? recv_for_imm(r, ops, ctx) : 0;
	/* The R_Key a SEND with invalidate names must be one the QP may invalidate. */
	if (!nak && has_inv(op) && (!ops->invalidate || ops->invalidate(ctx, x->inv_rkey, false)))
		nak = ROCE_AETH_NAK_INV_REQ;
	if (!nak)
		nak = is_write(op) ? write_pkt(r, op, x, payload, len, ops, ctx)
				   : send_pkt(r, payload, len, ops, ctx);
	if ((nak >> 5) == 1) {
		/* Not ready: ePSN stays, the rest of the message is dropped until it comes again.
		 */
		r->st.rnr_naks++;
		r->nak_sent = true;
		return reply(r, (uint8_t)nak, psn, ack);
	}
	if (nak)
		return fatal(r, (uint8_t)nak, psn, ack);
	r->done_bytes += len;
	r->epsn = roce_psn_add(r->epsn, 1);
	r->in_msg = !ends(op);
	r->msg_op = op;
	if (ends(op)) {
		r->msn = roce_psn_add(r->msn, 1);
		r->st.messages++;
		if (has_inv(op))
			ops->invalidate(ctx, x->inv_rkey, true);
		ops->done(ctx, bth->opcode, r->done_bytes, has_imm(op),
			  has_inv(op) ? x->inv_rkey : x->imm);
	}
	return bth->ackreq ? reply(r, ROCE_AETH_ACK, psn, ack) : 0;
}

int roce_resp_next(struct roce_resp *r, const struct roce_resp_ops *ops, void *ctx, uint8_t *buf,
		   struct roce_tx *tx)
{
	uint32_t n = r->rd_left < r->pmtu_bytes ? r->rd_left : r->pmtu_bytes;
	bool first = r->rd_left == r->rd_total, last = n == r->rd_left;

	if (!r->rd_on || r->error)
		return 0;
	if (n && ops->read(ctx, r->rd_rkey, r->rd_va, buf, n)) {
		r->rd_on = false; /* checked whole at the request: the MR went meanwhile */
		return 0;
	}
	memset(tx, 0, sizeof(*tx));
	tx->bth.opcode = ROCE_OP_RC | (first && last ? ROCE_OP_READ_RESP_ONLY
				       : first	     ? ROCE_OP_READ_RESP_FIRST
				       : last	     ? ROCE_OP_READ_RESP_LAST
						     : ROCE_OP_READ_RESP_MIDDLE);
	tx->bth.pkey = r->pkey;
	tx->bth.dqpn = r->dqpn;
	tx->bth.psn = r->rd_psn;
	tx->ext.aeth_syndrome = ROCE_AETH_ACK;
	tx->ext.msn = r->msn;
	tx->payload = n ? buf : NULL;
	tx->len = n;
	r->rd_psn = roce_psn_add(r->rd_psn, 1);
	r->rd_va += n;
	r->rd_left -= n;
	r->rd_on = !last;
	return 1;
}
