/* SPDX-License-Identifier: MIT */
/*
 * RoCE packet encoder (see roce_pkt.h). Header layouts and the opcode table
 * follow the IBA (vol 1, ch. 9 and annexes A16/A17 for RoCE v1/v2), as
 * implemented by Linux rdma_rxe and decoded by Wireshark.
 */
#include "fabric/roce_pkt.h"
#include "fabric/crc32.h"

#include <errno.h>
#include <string.h>

/* The RC operations (low 5 opcode bits); 0 for a reserved one. */
static unsigned rc_hdrs(unsigned op)
{
	switch (op) {
	case ROCE_OP_SEND_FIRST:
	case ROCE_OP_SEND_MIDDLE:
	case ROCE_OP_SEND_LAST:
	case ROCE_OP_SEND_ONLY:
	case ROCE_OP_WRITE_MIDDLE:
	case ROCE_OP_WRITE_LAST:
		return ROCE_H_PAY;
	case ROCE_OP_SEND_LAST_IMM:
	case ROCE_OP_SEND_ONLY_IMM:
	case ROCE_OP_WRITE_LAST_IMM:
		return ROCE_H_IMMDT | ROCE_H_PAY;
	case ROCE_OP_WRITE_FIRST:
	case ROCE_OP_WRITE_ONLY:
		return ROCE_H_RETH | ROCE_H_PAY;
	case ROCE_OP_WRITE_ONLY_IMM:
		return ROCE_H_RETH | ROCE_H_IMMDT | ROCE_H_PAY;
	case ROCE_OP_READ_REQUEST:
		return ROCE_H_RETH;
	case ROCE_OP_READ_RESP_FIRST:
	case ROCE_OP_READ_RESP_LAST:
	case ROCE_OP_READ_RESP_ONLY:
		return ROCE_H_RESP | ROCE_H_AETH | ROCE_H_PAY;
	case ROCE_OP_READ_RESP_MIDDLE:
		return ROCE_H_RESP | ROCE_H_PAY;
	case ROCE_OP_ACK:
		return ROCE_H_RESP | ROCE_H_AETH;
	case ROCE_OP_ATOMIC_ACK:
		return ROCE_H_RESP | ROCE_H_AETH | ROCE_H_ATOMACK;
	case ROCE_OP_CMP_SWAP:
	case ROCE_OP_FETCH_ADD:
		return ROCE_H_ATOMETH;
	case ROCE_OP_SEND_LAST_INV:
	case ROCE_OP_SEND_ONLY_INV:
		return ROCE_H_IETH | ROCE_H_PAY;
	default:
		return 0;
	}
}

unsigned roce_op_hdrs(uint8_t opcode)
{
	unsigned op = opcode & 0x1f, h;

	switch (opcode & 0xe0) {
	case ROCE_OP_RC:
		return rc_hdrs(op);
	case ROCE_OP_UC: /* SEND and RDMA WRITE only */
		return op <= ROCE_OP_WRITE_ONLY_IMM ? rc_hdrs(op) : 0;
	case ROCE_OP_UD:
		if (opcode == ROCE_OP_UD_SEND_ONLY)
			return ROCE_H_DETH | ROCE_H_PAY;
		if (opcode == ROCE_OP_UD_SEND_ONLY_IMM)
			return ROCE_H_DETH | ROCE_H_IMMDT | ROCE_H_PAY;
		return 0;
	case ROCE_OP_XRC: /* the RC set; requests carry an XRCETH right after the BTH */
		h = rc_hdrs(op);
		return h && !(h & ROCE_H_RESP) ? h | ROCE_H_XRCETH : h;
	default: /* RD, CNP, manufacturer-specific */
		return 0;
	}
}

int roce_ext_len(unsigned h)
{
	return (h & ROCE_H_XRCETH ? 4 : 0) + (h & ROCE_H_DETH ? 8 : 0) +
	       (h & ROCE_H_RETH ? 16 : 0) + (h & ROCE_H_ATOMETH ? 28 : 0) +
	       (h & ROCE_H_AETH ? 4 : 0) + (h & ROCE_H_ATOMACK ? 8 : 0) +
	       (h & ROCE_H_IMMDT ? 4 : 0) + (h & ROCE_H_IETH ? 4 : 0);
}

int roce_net_len(enum roce_l3 l3)
{
	switch (l3) {
	case ROCE_L3_V1:
		return ROCE_GRH_LEN;
	case ROCE_L3_V2_IPV4:
		return ROCE_IPV4_HLEN + ROCE_UDP_HLEN;
	case ROCE_L3_V2_IPV6:
		return ROCE_IPV6_HLEN + ROCE_UDP_HLEN;
	default:
		return -1;
	}
}

