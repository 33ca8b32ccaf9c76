/* SPDX-License-Identifier: MIT */
/*
 * The frames of capture records (tools/capture_frames.h): each packet of a
 * record's message as the wire carries it, then what answered it, built by
 * fabric/roce_pkt.c; the RDMA CM's messages as CM MADs (capture_cm.h).
 */
#include "tools/capture_frames.h"
#include "cm/cm_mad.h"
#include "cm/cm_path.h"
#include "fabric/roce_pkt.h"
#include "tools/capture_cm.h"

#include <endian.h>
#include <string.h>

#define FRAME_MAX (ROCE_MAX_HDR_LEN + 4096 + 8)

/* Addresses of one direction: from (hca, port, gid) to (hca, port, gid). */
static void addr_of(const struct vfab_capture_frames *o, const struct vfab_cap_rec *r, bool reverse,
		    struct roce_addr *a)
{
	const struct vfab_port *sp = &o->hcas[r->src_hca].ports[r->src_port - 1];
	const struct vfab_port *dp = &o->hcas[r->dst_hca].ports[r->dst_port - 1];

	memset(a, 0, sizeof(*a));
	memcpy(a->smac, reverse ? dp->mac : sp->mac, 6);
	memcpy(a->dmac, reverse ? sp->mac : dp->mac, 6);
	memcpy(a->sgid, reverse ? r->dgid : r->sgid, 16);
	memcpy(a->dgid, reverse ? r->sgid : r->dgid, 16);
	a->l3 = (enum roce_l3)r->l3;
	/* RoCE v2 spreads flows by source port: one per QP pair, as mlx5 does. */
	a->udp_sport = (uint16_t)(0xC000 | ((r->sqpn ^ r->dqpn) & 0x3fff));
}

/*
 * One frame: headers, then paylen bytes of which the first `known` are in
 * pay (the rest unknown: the frame is cut there in the file).
 */
static void frame(struct vfab_capture_frames *o, uint64_t ts, const struct roce_addr *a,
		  const struct roce_bth *b, const struct roce_ext *x, const uint8_t *pay,
		  uint32_t paylen, uint32_t known)
{
	uint8_t buf[FRAME_MAX];
	uint32_t incl;
	int len, hdr;

	hdr = roce_hdr_len(a->l3, b->opcode);
	len = roce_pkt_build_cut(buf, sizeof(buf), a, b, x, pay, paylen, known);
	if (len < 0 || hdr < 0)
		return;
	incl = known >= paylen ? (uint32_t)len : (uint32_t)hdr + known;
	if (incl > o->snaplen)
		incl = o->snaplen;
	o->frames++;
	o->put(o->arg, ts, buf, (uint32_t)len, incl);
}

static enum roce_pos pos_of(uint32_t pkt, uint32_t npkts)
{
	if (npkts == 1)
		return ROCE_POS_ONLY;
	return pkt == 0 ? ROCE_POS_FIRST : pkt + 1 == npkts ? ROCE_POS_LAST : ROCE_POS_MIDDLE;
}

static uint32_t *msn_of(struct vfab_capture_frames *o, const struct vfab_cap_rec *r)
{
	uint32_t key = r->dst_hca * 2654435761u ^ r->dqpn * 40503u;

	return &o->msn[key % (sizeof(o->msn) / sizeof(o->msn[0]))];
}

/* The responder's answer to the message's last request packet (or its NAK). */
static void answer(struct vfab_capture_frames *o, const struct vfab_cap_rec *r, uint32_t last_psn)
{
	struct roce_bth b = {.opcode = ROCE_OP_ACK, .pkey = ROCE_DEFAULT_PKEY, .dqpn = r->sqpn};
	struct roce_ext x = {0};
	struct roce_addr a;

	addr_of(o, r, true, &a);
	switch (r->result) {
	case VFAB_CAP_ACKED:
		/* 0x1f: an ACK without credits to count (no end-to-end flow control). */
		x.aeth_syndrome = 0x1f;
		b.psn = last_psn;
		x.msn = ++*msn_of(o, r);
		break;
	case VFAB_CAP_RNR:
	case VFAB_CAP_NAK:
		x.aeth_syndrome = r->syndrome;
		b.psn = r->psn;
		x.msn = *msn_of(o, r);
		break;
	case VFAB_CAP_LOST:
		/* The packets after the lost one draw a PSN sequence error NAK. */
		if (r->lost_pkt + 1 >= r->npkts)
			return;
		x.aeth_syndrome = 0x60;
		b.psn = (r->psn + r->lost_pkt) & 0xffffff;
		x.msn = *msn_of(o, r);
		break;
	default:
		return;
	}
	frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
}

static bool is_atomic(uint32_t op)
{
	return op == 5 || op == 6; /* IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD */
}

/*
 * The frames of packet pkt of a record's message, kept bytes of its payload
 * at pay: the request packet, and what answered it.
 */
