/* SPDX-License-Identifier: MIT */
/*
 * RoCE packet parser (see roce_pkt.h): the checks a receiving port makes
 * before a packet reaches a QP, in the order it can make them. The header
 * layouts are the encoder's (roce_pkt.c), read back.
 */
#include "fabric/roce_pkt.h"

#include <errno.h>
#include <string.h>

static void v4map(uint8_t gid[16], const uint8_t *ip)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, ip, 4);
}

/*
 * The network headers between Ethernet and the BTH: fills v->addr and
 * returns the frame's length by its own length field, or -errno.
 */
static int parse_net(const uint8_t *f, size_t len, struct roce_pkt_view *v)
{
	const uint8_t *p = f + ROCE_ETH_HLEN, *udp = NULL;
	size_t end;

	if (v->l3 == ROCE_L3_V2_IPV4) {
		if (p[0] != 0x45 || p[9] != 17)
			return -EPROTO; /* RoCE sends no IP options; UDP only */
		if (roce_get16(p + 6) & 0x3fff)
			return -EPROTO; /* a fragment (MF or an offset) */
		end = ROCE_ETH_HLEN + roce_get16(p + 2);
		if (roce_get16(p + 2) < ROCE_IPV4_HLEN + ROCE_UDP_HLEN || end > len)
			return -EINVAL;
		if (roce_fold(roce_sum16(0, p, ROCE_IPV4_HLEN)))
			return -EBADMSG;
		v->addr.tclass = p[1];
		v->addr.hop_limit = p[8];
		v->addr.ip_id = (uint16_t)roce_get16(p + 4);
		v4map(v->addr.sgid, p + 12);
		v4map(v->addr.dgid, p + 16);
		udp = p + ROCE_IPV4_HLEN;
	} else {
		uint32_t w = roce_get32(p);
		bool v1 = v->l3 == ROCE_L3_V1;

		if (w >> 28 != 6 || p[6] != (v1 ? ROCE_GRH_NEXT_HDR_IBA : 17))
			return -EPROTO;
		end = ROCE_ETH_HLEN + ROCE_IPV6_HLEN + roce_get16(p + 4);
		if (end > len || (!v1 && roce_get16(p + 4) < ROCE_UDP_HLEN))
			return -EINVAL;
		v->addr.tclass = (uint8_t)(w >> 20);
		v->addr.flow_label = w & 0xfffff;
		v->addr.hop_limit = p[7];
		memcpy(v->addr.sgid, p + 8, 16);
		memcpy(v->addr.dgid, p + 24, 16);
		if (!v1)
			udp = p + ROCE_IPV6_HLEN;
	}
	if (udp) {
		uint32_t ulen = roce_get16(udp + 4);

		if (roce_get16(udp + 2) != ROCE_V2_UDP_DPORT)
			return -EPROTO;
		if (ulen != end - (size_t)(udp - f))
			return -EINVAL;
		/* IPv4 RoCE sends no UDP checksum; over IPv6 one that is sent must hold. */
		if (v->l3 == ROCE_L3_V2_IPV6 && roce_get16(udp + 6) && roce_udp6_csum(p, udp, ulen))
			return -EBADMSG;
		v->addr.udp_sport = (uint16_t)roce_get16(udp);
	}
	memcpy(v->addr.dmac, f, 6);
	memcpy(v->addr.smac, f + 6, 6);
	return (int)end;
}