int roce_hdr_len(enum roce_l3 l3, uint8_t opcode)
{
	unsigned h = roce_op_hdrs(opcode);
	int n = roce_net_len(l3);

	if (!h || n < 0)
		return -EINVAL;
	return ROCE_ETH_HLEN + n + ROCE_BTH_LEN + roce_ext_len(h);
}

/*
 * rdma_rxe (rxe_icrc.c) computes the RoCE v2 ICRC the same way: it starts
 * from 0xdebb20e3, the CRC register after 8 bytes of 0xFF (the LRH, absent
 * on Ethernet, counts as all ones), masks the IPv4 TOS, TTL and checksum or
 * the IPv6 traffic class, flow label and hop limit, the UDP checksum and the
 * BTH resv8a byte, and stores the inverted register as a host u32, i.e. least
 * significant byte first on the little-endian hosts it runs on.
 * RoCE v1 follows the same IBA rule with the GRH in place of the IP and UDP
 * headers (its TClass, FlowLabel and HopLmt are the variant fields), the LRH
 * again as 8 bytes of ones. rxe speaks v2 only and Wireshark (4.0) checks no
 * ICRC at all, so for v1 the IBA rule is the only reference.
 */
uint32_t roce_icrc(const uint8_t *frame, size_t len, enum roce_l3 l3)
{
	static const uint8_t lrh_ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	uint8_t m[ROCE_IPV6_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN];
	int n = roce_net_len(l3);
	size_t hdrs;
	uint32_t crc;

	if (n < 0 || len < (size_t)(ROCE_ETH_HLEN + n + ROCE_BTH_LEN))
		return 0;
	hdrs = (size_t)n + ROCE_BTH_LEN;
	memcpy(m, frame + ROCE_ETH_HLEN, hdrs);
	if (l3 == ROCE_L3_V2_IPV4) {
		m[1] = 0xff;	      /* TOS */
		m[8] = 0xff;	      /* TTL */
		m[10] = m[11] = 0xff; /* header checksum */
		m[26] = m[27] = 0xff; /* UDP checksum */
	} else {
		m[0] |= 0x0f;		   /* traffic class, high nibble */
		m[1] = m[2] = m[3] = 0xff; /* traffic class low nibble, flow label */
		m[7] = 0xff;		   /* hop limit */
		if (l3 == ROCE_L3_V2_IPV6)
			m[46] = m[47] = 0xff; /* UDP checksum */
	}
	m[n + 4] = 0xff; /* BTH resv8a: FECN, BECN, reserved */

	crc = vfab_crc32_update(0xffffffffu, lrh_ones, sizeof(lrh_ones));
	crc = vfab_crc32_update(crc, m, hdrs);
	crc = vfab_crc32_update(crc, frame + ROCE_ETH_HLEN + hdrs, len - ROCE_ETH_HLEN - hdrs);
	return ~crc;
}

uint32_t roce_sum16(uint32_t sum, const uint8_t *p, size_t n)
{
	for (; n > 1; p += 2, n -= 2)
		sum += (uint32_t)p[0] << 8 | p[1];
	if (n)
		sum += (uint32_t)p[0] << 8;
	return sum;
}

uint16_t roce_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint16_t roce_udp6_csum(const uint8_t *ip6, const uint8_t *udp, uint32_t ulen)
{
	/* Pseudo-header: addresses, upper-layer length, next header; then UDP + data. */
	uint32_t sum = roce_sum16(0, ip6 + 8, 32) + (ulen >> 16) + (ulen & 0xffff) + 17;

	return roce_fold(roce_sum16(sum, udp, ulen));
}

static bool v4mapped(const uint8_t g[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g, prefix, sizeof(prefix));
}

int roce_pkt_build(uint8_t *buf, size_t cap, const struct roce_addr *a, const struct roce_bth *b,
		   const struct roce_ext *x, const void *payload, uint32_t paylen)
{
	return roce_pkt_build_cut(buf, cap, a, b, x, payload, paylen, paylen);
}