static void packet(struct vfab_capture_frames *o, const struct vfab_cap_rec *r, uint32_t pkt,
		   const uint8_t *pay, uint32_t kept)
{
	uint32_t mtu = vfab_cap_mtu_bytes(r->pmtu), psn = (r->psn + pkt) & 0xffffff;
	uint64_t off = (uint64_t)pkt * mtu;
	uint32_t chunk = (uint32_t)(r->msg_len - off < mtu ? r->msg_len - off : mtu);
	enum roce_pos pos = pos_of(pkt, r->npkts);
	struct roce_bth b = {.pkey = ROCE_DEFAULT_PKEY, .dqpn = r->dqpn, .psn = psn};
	struct roce_ext x = {.va = r->va, .rkey = r->rkey, .xrc_srqn = r->xrc_srqn};
	struct roce_addr a;
	int op;

	addr_of(o, r, false, &a);
	if (r->qp_type == 4) { /* UD: one datagram */
		struct vfab_cm_msg cm;
		uint8_t mad[VFAB_CM_MAD_BYTES];

		/* vfab's CM between its UD QPs: a CM MAD between QP1s on the wire. */
		if (kept == r->msg_len && vfab_capture_cm_decode(r->qkey, pay, kept, &cm) &&
		    vfab_cm_mad_encode(&cm, (uint64_t)cm.pid << 32 | cm.local_id,
				       htobe64(o->hcas[r->src_hca].node_guid), r->dgid, mad,
				       sizeof(mad)) > 0) {
			b.opcode = ROCE_OP_UD_SEND_ONLY;
			b.dqpn = 1;
			x.qkey = VFAB_CM_QP1_QKEY;
			x.src_qpn = 1;
			frame(o, r->ts_ns, &a, &b, &x, mad, sizeof(mad), sizeof(mad));
			o->mads++;
			return;
		}
		op = r->wr_opcode == 3 ? ROCE_OP_UD_SEND_ONLY_IMM : ROCE_OP_UD_SEND_ONLY;
		b.opcode = (uint8_t)op;
		b.se = r->solicited;
		b.psn = r->psn;
		x.qkey = r->qkey;
		x.src_qpn = r->sqpn;
		x.imm = r->imm;
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, kept);
		return;
	}
	if (r->wr_opcode == 4 || is_atomic(r->wr_opcode)) {
		/* One request packet; the data or the result comes back. */
		if (pkt == 0) {
			op = roce_req_opcode(r->qp_type, r->wr_opcode, ROCE_POS_ONLY);
			if (op < 0)
				return;
			b.opcode = (uint8_t)op;
			b.psn = r->psn;
			b.ackreq = true;
			x.dma_len = r->msg_len;
			x.swap_add = r->swap_add;
			x.compare = r->compare;
			frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
		}
		if (r->result != VFAB_CAP_ACKED) {
			if (pkt == 0)
				answer(o, r, r->psn);
			return;
		}
		addr_of(o, r, true, &a);
		b.dqpn = r->sqpn;
		b.ackreq = false;
		x.aeth_syndrome = 0x1f;
		if (is_atomic(r->wr_opcode)) {
			b.opcode = ROCE_OP_ATOMIC_ACK;
			x.orig = r->orig;
			x.msn = ++*msn_of(o, r);
			frame(o, r->ts_ns, &a, &b, &x, NULL, 0, 0);
			return;
		}
		b.opcode = pos == ROCE_POS_ONLY	   ? ROCE_OP_READ_RESP_ONLY
			   : pos == ROCE_POS_FIRST ? ROCE_OP_READ_RESP_FIRST
			   : pos == ROCE_POS_LAST  ? ROCE_OP_READ_RESP_LAST
						   : ROCE_OP_READ_RESP_MIDDLE;
		if (pos == ROCE_POS_ONLY || pos == ROCE_POS_LAST)
			++*msn_of(o, r);
		x.msn = *msn_of(o, r);
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, kept);
		return;
	}
	op = roce_req_opcode(r->qp_type, r->wr_opcode, pos);
	if (op < 0)
		return;
	b.opcode = (uint8_t)op;
	b.ackreq = pos == ROCE_POS_ONLY || pos == ROCE_POS_LAST;
	b.se = b.ackreq && r->solicited;
	x.dma_len = r->msg_len;
	x.imm = r->imm;
	x.inv_rkey = r->imm;
	/* The link lost this packet before the responder's port. */
	if (!(r->result == VFAB_CAP_LOST && pkt == r->lost_pkt))
		frame(o, r->ts_ns, &a, &b, &x, pay, chunk, kept);
	if (pkt + 1 == r->npkts && r->qp_type != 3) /* UC is never answered */
		answer(o, r, psn);
}

void vfab_capture_frames(struct vfab_capture_frames *o, const struct vfab_cap_rec *r,
			 const uint8_t *pay)
{
	uint32_t mtu = vfab_cap_mtu_bytes(r->pmtu), i;

	o->records++;
	for (i = 0; i < r->pkt_count; i++) {
		uint32_t kept = vfab_cap_pkt_kept(r->msg_len, mtu, r->pkt + i, r->pkt_bytes);

		packet(o, r, r->pkt + i, pay, kept);
		pay += kept;
	}
}
