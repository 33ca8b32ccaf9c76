/* SPDX-License-Identifier: MIT */
/*
 * RoCE packet encoder and parser: builds the exact bytes a RoCE port puts on
 * the wire for one packet, Ethernet header first, ICRC last, and reads such a
 * frame back with every check a receiving port makes (roce_parse.c). For
 * `vfab capture` (pcap frames that Wireshark decodes as RoCE) and for a
 * transport that carries real frames between hosts.
 *
 * Frame layout (all multi-byte fields big-endian unless said otherwise):
 *   Ethernet II, 14 bytes: dmac, smac, ethertype (no VLAN tag, no FCS)
 *   RoCE v1:     GRH, 40 bytes, next header 0x1B; ethertype 0x8915
 *   RoCE v2:     IPv4 (20 bytes, ethertype 0x0800) or IPv6 (40 bytes,
 *                ethertype 0x86DD), then UDP, 8 bytes, destination port 4791
 *   BTH, 12 bytes: opcode; SE|M|PadCnt(2)|TVer(4)=0; P_Key; resv8 + DestQP(24);
 *                AckReq(1) + resv7 + PSN(24)
 *   extension headers, in this order, those the opcode carries (IBA opcode
 *   table): XRCETH 4, DETH 8, RETH 16, AtomicETH 28, AETH 4, AtomicAckETH 8,
 *   ImmDt 4, IETH 4
 *   payload, then PadCnt zero bytes to a multiple of 4
 *   ICRC, 4 bytes: roce_icrc()'s value, least significant byte first (what
 *   rdma_rxe writes on a little-endian host; scapy's RoCE layer packs it so too)
 *
 * Pure functions: no allocation, no I/O, no global state; thread-safe.
 * vfab's own ports use the default partition: pass pkey 0xFFFF
 * (ROCE_DEFAULT_PKEY); the encoder writes whatever P_Key it is given.
 */
#ifndef VFAB_ROCE_PKT_H
#define VFAB_ROCE_PKT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Sizes in bytes. */
#define ROCE_ETH_HLEN 14
#define ROCE_GRH_LEN 40
#define ROCE_IPV4_HLEN 20
#define ROCE_IPV6_HLEN 40
#define ROCE_UDP_HLEN 8
#define ROCE_BTH_LEN 12
#define ROCE_ICRC_LEN 4
/* The longest roce_hdr_len(): IPv6 + UDP + BTH + XRCETH + AtomicETH. */
#define ROCE_MAX_HDR_LEN (ROCE_ETH_HLEN + ROCE_IPV6_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN + 32)

#define ROCE_ETHERTYPE_V1 0x8915 /* RoCE v1: GRH right after Ethernet */
#define ROCE_V2_UDP_DPORT 4791
#define ROCE_V2_UDP_SPORT_DEFAULT 0xC000 /* used when roce_addr.udp_sport is 0 */
#define ROCE_GRH_NEXT_HDR_IBA 0x1B	 /* GRH next header: BTH follows */
#define ROCE_DEFAULT_PKEY 0xFFFF

enum roce_l3 {
	ROCE_L3_V1 = 0,	     /* GRH over ethertype 0x8915 */
	ROCE_L3_V2_IPV4 = 1, /* IPv4 + UDP 4791 */
	ROCE_L3_V2_IPV6 = 2, /* IPv6 + UDP 4791 */
};

struct roce_addr {
	uint8_t smac[6], dmac[6];
	/*
	 * GIDs are the GRH / IPv6 addresses. For ROCE_L3_V2_IPV4 both must be
	 * IPv4-mapped, ::ffff:a.b.c.d; the IPv4 header carries a.b.c.d.
	 */
	uint8_t sgid[16], dgid[16];
	enum roce_l3 l3;
	uint8_t tclass;	     /* IPv4 TOS byte (DSCP << 2 | ECN), IPv6/GRH traffic class */
	uint8_t hop_limit;   /* IPv4 TTL, IPv6/GRH hop limit; 0 means 64 */
	uint32_t flow_label; /* IPv6/GRH flow label, low 20 bits used; unused for IPv4 */
	uint16_t udp_sport;  /* RoCE v2 UDP source port; 0 means 0xC000 */
	uint16_t ip_id;	     /* IPv4 identification (the header has DF set) */
};

