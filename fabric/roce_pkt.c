/* SPDX-License-Identifier: MIT */
/*
 * RoCE packet encoder (see roce_pkt.h). Header layouts and the opcode table
 * follow the IBA (vol 1, ch. 9 and annexes A16/A17 for RoCE v1/v2), as
 * implemented by Linux rdma_rxe and decoded by Wireshark.
 */
#include "fabric/roce_pkt.h"

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

/* CRC-32, polynomial 0x04C11DB7 reflected (0xEDB88320): the byte-wise table. */
static const uint32_t crc32_tab[256] = {
    0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f, 0xe963a535, 0x9e6495a3,
    0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988, 0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91,
    0x1db71064, 0x6ab020f2, 0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
    0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9, 0xfa0f3d63, 0x8d080df5,
    0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172, 0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b,
    0x35b5a8fa, 0x42b2986c, 0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
    0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423, 0xcfba9599, 0xb8bda50f,
    0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924, 0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d,
    0x76dc4190, 0x01db7106, 0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
    0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d, 0x91646c97, 0xe6635c01,
    0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e, 0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457,
    0x65b0d9c6, 0x12b7e950, 0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
    0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7, 0xa4d1c46d, 0xd3d6f4fb,
    0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0, 0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9,
    0x5005713c, 0x270241aa, 0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
    0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81, 0xb7bd5c3b, 0xc0ba6cad,
    0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a, 0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683,
    0xe3630b12, 0x94643b84, 0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
    0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb, 0x196c3671, 0x6e6b06e7,
    0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc, 0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5,
    0xd6d6a3e8, 0xa1d1937e, 0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
    0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55, 0x316e8eef, 0x4669be79,
    0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236, 0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f,
    0xc5ba3bbe, 0xb2bd0b28, 0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
    0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f, 0x72076785, 0x05005713,
    0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38, 0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21,
    0x86d3d2d4, 0xf1d4e242, 0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
    0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69, 0x616bffd3, 0x166ccf45,
    0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2, 0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db,
    0xaed16a4a, 0xd9d65adc, 0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
    0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693, 0x54de5729, 0x23d967bf,
    0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94, 0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};

/*
 * Slicing by 8: tab8[k][i] is the register after byte i and k zero bytes,
 * derived from crc32_tab once; 8 bytes cost 8 independent lookups instead
 * of a chain of 8 (a capture computes this over every frame).
 */
static uint32_t tab8[8][256];

__attribute__((constructor)) static void crc32_tab8(void)
{
	for (unsigned int i = 0; i < 256; i++) {
		tab8[0][i] = crc32_tab[i];
		for (unsigned int k = 1; k < 8; k++)
			tab8[k][i] = (tab8[k - 1][i] >> 8) ^ crc32_tab[tab8[k - 1][i] & 0xff];
	}
}

static uint32_t crc32_update(uint32_t crc, const uint8_t *p, size_t n)
{
	for (; n >= 8; n -= 8, p += 8) {
		uint32_t lo = crc ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
				     (uint32_t)p[3] << 24);
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 | (uint32_t)p[6] << 16 |
			      (uint32_t)p[7] << 24;

		crc = tab8[7][lo & 0xff] ^ tab8[6][(lo >> 8) & 0xff] ^ tab8[5][(lo >> 16) & 0xff] ^
		      tab8[4][lo >> 24] ^ tab8[3][hi & 0xff] ^ tab8[2][(hi >> 8) & 0xff] ^
		      tab8[1][(hi >> 16) & 0xff] ^ tab8[0][hi >> 24];
	}
	while (n--)
		crc = crc32_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
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

	crc = crc32_update(0xffffffffu, lrh_ones, sizeof(lrh_ones));
	crc = crc32_update(crc, m, hdrs);
	crc = crc32_update(crc, frame + ROCE_ETH_HLEN + hdrs, len - ROCE_ETH_HLEN - hdrs);
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