/* The extension headers the opcode's set h carries, in the encoder's order. */
static const uint8_t *parse_ext(const uint8_t *q, unsigned h, struct roce_ext *x)
{
	if (h & ROCE_H_XRCETH) {
		x->xrc_srqn = roce_get32(q) & 0xffffff;
		q += 4;
	}
	if (h & ROCE_H_DETH) {
		x->qkey = roce_get32(q);
		x->src_qpn = roce_get32(q + 4) & 0xffffff;
		q += 8;
	}
	if (h & ROCE_H_RETH) {
		x->va = roce_get64(q);
		x->rkey = roce_get32(q + 8);
		x->dma_len = roce_get32(q + 12);
		q += 16;
	}
	if (h & ROCE_H_ATOMETH) {
		x->va = roce_get64(q);
		x->rkey = roce_get32(q + 8);
		x->swap_add = roce_get64(q + 12);
		x->compare = roce_get64(q + 20);
		q += 28;
	}
	if (h & ROCE_H_AETH) {
		x->aeth_syndrome = q[0];
		x->msn = roce_get32(q) & 0xffffff;
		q += 4;
	}
	if (h & ROCE_H_ATOMACK) {
		x->orig = roce_get64(q);
		q += 8;
	}
	if (h & ROCE_H_IMMDT) {
		memcpy(&x->imm, q, 4); /* network order, as verbs hand it over */
		q += 4;
	}
	if (h & ROCE_H_IETH) {
		x->inv_rkey = roce_get32(q);
		q += 4;
	}
	return q;
}

int roce_pkt_parse(const uint8_t *f, size_t len, struct roce_pkt_view *v)
{
	const uint8_t *q;
	uint32_t icrc, ib_len, hdrs;
	unsigned h;
	int n, end;

	memset(v, 0, sizeof(*v));
	if (len < ROCE_ETH_HLEN)
		return -EINVAL;
	switch (roce_get16(f + 12)) {
	case 0x0800:
		v->l3 = ROCE_L3_V2_IPV4;
		break;
	case 0x86dd:
		v->l3 = ROCE_L3_V2_IPV6;
		break;
	case ROCE_ETHERTYPE_V1:
		v->l3 = ROCE_L3_V1;
		break;
	default:
		return -EPROTO;
	}
	n = roce_net_len(v->l3);
	if (len < (size_t)(ROCE_ETH_HLEN + n + ROCE_BTH_LEN + ROCE_ICRC_LEN))
		return -EINVAL;
	end = parse_net(f, len, v);
	if (end < 0)
		return end;
	if ((size_t)end < (size_t)(ROCE_ETH_HLEN + n + ROCE_BTH_LEN + ROCE_ICRC_LEN))
		return -EINVAL;
	v->len = (uint32_t)end;
	icrc = (uint32_t)f[end - 4] | (uint32_t)f[end - 3] << 8 | (uint32_t)f[end - 2] << 16 |
	       (uint32_t)f[end - 1] << 24;
	if (roce_icrc(f, (size_t)end - ROCE_ICRC_LEN, v->l3) != icrc)
		return -EBADMSG;

	q = f + ROCE_ETH_HLEN + n;
	if (q[1] & 0x0f)
		return -EPROTO; /* TVer: a port drops any other transport version */
	v->bth.opcode = q[0];
	v->bth.se = q[1] & 0x80;
	v->bth.mig = q[1] & 0x40;
	v->pad = (q[1] >> 4) & 3;
	v->bth.pkey = (uint16_t)roce_get16(q + 2);
	v->fecn = q[4] & 0x80;
	v->becn = q[4] & 0x40;
	v->bth.dqpn = roce_get32(q + 4) & 0xffffff;
	v->bth.ackreq = q[8] & 0x80;
	v->bth.psn = roce_get32(q + 8) & 0xffffff;
	h = roce_op_hdrs(v->bth.opcode);
	if (!h)
		return -EOPNOTSUPP;

	ib_len = (uint32_t)end - ROCE_ETH_HLEN - (uint32_t)n;
	hdrs = ROCE_BTH_LEN + (uint32_t)roce_ext_len(h);
	if (ib_len < hdrs + v->pad + ROCE_ICRC_LEN)
		return -EINVAL;
	v->paylen = ib_len - hdrs - v->pad - ROCE_ICRC_LEN;
	/*
	 * Pad bytes complete a payload to a multiple of 4 (so is every IBA
	 * packet); an opcode without payload has neither.
	 */
	if ((v->paylen + v->pad) % 4 || (!(h & ROCE_H_PAY) && (v->paylen || v->pad)) ||
	    (v->pad && !v->paylen))
		return -EINVAL;
	v->payload = parse_ext(q + ROCE_BTH_LEN, h, &v->ext);
	return 0;
}