int roce_pkt_build_cut(uint8_t *buf, size_t cap, const struct roce_addr *a,
		       const struct roce_bth *b, const struct roce_ext *x, const void *payload,
		       uint32_t paylen, uint32_t known)
{
	static const struct roce_ext none;
	unsigned h;
	int n;
	uint32_t pad, ttl, ib_len, lenfield, total;
	uint8_t *p, *udp = NULL, *q;

	if (!a || !b)
		return -EINVAL;
	h = roce_op_hdrs(b->opcode);
	n = roce_net_len(a->l3);
	if (!h || n < 0 || (paylen && (!(h & ROCE_H_PAY) || !payload)) || known > paylen)
		return -EINVAL;
	if (a->l3 == ROCE_L3_V2_IPV4 && (!v4mapped(a->sgid) || !v4mapped(a->dgid)))
		return -EINVAL;
	if (!x)
		x = &none;
	/* Bounded before any sum: the largest length field is 16 bits. */
	if (paylen > 0xffff)
		return -EMSGSIZE;
	pad = (4 - paylen % 4) % 4;
	ib_len = ROCE_BTH_LEN + (uint32_t)roce_ext_len(h) + paylen + pad + ROCE_ICRC_LEN;
	/* The GRH payload length, IPv6 payload length (the UDP length), IPv4 total length. */
	if (a->l3 == ROCE_L3_V2_IPV4)
		lenfield = ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ib_len;
	else if (a->l3 == ROCE_L3_V2_IPV6)
		lenfield = ROCE_UDP_HLEN + ib_len;
	else
		lenfield = ib_len;
	if (lenfield > 0xffff)
		return -EMSGSIZE;
	total = ROCE_ETH_HLEN + (uint32_t)n + ib_len;
	/* A cut frame is written up to its known payload only. */
	if (cap < (known < paylen
		       ? total - ib_len + ROCE_BTH_LEN + (uint32_t)roce_ext_len(h) + known
		       : total))
		return -ENOSPC;
	ttl = a->hop_limit ? a->hop_limit : 64;

	memcpy(buf, a->dmac, 6);
	memcpy(buf + 6, a->smac, 6);
	p = buf + ROCE_ETH_HLEN;
	if (a->l3 == ROCE_L3_V2_IPV4) {
		roce_put16(buf + 12, 0x0800);
		p[0] = 0x45; /* version 4, IHL 5 words */
		p[1] = a->tclass;
		roce_put16(p + 2, ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ib_len);
		roce_put16(p + 4, a->ip_id);
		roce_put16(p + 6, 0x4000); /* DF, fragment offset 0 */
		p[8] = (uint8_t)ttl;
		p[9] = 17; /* UDP */
		roce_put16(p + 10, 0);
		memcpy(p + 12, a->sgid + 12, 4);
		memcpy(p + 16, a->dgid + 12, 4);
		roce_put16(p + 10, roce_fold(roce_sum16(0, p, ROCE_IPV4_HLEN)));
		udp = p + ROCE_IPV4_HLEN;
	} else {
		bool v1 = a->l3 == ROCE_L3_V1;

		/* The GRH is laid out as an IPv6 header. */
		roce_put16(buf + 12, v1 ? ROCE_ETHERTYPE_V1 : 0x86dd);
		roce_put32(p, 6u << 28 | (uint32_t)a->tclass << 20 | (a->flow_label & 0xfffff));
		roce_put16(p + 4, v1 ? ib_len : ROCE_UDP_HLEN + ib_len);
		p[6] = v1 ? ROCE_GRH_NEXT_HDR_IBA : 17;
		p[7] = (uint8_t)ttl;
		memcpy(p + 8, a->sgid, 16);
		memcpy(p + 24, a->dgid, 16);
		if (!v1)
			udp = p + ROCE_IPV6_HLEN;
	}
	if (udp) {
		roce_put16(udp, a->udp_sport ? a->udp_sport : ROCE_V2_UDP_SPORT_DEFAULT);
		roce_put16(udp + 2, ROCE_V2_UDP_DPORT);
		roce_put16(udp + 4, ROCE_UDP_HLEN + ib_len);
		roce_put16(udp + 6, 0); /* IPv4: none; IPv6: filled in below */
	}

	q = buf + ROCE_ETH_HLEN + n; /* the BTH */
	q[0] = b->opcode;
	q[1] = (uint8_t)((b->se ? 0x80 : 0) | (b->mig ? 0x40 : 0) | pad << 4); /* TVer 0 */
	roce_put16(q + 2, b->pkey);
	roce_put32(q + 4, b->dqpn & 0xffffff);
	roce_put32(q + 8, (b->ackreq ? 1u << 31 : 0) | (b->psn & 0xffffff));
	q += ROCE_BTH_LEN;
	if (h & ROCE_H_XRCETH) {
		roce_put32(q, x->xrc_srqn & 0xffffff);
		q += 4;
	}
	if (h & ROCE_H_DETH) {
		roce_put32(q, x->qkey);
		roce_put32(q + 4, x->src_qpn & 0xffffff);
		q += 8;
	}
	if (h & ROCE_H_RETH) {
		roce_put64(q, x->va);
		roce_put32(q + 8, x->rkey);
		roce_put32(q + 12, x->dma_len);
		q += 16;
	}
	if (h & ROCE_H_ATOMETH) {
		roce_put64(q, x->va);
		roce_put32(q + 8, x->rkey);
		roce_put64(q + 12, x->swap_add);
		roce_put64(q + 20, x->compare);
		q += 28;
	}
	if (h & ROCE_H_AETH) {
		roce_put32(q, (uint32_t)x->aeth_syndrome << 24 | (x->msn & 0xffffff));
		q += 4;
	}
	if (h & ROCE_H_ATOMACK) {
		roce_put64(q, x->orig);
		q += 8;
	}
	if (h & ROCE_H_IMMDT) {
		memcpy(q, &x->imm, 4); /* already in network order */
		q += 4;
	}
	if (h & ROCE_H_IETH) {
		roce_put32(q, x->inv_rkey);
		q += 4;
	}
	if (known < paylen) {
		/* The rest, the pad and the ICRC are unknown; so is an IPv6 UDP checksum. */
		memcpy(q, payload, known);
		return (int)total;
	}
	if (paylen)
		memcpy(q, payload, paylen);
	memset(q + paylen, 0, pad);
	q += paylen + pad;

	{
		uint32_t icrc = roce_icrc(buf, total - ROCE_ICRC_LEN, a->l3);

		q[0] = (uint8_t)icrc;
		q[1] = (uint8_t)(icrc >> 8);
		q[2] = (uint8_t)(icrc >> 16);
		q[3] = (uint8_t)(icrc >> 24);
	}
	if (a->l3 == ROCE_L3_V2_IPV6) {
		uint16_t c = roce_udp6_csum(p, udp, ROCE_UDP_HLEN + ib_len);

		roce_put16(udp + 6, c ? c : 0xffff);
	}
	return (int)total;
}