struct roce_bth {
	uint8_t opcode; /* transport (top 3 bits) + operation: ROCE_OP_* */
	bool se;	/* solicited event */
	bool mig;	/* MigReq */
	bool ackreq;	/* AckReq: ask the responder to acknowledge this packet */
	uint16_t pkey;	/* P_Key, written as given (vfab: ROCE_DEFAULT_PKEY) */
	uint32_t dqpn;	/* destination QP number, low 24 bits used */
	uint32_t psn;	/* packet sequence number, low 24 bits used */
};

/*
 * Extension headers. Which ones a packet carries follows from its BTH opcode
 * (the IBA opcode table): the caller fills the fields that opcode needs, the
 * encoder writes exactly those and ignores the rest.
 */
struct roce_ext {
	uint64_t va;	       /* RETH and AtomicETH: remote virtual address */
	uint32_t rkey;	       /* RETH and AtomicETH: R_Key */
	uint32_t dma_len;      /* RETH: length of the whole RDMA operation, bytes */
	uint8_t aeth_syndrome; /* AETH: ACK / RNR NAK / NAK syndrome */
	uint32_t msn;	       /* AETH: message sequence number, low 24 bits used */
	uint32_t qkey;	       /* DETH: Q_Key */
	uint32_t src_qpn;      /* DETH: source QP, low 24 bits used */
	uint32_t imm;	       /* ImmDt: network order as verbs give it (wr.imm_data is a
				  __be32): its bytes are copied to the wire unchanged */
	uint32_t inv_rkey;     /* IETH: the R_Key to invalidate */
	uint64_t swap_add;     /* AtomicETH: swap (CmpSwap) or add (FetchAdd) data */
	uint64_t compare;      /* AtomicETH: compare data (CmpSwap) */
	uint64_t orig;	       /* AtomicAckETH: original remote data */
	uint32_t xrc_srqn;     /* XRCETH (XRC requests): XRC SRQ number, low 24 bits used */
};

/* Big-endian fields, as every RoCE header carries them (encoder, parser, tests). */
static inline uint32_t roce_get16(const uint8_t *p)
{
	return (uint32_t)p[0] << 8 | p[1];
}

static inline uint32_t roce_get32(const uint8_t *p)
{
	return roce_get16(p) << 16 | roce_get16(p + 2);
}

static inline uint64_t roce_get64(const uint8_t *p)
{
	return (uint64_t)roce_get32(p) << 32 | roce_get32(p + 4);
}

