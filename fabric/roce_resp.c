/* SPDX-License-Identifier: MIT */
/*
 * The RC responder (roce_rc.h), one check per IB rule (C9-7 onwards): the
 * PSN against ePSN (a duplicate is acknowledged again and not executed, a
 * later PSN gets one sequence NAK until ePSN arrives), the opcode against
 * the message in progress, the payload against the path MTU and the RETH's
 * length, then the placement, whose refusal is a remote access (WRITE) or
 * invalid request / operational (SEND) NAK that ends the QP.
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
	       op == ROCE_OP_WRITE_FIRST || op == ROCE_OP_WRITE_ONLY ||
	       op == ROCE_OP_WRITE_ONLY_IMM;
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

/* C9-34 and following: a message starts with FIRST or ONLY, goes on in kind. */
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
	/* A zero-length WRITE checks no key (C9-88). */
	if (len && ops->write(ctx, r->rkey, r->va + r->done_bytes, p, len))
		return ROCE_AETH_NAK_REM_ACCESS;
	return 0;
}

static int send_pkt(struct roce_resp *r, const uint8_t *p, uint32_t len,
		    const struct roce_resp_ops *ops, void *ctx)
{
	int ret = ops->recv(ctx, r->done_bytes, p, len);

	if (ret == -EMSGSIZE)
		return ROCE_AETH_NAK_INV_REQ;
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
		/* Already executed: say again how far this responder got. */
		r->st.duplicates++;
		return reply(r, ROCE_AETH_ACK, roce_psn_add(r->epsn, ROCE_PSN_MASK), ack);
	}
	r->nak_sent = false;
	if (op > ROCE_OP_WRITE_ONLY_IMM || !check_sequence(r, op) || !check_length(r, op, len))
		return fatal(r, ROCE_AETH_NAK_INV_REQ, psn, ack);
	if (starts(op))
		r->done_bytes = 0;
	nak = is_write(op) ? write_pkt(r, op, x, payload, len, ops, ctx)
			   : send_pkt(r, payload, len, ops, ctx);
	if (nak)
		return fatal(r, (uint8_t)nak, psn, ack);
	r->done_bytes += len;
	r->epsn = roce_psn_add(r->epsn, 1);
	r->in_msg = !ends(op);
	r->msg_op = op;
	if (ends(op)) {
		r->msn = roce_psn_add(r->msn, 1);
		r->st.messages++;
		ops->done(ctx, bth->opcode, r->done_bytes, has_imm(op), x->imm);
	}
	return bth->ackreq ? reply(r, ROCE_AETH_ACK, psn, ack) : 0;
}