/*
 * Request opcodes by ibv_wr_opcode (0..9) and roce_pos (ONLY, FIRST, MIDDLE,
 * LAST), the RC operation bits; -1 where there is none.
 */
static const int8_t req_ops[10][4] = {
    [0] = {ROCE_OP_WRITE_ONLY, ROCE_OP_WRITE_FIRST, ROCE_OP_WRITE_MIDDLE, ROCE_OP_WRITE_LAST},
    [1] = {ROCE_OP_WRITE_ONLY_IMM, ROCE_OP_WRITE_FIRST, ROCE_OP_WRITE_MIDDLE,
	   ROCE_OP_WRITE_LAST_IMM},
    [2] = {ROCE_OP_SEND_ONLY, ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST},
    [3] = {ROCE_OP_SEND_ONLY_IMM, ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST_IMM},
    [4] = {ROCE_OP_READ_REQUEST, -1, -1, -1},
    [5] = {ROCE_OP_CMP_SWAP, -1, -1, -1},
    [6] = {ROCE_OP_FETCH_ADD, -1, -1, -1},
    [7] = {-1, -1, -1, -1}, /* LOCAL_INV: never on the wire */
    [8] = {-1, -1, -1, -1}, /* BIND_MW: never on the wire */
    [9] = {ROCE_OP_SEND_ONLY_INV, ROCE_OP_SEND_FIRST, ROCE_OP_SEND_MIDDLE, ROCE_OP_SEND_LAST_INV},
};

int roce_req_opcode(uint32_t qp_type, uint32_t wr_opcode, enum roce_pos pos)
{
	int op;

	if (wr_opcode >= sizeof(req_ops) / sizeof(req_ops[0]) || (unsigned)pos > ROCE_POS_LAST)
		return -EINVAL;
	op = req_ops[wr_opcode][pos];
	if (op < 0)
		return -EINVAL;
	switch (qp_type) {
	case 2: /* IBV_QPT_RC */
		return ROCE_OP_RC | op;
	case 9: /* IBV_QPT_XRC_SEND */
		return ROCE_OP_XRC | op;
	case 3: /* IBV_QPT_UC: SEND and RDMA WRITE, with or without immediate */
		return wr_opcode <= 3 ? ROCE_OP_UC | op : -EINVAL;
	case 4: /* IBV_QPT_UD: one-packet SENDs */
		if (pos != ROCE_POS_ONLY)
			return -EINVAL;
		if (wr_opcode == 2)
			return ROCE_OP_UD_SEND_ONLY;
		if (wr_opcode == 3)
			return ROCE_OP_UD_SEND_ONLY_IMM;
		return -EINVAL;
	default:
		return -EINVAL;
	}
}