static inline void roce_put16(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void roce_put32(uint8_t *p, uint32_t v)
{
	roce_put16(p, v >> 16);
	roce_put16(p + 2, v);
}

static inline void roce_put64(uint8_t *p, uint64_t v)
{
	roce_put32(p, (uint32_t)(v >> 32));
	roce_put32(p + 4, (uint32_t)v);
}

/* BTH opcodes: transport base + operation. */
#define ROCE_OP_RC 0x00
#define ROCE_OP_UC 0x20
#define ROCE_OP_UD 0x60
#define ROCE_OP_XRC 0xA0

#define ROCE_OP_SEND_FIRST 0x00
#define ROCE_OP_SEND_MIDDLE 0x01
#define ROCE_OP_SEND_LAST 0x02
#define ROCE_OP_SEND_LAST_IMM 0x03
#define ROCE_OP_SEND_ONLY 0x04
#define ROCE_OP_SEND_ONLY_IMM 0x05
#define ROCE_OP_WRITE_FIRST 0x06
#define ROCE_OP_WRITE_MIDDLE 0x07
#define ROCE_OP_WRITE_LAST 0x08
#define ROCE_OP_WRITE_LAST_IMM 0x09
#define ROCE_OP_WRITE_ONLY 0x0A
#define ROCE_OP_WRITE_ONLY_IMM 0x0B
#define ROCE_OP_READ_REQUEST 0x0C
#define ROCE_OP_CMP_SWAP 0x13
#define ROCE_OP_FETCH_ADD 0x14
#define ROCE_OP_SEND_LAST_INV 0x16
#define ROCE_OP_SEND_ONLY_INV 0x17
/* RC responses (XRC: ROCE_OP_XRC + the same operation). */
#define ROCE_OP_READ_RESP_FIRST 0x0D  /* AETH + payload */
#define ROCE_OP_READ_RESP_MIDDLE 0x0E /* payload only */
#define ROCE_OP_READ_RESP_LAST 0x0F   /* AETH + payload */
#define ROCE_OP_READ_RESP_ONLY 0x10   /* AETH + payload */
#define ROCE_OP_ACK 0x11	      /* AETH */
#define ROCE_OP_ATOMIC_ACK 0x12	      /* AETH + AtomicAckETH */
#define ROCE_OP_UD_SEND_ONLY 0x64     /* DETH + payload */
#define ROCE_OP_UD_SEND_ONLY_IMM 0x65 /* DETH + ImmDt + payload */

/* What follows the BTH, by opcode (roce_op_hdrs): the IBA opcode table. */
enum {
	ROCE_H_PAY = 1 << 0,	 /* may carry a payload */
	ROCE_H_XRCETH = 1 << 1,	 /* 4 bytes */
	ROCE_H_DETH = 1 << 2,	 /* 8 */
	ROCE_H_RETH = 1 << 3,	 /* 16 */
	ROCE_H_ATOMETH = 1 << 4, /* 28 */
	ROCE_H_AETH = 1 << 5,	 /* 4 */
	ROCE_H_ATOMACK = 1 << 6, /* 8 */
	ROCE_H_IMMDT = 1 << 7,	 /* 4 */
	ROCE_H_IETH = 1 << 8,	 /* 4 */
	ROCE_H_RESP = 1 << 9,	 /* a response: XRC responses carry no XRCETH */
};

/* The ROCE_H_* set of a BTH opcode; 0 for one vfab does not speak (RD, CNP, vendor). */
unsigned roce_op_hdrs(uint8_t opcode);
/* Bytes of the extension headers of a ROCE_H_* set. */
int roce_ext_len(unsigned hdrs);
/* Bytes between the Ethernet header and the BTH (GRH, or IP + UDP); -1 for an unknown l3. */
int roce_net_len(enum roce_l3 l3);

/* The Internet checksum: the running sum of big-endian 16-bit words (an odd last byte padded). */
uint32_t roce_sum16(uint32_t sum, const uint8_t *p, size_t n);
/* The sum folded to 16 bits and inverted: what the checksum field holds. */
uint16_t roce_fold(uint32_t sum);
/*
 * The UDP checksum over IPv6's pseudo-header (the addresses of the header at
 * ip6) and the ulen bytes at udp, its own checksum field as it stands: 0 when
 * that field holds the right value, the value to store when it holds 0.
 */
uint16_t roce_udp6_csum(const uint8_t *ip6, const uint8_t *udp, uint32_t ulen);

/*
 * Builds one frame into buf[0..cap). payload (paylen bytes, not overlapping
 * buf) may be NULL when paylen is 0; x may be NULL (all extension fields
 * zero). PadCnt = (4 - paylen % 4) % 4.
 * Returns the frame length in bytes, or:
 *   -EINVAL   a or b NULL; l3 unknown; opcode not one of RC 0x00-0x14,
 *             0x16-0x17, UC 0x20-0x2B, UD 0x64-0x65, XRC 0xA0-0xB4,
 *             0xB6-0xB7; paylen > 0 for an opcode without payload (READ
 *             request, ACK, atomics, ATOMIC ACK) or with payload NULL;
 *             ROCE_L3_V2_IPV4 with a GID that is not IPv4-mapped
 *   -EMSGSIZE the IP / UDP / GRH length fields (16 bits) cannot hold it
 *   -ENOSPC   cap is smaller than the frame
 * On error nothing is written to buf.
 */
int roce_pkt_build(uint8_t *buf, size_t cap, const struct roce_addr *a, const struct roce_bth *b,
		   const struct roce_ext *x, const void *payload, uint32_t paylen);

/*
 * A frame cut after `known` of its paylen payload bytes, as a capture with
 * a snap length keeps it: the headers describe the whole frame (lengths,
 * IPv4 checksum), payload holds the first known bytes, and buf receives
 * the headers and those bytes only (no ICRC, and a 0 IPv6 UDP checksum:
 * both cover bytes that are not known). Returns the whole frame's length;
 * errors as roce_pkt_build, -EINVAL also for known > paylen.
 */
int roce_pkt_build_cut(uint8_t *buf, size_t cap, const struct roce_addr *a,
		       const struct roce_bth *b, const struct roce_ext *x, const void *payload,
		       uint32_t paylen, uint32_t known);

/*
 * The length of the headers for this opcode and l3: Ethernet through the
 * last extension header (the payload starts there), or -EINVAL for an
 * unknown l3 or opcode. Frame length = this + paylen + pad + ROCE_ICRC_LEN.
 */
int roce_hdr_len(enum roce_l3 l3, uint8_t opcode);

/*
 * The ICRC of a frame roce_pkt_build made, len bytes long without its 4 ICRC
 * bytes: what its last 4 bytes hold (least significant byte first).
 * CRC-32 (IEEE 802.3 polynomial, reflected, initial value all ones, result
 * inverted) over: 8 bytes of 0xFF standing for the absent LRH, then the
 * frame from the IP header / GRH on (Ethernet header excluded) with the
 * fields routers may change set to all ones: IPv4 TOS, TTL and header
 * checksum; IPv6 / GRH traffic class, flow label and hop limit; UDP
 * checksum; the BTH's resv8a byte (FECN, BECN, reserved; BTH byte 4).
 * Everything else (lengths, addresses, ports, the rest of the BTH, the
 * extension headers, payload and pad) is covered as sent.
 * Returns 0 if len is shorter than the headers up to the BTH or l3 unknown.
 */
uint32_t roce_icrc(const uint8_t *frame, size_t len, enum roce_l3 l3);

/*
 * A frame as roce_pkt_parse() read it. Pointers point into the frame.
 * For ROCE_L3_V2_IPV4 the GIDs are IPv4-mapped (::ffff:a.b.c.d).
 */
struct roce_pkt_view {
	enum roce_l3 l3;
	struct roce_addr addr; /* MACs, GIDs, tclass, hop_limit, flow_label, udp_sport, ip_id */
	struct roce_bth bth;
	bool fecn, becn; /* BTH byte 4: congestion marks (a CNP sets BECN) */
	uint8_t pad;	 /* PadCnt */
	struct roce_ext ext;
	const uint8_t *payload;
	uint32_t paylen;
	/* The frame's length by its IP / GRH length field: Ethernet padding not counted. */
	uint32_t len;
};

/*
 * Reads one Ethernet frame (no FCS; trailing Ethernet padding allowed).
 * Returns 0 with *v filled, or:
 *   -EPROTO      not a RoCE packet a port takes: another ethertype, IP version,
 *                protocol or UDP port; IPv4 options or a fragment; GRH next
 *                header not IBA; BTH TVer not 0
 *   -EINVAL      lengths that disagree (IP, UDP, GRH against the frame and each
 *                other), too short for the opcode's headers, a pad without
 *                payload, payload and pad not a multiple of 4 bytes
 *   -EBADMSG     the IPv4 header checksum, an IPv6 UDP checksum (when not 0) or
 *                the ICRC is wrong
 *   -EOPNOTSUPP  an opcode vfab does not speak (RD, CNP, vendor): l3, addr,
 *                bth, fecn and becn are filled, the ICRC was checked
 * Pure: no allocation, no I/O; reads nothing outside frame[0..len).
 */
int roce_pkt_parse(const uint8_t *frame, size_t len, struct roce_pkt_view *v);

/*
 * The BTH opcode of a request packet. qp_type is the verbs QP type
 * (IBV_QPT_RC 2, IBV_QPT_UC 3, IBV_QPT_UD 4, IBV_QPT_XRC_SEND 9), wr_opcode
 * the ibv_wr_opcode (0 RDMA_WRITE, 1 RDMA_WRITE_WITH_IMM, 2 SEND,
 * 3 SEND_WITH_IMM, 4 RDMA_READ, 5 ATOMIC_CMP_AND_SWP, 6 ATOMIC_FETCH_AND_ADD,
 * 9 SEND_WITH_INV), pos the packet's place in the message. The immediate /
 * invalidate variants apply to the LAST and ONLY packets; FIRST and MIDDLE
 * are the plain ones. -EINVAL where the transport has no such operation:
 * UC has no READ, atomics or SEND_WITH_INV; UD only SEND and SEND_WITH_IMM,
 * ONLY; READ and atomics are single request packets (ONLY); any other
 * qp_type, wr_opcode or pos.
 */
enum roce_pos { ROCE_POS_ONLY, ROCE_POS_FIRST, ROCE_POS_MIDDLE, ROCE_POS_LAST };
int roce_req_opcode(uint32_t qp_type, uint32_t wr_opcode, enum roce_pos pos);

#endif /* VFAB_ROCE_PKT_H */
