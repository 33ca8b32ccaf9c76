/* SPDX-License-Identifier: MIT */
/*
 * The RoCE packet encoder (fabric/roce_pkt.c): every header field at its wire
 * offset, the IPv4 header and IPv6 UDP checksums, the pad, and the ICRC,
 * checked against a bitwise CRC-32 over a copy of the frame masked here by
 * hand; the extension headers of each opcode family; the verbs-to-opcode table.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/roce_pkt.h"

/* Offsets of a RoCE v2 / IPv4 frame. */
enum { IP4 = 14, UDP4 = IP4 + 20, BTH4 = UDP4 + 8, EXT4 = BTH4 + 12 };
/* RoCE v2 / IPv6 and RoCE v1 (GRH). */
enum { IP6 = 14, UDP6 = IP6 + 40, BTH6 = UDP6 + 8, GRH = 14, BTH1 = GRH + 40 };

static uint8_t frame[2048];

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* CRC-32 bit by bit (reflected 0x04C11DB7), no pre/post inversion: the raw register. */
static uint32_t crc_bits(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return crc;
}

/*
 * The ICRC as the IBA defines it, computed independently of the module: a
 * masked copy of everything after the Ethernet header, 8 bytes of ones for
 * the LRH in front, standard CRC-32 over the lot.
 */
static uint32_t ref_icrc(const uint8_t *f, size_t len, enum roce_l3 l3)
{
	static uint8_t c[4096];
	size_t n = len - 14;

	memset(c, 0xff, 8);
	memcpy(c + 8, f + 14, n);
	uint8_t *ip = c + 8;
	switch (l3) {
	case ROCE_L3_V2_IPV4:
		ip[1] = 0xff;			/* TOS */
		ip[8] = 0xff;			/* TTL */
		ip[10] = ip[11] = 0xff;		/* header checksum */
		ip[20 + 6] = ip[20 + 7] = 0xff; /* UDP checksum */
		ip[28 + 4] = 0xff;		/* BTH resv8a */
		break;
	case ROCE_L3_V2_IPV6:
		ip[0] |= 0x0f; /* traffic class ... */
		ip[1] = 0xff;  /* ... and flow label */
		ip[2] = 0xff;
		ip[3] = 0xff;
		ip[7] = 0xff; /* hop limit */
		ip[40 + 6] = ip[40 + 7] = 0xff;
		ip[48 + 4] = 0xff;
		break;
	case ROCE_L3_V1:
		ip[0] |= 0x0f;
		ip[1] = ip[2] = ip[3] = 0xff;
		ip[7] = 0xff;
		ip[40 + 4] = 0xff;
		break;
	}
	return ~crc_bits(0xffffffffu, c, n + 8);
}

/* The frame's last 4 bytes hold its ICRC, least significant byte first. */
static void check_icrc(const uint8_t *f, int len, enum roce_l3 l3)
{
	assert_true(len > 4);
	assert_int_equal(le32(f + len - 4), ref_icrc(f, (size_t)len - 4, l3));
	assert_int_equal(roce_icrc(f, (size_t)len - 4, l3), ref_icrc(f, (size_t)len - 4, l3));
}

/* The Internet checksum of bytes already holding their checksum: 0 when right. */
static uint32_t inet_fold(uint32_t sum, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		sum += roce_get16(p + i);
	if (n & 1)
		sum += (uint32_t)p[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return ~sum & 0xffff;
}

static const uint8_t smac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x01};
static const uint8_t dmac[6] = {0x02, 0x00, 0x00, 0x00, 0x00, 0x02};

static struct roce_addr addr(enum roce_l3 l3)
{
	struct roce_addr a;

	memset(&a, 0, sizeof(a));
	memcpy(a.smac, smac, 6);
	memcpy(a.dmac, dmac, 6);
	a.l3 = l3;
	if (l3 == ROCE_L3_V2_IPV4) {
		a.sgid[10] = a.sgid[11] = a.dgid[10] = a.dgid[11] = 0xff;
		assert_int_equal(inet_pton(AF_INET, "10.0.0.1", a.sgid + 12), 1);
		assert_int_equal(inet_pton(AF_INET, "10.0.1.2", a.dgid + 12), 1);
	} else {
		assert_int_equal(inet_pton(AF_INET6, "fd00::1", a.sgid), 1);
		assert_int_equal(inet_pton(AF_INET6, "fd00:1::2", a.dgid), 1);
	}
	return a;
}

static struct roce_bth bth(uint8_t opcode)
{
	struct roce_bth b = {.opcode = opcode, .pkey = ROCE_DEFAULT_PKEY, .dqpn = 0x11, .psn = 1};

	return b;
}

/* Builds into frame[] (prefilled with 0xAA: every byte must be written) and checks the ICRC. */
static int build(const struct roce_addr *a, const struct roce_bth *b, const struct roce_ext *x,
		 const void *pay, uint32_t paylen)
{
	int n;

	memset(frame, 0xaa, sizeof(frame));
	n = roce_pkt_build(frame, sizeof(frame), a, b, x, pay, paylen);
	assert_true(n > 0);
	assert_int_equal(n, roce_hdr_len(a->l3, b->opcode) + paylen + (4 - paylen % 4) % 4 + 4);
	check_icrc(frame, n, a->l3);
	return n;
}

static void test_crc_constants(void **state)
{
	static const uint8_t ones[8] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	static const uint8_t check[] = "123456789";
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY);
	int n;

	(void)state;
	/* The standard CRC-32 check value, and rxe's seed: 8 bytes of 0xFF from all ones. */
	assert_int_equal(~crc_bits(0xffffffffu, check, 9), 0xcbf43926u);
	assert_int_equal(crc_bits(0xffffffffu, ones, 8), 0xdebb20e3u);
	/* rxe's way (start from that seed, masked headers, no LRH bytes) gives the same ICRC. */
	n = build(&a, &b, NULL, "abcd", 4);
	{
		uint8_t m[128];
		size_t len = (size_t)n - 4 - 14;

		memcpy(m, frame + 14, len);
		m[1] = m[8] = m[10] = m[11] = m[26] = m[27] = m[32] = 0xff;
		assert_int_equal(~crc_bits(0xdebb20e3u, m, len), le32(frame + n - 4));
	}
}

/* RC RDMA WRITE First with RETH over IPv4: every field at its offset. */
static void test_write_first_ipv4(void **state)
{
	static const uint8_t pay[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = {.opcode = ROCE_OP_RC | ROCE_OP_WRITE_FIRST,
			     .mig = true,
			     .ackreq = true,
			     .pkey = 0x8001,
			     .dqpn = 0xff123456, /* the top byte is not the QPN's */
			     .psn = 0xfeabcdef};
	struct roce_ext x = {.va = 0x0123456789abcdefull, .rkey = 0xcafef00d, .dma_len = 0x10000};
	int n;

	(void)state;
	a.tclass = 0x68; /* DSCP 26 */
	a.udp_sport = 0xc123;
	a.ip_id = 0x4242;
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, b.opcode), 14 + 20 + 8 + 12 + 16);
	n = build(&a, &b, &x, pay, sizeof(pay));
	assert_int_equal(n, 14 + 20 + 8 + 12 + 16 + 8 + 4);

	/* Ethernet */
	assert_memory_equal(frame, dmac, 6);
	assert_memory_equal(frame + 6, smac, 6);
	assert_int_equal(roce_get16(frame + 12), 0x0800);
	/* IPv4 */
	assert_int_equal(frame[IP4], 0x45);
	assert_int_equal(frame[IP4 + 1], 0x68);
	assert_int_equal(roce_get16(frame + IP4 + 2), n - 14);
	assert_int_equal(roce_get16(frame + IP4 + 4), 0x4242);
	assert_int_equal(roce_get16(frame + IP4 + 6), 0x4000); /* DF */
	assert_int_equal(frame[IP4 + 8], 64);		       /* hop_limit 0 */
	assert_int_equal(frame[IP4 + 9], 17);
	assert_int_equal(inet_fold(0, frame + IP4, 20), 0);
	assert_memory_equal(frame + IP4 + 12, "\x0a\x00\x00\x01", 4);
	assert_memory_equal(frame + IP4 + 16, "\x0a\x00\x01\x02", 4);
	/* UDP */
	assert_int_equal(roce_get16(frame + UDP4), 0xc123);
	assert_int_equal(roce_get16(frame + UDP4 + 2), 4791);
	assert_int_equal(roce_get16(frame + UDP4 + 4), n - 14 - 20);
	assert_int_equal(roce_get16(frame + UDP4 + 6), 0);
	/* BTH */
	assert_int_equal(frame[BTH4], 0x06);
	assert_int_equal(frame[BTH4 + 1], 0x40); /* M, pad 0, TVer 0 */
	assert_int_equal(roce_get16(frame + BTH4 + 2), 0x8001);
	assert_int_equal(frame[BTH4 + 4], 0); /* resv8a */
	assert_int_equal(roce_get32(frame + BTH4 + 4), 0x123456);
	assert_int_equal(roce_get32(frame + BTH4 + 8), 0x80abcdef); /* AckReq, resv7 0, PSN */
	/* RETH */
	assert_true(roce_get64(frame + EXT4) == 0x0123456789abcdefull);
	assert_int_equal(roce_get32(frame + EXT4 + 8), 0xcafef00d);
	assert_int_equal(roce_get32(frame + EXT4 + 12), 0x10000);
	/* payload, then the ICRC */
	assert_memory_equal(frame + EXT4 + 16, pay, 8);
	assert_int_equal(n, EXT4 + 16 + 8 + 4);

	/* The fields routers change do not change the ICRC; the others do. */
	{
		uint32_t icrc = le32(frame + n - 4);

		a.tclass = 0x02;
		a.hop_limit = 3;
		build(&a, &b, &x, pay, sizeof(pay));
		assert_int_equal(le32(frame + n - 4), icrc);
		assert_int_equal(inet_fold(0, frame + IP4, 20), 0);
		a.ip_id = 1;
		build(&a, &b, &x, pay, sizeof(pay));
		assert_int_not_equal(le32(frame + n - 4), icrc);
	}
}

/* 5 bytes of payload: PadCnt 3, three zero bytes, then the ICRC. */
static void test_pad(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY);
	int n;

	(void)state;
	b.se = true;
	n = build(&a, &b, NULL, "hello", 5);
	assert_int_equal(n, EXT4 + 5 + 3 + 4);
	assert_int_equal(frame[BTH4 + 1], 0x80 | 3 << 4);
	assert_memory_equal(frame + EXT4, "hello\0\0\0", 8);
	assert_int_equal(roce_get16(frame + UDP4 + 4), 8 + 12 + 8 + 4);
	assert_int_equal(roce_get16(frame + IP4 + 2), 20 + 8 + 12 + 8 + 4);
	assert_int_equal(le32(frame + EXT4 + 8), ref_icrc(frame, EXT4 + 8, ROCE_L3_V2_IPV4));

	for (uint32_t len = 0; len <= 8; len++) {
		n = build(&a, &b, NULL, "abcdefgh", len);
		assert_int_equal(n % 4, (14 + 20 + 8) % 4);
		assert_int_equal(frame[BTH4 + 1] >> 4 & 3, (4 - len % 4) % 4);
		for (int i = EXT4 + (int)len; i < n - 4; i++)
			assert_int_equal(frame[i], 0);
	}
}

static void test_send_imm(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY_IMM);
	struct roce_ext x = {.imm = htonl(0x11223344)};
	int n;

	(void)state;
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, b.opcode), EXT4 + 4);
	n = build(&a, &b, &x, "data", 4);
	assert_memory_equal(frame + EXT4, "\x11\x22\x33\x44", 4);
	assert_memory_equal(frame + EXT4 + 4, "data", 4);
	assert_int_equal(n, EXT4 + 4 + 4 + 4);
	/* WRITE Only with Immediate: RETH, then ImmDt. */
	b.opcode = ROCE_OP_RC | ROCE_OP_WRITE_ONLY_IMM;
	x.va = 0x1000;
	x.rkey = 7;
	x.dma_len = 4;
	build(&a, &b, &x, "data", 4);
	assert_true(roce_get64(frame + EXT4) == 0x1000);
	assert_memory_equal(frame + EXT4 + 16, "\x11\x22\x33\x44", 4);
	assert_memory_equal(frame + EXT4 + 20, "data", 4);
}

static void test_ack(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_ACK);
	struct roce_ext x = {.aeth_syndrome = 0x1f, .msn = 0xffabcdef};
	int n;

	(void)state;
	assert_int_equal(ROCE_OP_ACK, 0x11);
	n = build(&a, &b, &x, NULL, 0);
	assert_int_equal(n, EXT4 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x1fabcdef);
	/* An ACK carries no payload. */
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, &x, "x", 1), -EINVAL);
	/* RNR NAK */
	x.aeth_syndrome = 0x20 | 0x0e;
	build(&a, &b, &x, NULL, 0);
	assert_int_equal(frame[EXT4], 0x2e);
}

/* READ responses: AETH on First, Last and Only, none on Middle. */
static void test_read(void **state)
{
	static const struct {
		uint8_t op;
		int aeth;
	} resp[] = {
	    {ROCE_OP_READ_RESP_FIRST, 1},
	    {ROCE_OP_READ_RESP_MIDDLE, 0},
	    {ROCE_OP_READ_RESP_LAST, 1},
	    {ROCE_OP_READ_RESP_ONLY, 1},
	};
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_ext x = {
	    .aeth_syndrome = 0x1f, .msn = 5, .va = 0xabc, .rkey = 9, .dma_len = 64};
	struct roce_bth b;
	int n;

	(void)state;
	assert_int_equal(ROCE_OP_READ_RESP_FIRST, 0x0d);
	assert_int_equal(ROCE_OP_READ_RESP_MIDDLE, 0x0e);
	assert_int_equal(ROCE_OP_READ_RESP_LAST, 0x0f);
	assert_int_equal(ROCE_OP_READ_RESP_ONLY, 0x10);
	for (size_t i = 0; i < sizeof(resp) / sizeof(resp[0]); i++) {
		b = bth(resp[i].op);
		n = build(&a, &b, &x, "0123456789abcdef", 16);
		assert_int_equal(n, EXT4 + 4 * resp[i].aeth + 16 + 4);
		if (resp[i].aeth)
			assert_int_equal(roce_get32(frame + EXT4), 0x1f000005);
		assert_memory_equal(frame + EXT4 + 4 * resp[i].aeth, "0123456789abcdef", 16);
	}
	/* The request: RETH, no payload. */
	b = bth(ROCE_OP_RC | ROCE_OP_READ_REQUEST);
	n = build(&a, &b, &x, NULL, 0);
	assert_int_equal(n, EXT4 + 16 + 4);
	assert_int_equal(roce_get32(frame + EXT4 + 12), 64);
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, &x, "x", 1), -EINVAL);
}

static void test_atomic(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_CMP_SWAP);
	struct roce_ext x = {.va = 0x7f0000001000ull,
			     .rkey = 0x1234,
			     .swap_add = 0x1111222233334444ull,
			     .compare = 0x5555666677778888ull,
			     .aeth_syndrome = 0x1f,
			     .msn = 3,
			     .orig = 0x99990000aaaabbbbull};
	int n;

	(void)state;
	n = build(&a, &b, &x, NULL, 0);
	assert_int_equal(n, EXT4 + 28 + 4);
	assert_true(roce_get64(frame + EXT4) == 0x7f0000001000ull);
	assert_int_equal(roce_get32(frame + EXT4 + 8), 0x1234);
	assert_true(roce_get64(frame + EXT4 + 12) == 0x1111222233334444ull);
	assert_true(roce_get64(frame + EXT4 + 20) == 0x5555666677778888ull);
	b.opcode = ROCE_OP_RC | ROCE_OP_FETCH_ADD;
	assert_int_equal(build(&a, &b, &x, NULL, 0), n);
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, &x, "12345678", 8), -EINVAL);

	b = bth(ROCE_OP_ATOMIC_ACK);
	assert_int_equal(ROCE_OP_ATOMIC_ACK, 0x12);
	n = build(&a, &b, &x, NULL, 0);
	assert_int_equal(n, EXT4 + 4 + 8 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x1f000003);
	assert_true(roce_get64(frame + EXT4 + 4) == 0x99990000aaaabbbbull);
}

static void test_ud(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_UD_SEND_ONLY);
	struct roce_ext x = {.qkey = 0x80010000, .src_qpn = 0xff000123, .imm = htonl(0xdeadbeef)};
	int n;

	(void)state;
	b.dqpn = 1;
	n = build(&a, &b, &x, "ud!", 3);
	assert_int_equal(frame[BTH4], 0x64);
	assert_int_equal(n, EXT4 + 8 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x80010000);
	assert_int_equal(roce_get32(frame + EXT4 + 4), 0x000123);
	assert_memory_equal(frame + EXT4 + 8, "ud!\0", 4);
	b.opcode = ROCE_OP_UD_SEND_ONLY_IMM;
	n = build(&a, &b, &x, "ud!", 3);
	assert_int_equal(n, EXT4 + 8 + 4 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x80010000);
	assert_memory_equal(frame + EXT4 + 8, "\xde\xad\xbe\xef", 4);
	assert_memory_equal(frame + EXT4 + 12, "ud!\0", 4);
}

/* XRC requests put the XRCETH right after the BTH; responses carry none. */
static void test_xrc(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_XRC | ROCE_OP_SEND_ONLY);
	struct roce_ext x = {.xrc_srqn = 0xee000042,
			     .va = 0x2000,
			     .rkey = 3,
			     .dma_len = 4,
			     .aeth_syndrome = 0x1f,
			     .msn = 9};
	int n;

	(void)state;
	n = build(&a, &b, &x, "xrc!", 4);
	assert_int_equal(frame[BTH4], 0xa4);
	assert_int_equal(n, EXT4 + 4 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x000042);
	assert_memory_equal(frame + EXT4 + 4, "xrc!", 4);

	b.opcode = ROCE_OP_XRC | ROCE_OP_WRITE_FIRST;
	n = build(&a, &b, &x, "xrc!", 4);
	assert_int_equal(n, EXT4 + 4 + 16 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x42);
	assert_true(roce_get64(frame + EXT4 + 4) == 0x2000);

	b.opcode = ROCE_OP_XRC | ROCE_OP_CMP_SWAP;
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV6, b.opcode), ROCE_MAX_HDR_LEN);

	b.opcode = ROCE_OP_XRC | ROCE_OP_ACK;
	n = build(&a, &b, &x, NULL, 0);
	assert_int_equal(n, EXT4 + 4 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x1f000009);
	b.opcode = ROCE_OP_XRC | ROCE_OP_READ_RESP_MIDDLE;
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, b.opcode), EXT4);
}

static void test_send_inv(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY_INV);
	struct roce_ext x = {.inv_rkey = 0x00c0ffee};
	int n;

	(void)state;
	n = build(&a, &b, &x, "inval", 5);
	assert_int_equal(frame[BTH4], 0x17);
	assert_int_equal(n, EXT4 + 4 + 8 + 4);
	assert_int_equal(roce_get32(frame + EXT4), 0x00c0ffee);
	assert_memory_equal(frame + EXT4 + 4, "inval\0\0\0", 8);
	b.opcode = ROCE_OP_RC | ROCE_OP_SEND_LAST_INV;
	build(&a, &b, &x, "inval", 5);
	assert_int_equal(frame[BTH4], 0x16);
	assert_int_equal(roce_get32(frame + EXT4), 0x00c0ffee);
}

/* The UDP checksum over the IPv6 pseudo-header: 0 when right. */
static uint32_t udp6_fold(const uint8_t *f, int n)
{
	uint32_t len = roce_get16(f + UDP6 + 4), sum = 0;

	assert_int_equal(len, n - UDP6);
	for (int i = 0; i < 32; i += 2)
		sum += roce_get16(f + IP6 + 8 + i);
	sum += len + 17;
	return inet_fold(sum, f + UDP6, len);
}

static void test_ipv6(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V2_IPV6);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY);
	uint32_t icrc;
	int n;

	(void)state;
	a.tclass = 0xa5;
	a.flow_label = 0xfff12345; /* 20 bits */
	a.hop_limit = 7;
	a.udp_sport = 0xd000;
	n = build(&a, &b, NULL, "v6 payload", 10);
	assert_int_equal(n, BTH6 + 12 + 12 + 4);
	assert_int_equal(roce_get16(frame + 12), 0x86dd);
	assert_int_equal(roce_get32(frame + IP6), 0x6a512345);
	assert_int_equal(roce_get16(frame + IP6 + 4), n - IP6 - 40);
	assert_int_equal(frame[IP6 + 6], 17);
	assert_int_equal(frame[IP6 + 7], 7);
	assert_memory_equal(frame + IP6 + 8, a.sgid, 16);
	assert_memory_equal(frame + IP6 + 24, a.dgid, 16);
	assert_int_equal(roce_get16(frame + UDP6), 0xd000);
	assert_int_equal(roce_get16(frame + UDP6 + 2), 4791);
	assert_int_not_equal(roce_get16(frame + UDP6 + 6), 0);
	assert_int_equal(udp6_fold(frame, n), 0);
	assert_int_equal(frame[BTH6], 0x04);
	assert_memory_equal(frame + BTH6 + 12, "v6 payload\0\0", 12);

	icrc = le32(frame + n - 4);
	a.tclass = 0;
	a.flow_label = 1;
	a.hop_limit = 0;
	build(&a, &b, NULL, "v6 payload", 10);
	assert_int_equal(le32(frame + n - 4), icrc);
	assert_int_equal(udp6_fold(frame, n), 0);
	a.udp_sport = 0;
	build(&a, &b, NULL, "v6 payload", 10);
	assert_int_equal(roce_get16(frame + UDP6), 0xc000);
	assert_int_not_equal(le32(frame + n - 4), icrc);
	assert_int_equal(udp6_fold(frame, n), 0);
}

static void test_v1_grh(void **state)
{
	struct roce_addr a = addr(ROCE_L3_V1);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY);
	uint32_t icrc;
	int n;

	(void)state;
	a.tclass = 0x10;
	a.flow_label = 0xabcde;
	a.hop_limit = 1;
	a.udp_sport = 0x1234; /* no UDP in v1 */
	assert_int_equal(roce_hdr_len(ROCE_L3_V1, b.opcode), BTH1 + 12);
	n = build(&a, &b, NULL, "roce v1", 7);
	assert_int_equal(n, BTH1 + 12 + 8 + 4);
	assert_int_equal(roce_get16(frame + 12), 0x8915);
	assert_int_equal(roce_get32(frame + GRH), 0x610abcde);
	assert_int_equal(roce_get16(frame + GRH + 4), n - BTH1); /* BTH through ICRC */
	assert_int_equal(frame[GRH + 6], 0x1b);
	assert_int_equal(frame[GRH + 7], 1);
	assert_memory_equal(frame + GRH + 8, a.sgid, 16);
	assert_memory_equal(frame + GRH + 24, a.dgid, 16);
	assert_int_equal(frame[BTH1], 0x04);
	assert_memory_equal(frame + BTH1 + 12, "roce v1\0", 8);
	icrc = le32(frame + n - 4);
	a.tclass = 0;
	a.flow_label = 0;
	a.hop_limit = 0;
	build(&a, &b, NULL, "roce v1", 7);
	assert_int_equal(le32(frame + n - 4), icrc);
}

/* Every opcode the encoder knows, on every l3: lengths add up, the ICRC checks. */
static void test_all_opcodes(void **state)
{
	int known = 0, longest = 0;

	(void)state;
	for (int l3 = ROCE_L3_V1; l3 <= ROCE_L3_V2_IPV6; l3++) {
		struct roce_addr a = addr((enum roce_l3)l3);

		known = 0;
		for (int op = 0; op < 256; op++) {
			struct roce_bth b = bth((uint8_t)op);
			int h = roce_hdr_len((enum roce_l3)l3, (uint8_t)op);

			if (h < 0) {
				assert_int_equal(h, -EINVAL);
				assert_int_equal(
				    roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0),
				    -EINVAL);
				continue;
			}
			known++;
			if (h > longest)
				longest = h;
			if (roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, "p", 1) > 0)
				build(&a, &b, NULL, "p", 1);
			else
				build(&a, &b, NULL, NULL, 0);
		}
		/* RC 23, UC 12, UD 2, XRC 23. */
		assert_int_equal(known, 60);
	}
	assert_int_equal(longest, ROCE_MAX_HDR_LEN);
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, 0x15), -EINVAL);
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, 0x2c), -EINVAL);
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, 0x44), -EINVAL); /* RD */
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, 0x81), -EINVAL); /* CNP */
	assert_int_equal(roce_hdr_len(ROCE_L3_V2_IPV4, 0xb5), -EINVAL);
	assert_int_equal(roce_hdr_len((enum roce_l3)3, 0x04), -EINVAL);
}

static void test_req_opcode(void **state)
{
	enum { RC = 2, UC = 3, UD = 4, XRC = 9 };
	enum {
		WR_W = 0,
		WR_WI = 1,
		WR_S = 2,
		WR_SI = 3,
		WR_R = 4,
		WR_CAS = 5,
		WR_FAA = 6,
		WR_INV = 9
	};
	/* ONLY, FIRST, MIDDLE, LAST; -1 none. */
	static const struct {
		uint32_t wr;
		int op[4];
	} rc[] = {
	    {WR_W, {0x0a, 0x06, 0x07, 0x08}}, {WR_WI, {0x0b, 0x06, 0x07, 0x09}},
	    {WR_S, {0x04, 0x00, 0x01, 0x02}}, {WR_SI, {0x05, 0x00, 0x01, 0x03}},
	    {WR_R, {0x0c, -1, -1, -1}},	      {WR_CAS, {0x13, -1, -1, -1}},
	    {WR_FAA, {0x14, -1, -1, -1}},     {WR_INV, {0x17, 0x00, 0x01, 0x16}},
	};
	static const uint32_t bad_wr[] = {7, 8, 10, 11, 100};
	static const uint32_t bad_qpt[] = {0, 1, 5, 8, 10, 255};

	(void)state;
	for (size_t i = 0; i < sizeof(rc) / sizeof(rc[0]); i++) {
		for (int pos = ROCE_POS_ONLY; pos <= ROCE_POS_LAST; pos++) {
			int want = rc[i].op[pos];
			bool uc_has = rc[i].wr <= WR_SI;

			assert_int_equal(roce_req_opcode(RC, rc[i].wr, (enum roce_pos)pos),
					 want < 0 ? -EINVAL : want);
			assert_int_equal(roce_req_opcode(XRC, rc[i].wr, (enum roce_pos)pos),
					 want < 0 ? -EINVAL : 0xa0 | want);
			assert_int_equal(roce_req_opcode(UC, rc[i].wr, (enum roce_pos)pos),
					 want < 0 || !uc_has ? -EINVAL : 0x20 | want);
			if (rc[i].wr == WR_S || rc[i].wr == WR_SI)
				assert_int_equal(roce_req_opcode(UD, rc[i].wr, (enum roce_pos)pos),
						 pos == ROCE_POS_ONLY ? 0x60 | want : -EINVAL);
			else
				assert_int_equal(roce_req_opcode(UD, rc[i].wr, (enum roce_pos)pos),
						 -EINVAL);
			/* Whatever the table gives, the encoder knows. */
			if (want >= 0)
				assert_true(roce_hdr_len(ROCE_L3_V2_IPV4, (uint8_t)want) > 0);
		}
	}
	assert_int_equal(roce_req_opcode(UD, WR_S, ROCE_POS_ONLY), ROCE_OP_UD_SEND_ONLY);
	assert_int_equal(roce_req_opcode(UD, WR_SI, ROCE_POS_ONLY), ROCE_OP_UD_SEND_ONLY_IMM);
	assert_int_equal(roce_req_opcode(UC, WR_R, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UD, WR_R, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UC, WR_CAS, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UC, WR_FAA, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UD, WR_W, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UD, WR_WI, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(UC, WR_INV, ROCE_POS_LAST), -EINVAL);
	assert_int_equal(roce_req_opcode(RC, WR_R, ROCE_POS_FIRST), -EINVAL);
	for (size_t i = 0; i < sizeof(bad_wr) / sizeof(bad_wr[0]); i++)
		assert_int_equal(roce_req_opcode(RC, bad_wr[i], ROCE_POS_ONLY), -EINVAL);
	for (size_t i = 0; i < sizeof(bad_qpt) / sizeof(bad_qpt[0]); i++)
		assert_int_equal(roce_req_opcode(bad_qpt[i], WR_S, ROCE_POS_ONLY), -EINVAL);
	assert_int_equal(roce_req_opcode(RC, WR_S, (enum roce_pos)4), -EINVAL);
}

/* A cut frame: the whole frame's headers and length, the known bytes, nothing after. */
static void test_cut(void **state)
{
	static uint8_t pay[1000], cut[2048];
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_WRITE_ONLY);
	struct roce_ext x = {.va = 0x1000, .rkey = 7, .dma_len = sizeof(pay)};
	int full, n, hdr;

	(void)state;
	for (size_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 7);
	for (int l3 = ROCE_L3_V1; l3 <= ROCE_L3_V2_IPV6; l3++) {
		struct roce_addr a = addr((enum roce_l3)l3);

		full = build(&a, &b, &x, pay, sizeof(pay));
		hdr = roce_hdr_len(a.l3, b.opcode);
		memset(cut, 0xaa, sizeof(cut));
		n = roce_pkt_build_cut(cut, sizeof(cut), &a, &b, &x, pay, sizeof(pay), 22);
		assert_int_equal(n, full);
		/* Headers alike but the IPv6 UDP checksum (it covers the unknown bytes). */
		if (l3 == ROCE_L3_V2_IPV6) {
			assert_memory_equal(cut, frame, 14 + 40 + 6);
			assert_int_equal(roce_get16(cut + 14 + 40 + 6), 0);
			assert_memory_equal(cut + 14 + 48, frame + 14 + 48, (size_t)hdr - 14 - 48);
		} else {
			assert_memory_equal(cut, frame, (size_t)hdr);
		}
		assert_memory_equal(cut + hdr, pay, 22);
		assert_int_equal(cut[hdr + 22], 0xaa); /* nothing written past the known bytes */
		/* Room for what is written is enough; known beyond paylen is refused. */
		assert_int_equal(
		    roce_pkt_build_cut(cut, (size_t)hdr + 22, &a, &b, &x, pay, sizeof(pay), 22),
		    full);
		assert_int_equal(
		    roce_pkt_build_cut(cut, (size_t)hdr + 21, &a, &b, &x, pay, sizeof(pay), 22),
		    -ENOSPC);
		assert_int_equal(roce_pkt_build_cut(cut, sizeof(cut), &a, &b, &x, pay, 10, 11),
				 -EINVAL);
	}
}

static void test_errors(void **state)
{
	static uint8_t big[70000], src[0x10000];
	struct roce_addr a = addr(ROCE_L3_V2_IPV4);
	struct roce_bth b = bth(ROCE_OP_RC | ROCE_OP_SEND_ONLY);
	int n;

	(void)state;
	n = build(&a, &b, NULL, "hello", 5);
	/* Too small by one: nothing written past cap. */
	memset(frame, 0x5a, sizeof(frame));
	assert_int_equal(roce_pkt_build(frame, (size_t)n - 1, &a, &b, NULL, "hello", 5), -ENOSPC);
	for (int i = 0; i < n; i++)
		assert_int_equal(frame[i], 0x5a);
	assert_int_equal(roce_pkt_build(frame, 0, &a, &b, NULL, "hello", 5), -ENOSPC);
	assert_int_equal(roce_pkt_build(frame, (size_t)n, &a, &b, NULL, "hello", 5), n);

	assert_int_equal(roce_pkt_build(frame, sizeof(frame), NULL, &b, NULL, NULL, 0), -EINVAL);
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, NULL, NULL, NULL, 0), -EINVAL);
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 1), -EINVAL);
	b.opcode = 0x15;
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0), -EINVAL);
	b.opcode = ROCE_OP_RC | ROCE_OP_SEND_ONLY;
	a.l3 = (enum roce_l3)7;
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0), -EINVAL);
	/* IPv4 needs IPv4-mapped GIDs. */
	a = addr(ROCE_L3_V2_IPV4);
	a.dgid[10] = 0;
	assert_int_equal(roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0), -EINVAL);

	/* The 16-bit length fields; the IB part (BTH..ICRC) is a multiple of 4 bytes. */
	a = addr(ROCE_L3_V2_IPV4); /* IPv4 total length 28 + 65504 */
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65488),
			 14 + 28 + 65504);
	assert_int_equal(roce_get16(big + IP4 + 2), 65532);
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65489), -EMSGSIZE);
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 0x10000), -EMSGSIZE);
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, UINT32_MAX),
			 -EMSGSIZE);
	a = addr(ROCE_L3_V2_IPV6); /* IPv6 payload length 8 + 65524 */
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65508),
			 14 + 48 + 65524);
	assert_int_equal(roce_get16(big + IP6 + 4), 65532);
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65509), -EMSGSIZE);
	a = addr(ROCE_L3_V1); /* GRH payload length 65532 */
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65516),
			 14 + 40 + 65532);
	assert_int_equal(roce_get16(big + GRH + 4), 65532);
	assert_int_equal(roce_pkt_build(big, sizeof(big), &a, &b, NULL, src, 65517), -EMSGSIZE);

	/* roce_icrc on something shorter than the headers. */
	assert_int_equal(roce_icrc(frame, 14 + 20 + 8 + 11, ROCE_L3_V2_IPV4), 0);
	assert_int_equal(roce_icrc(frame, 100, (enum roce_l3)9), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_crc_constants), cmocka_unit_test(test_write_first_ipv4),
	    cmocka_unit_test(test_pad),		  cmocka_unit_test(test_send_imm),
	    cmocka_unit_test(test_ack),		  cmocka_unit_test(test_read),
	    cmocka_unit_test(test_atomic),	  cmocka_unit_test(test_ud),
	    cmocka_unit_test(test_xrc),		  cmocka_unit_test(test_send_inv),
	    cmocka_unit_test(test_ipv6),	  cmocka_unit_test(test_v1_grh),
	    cmocka_unit_test(test_all_opcodes),	  cmocka_unit_test(test_req_opcode),
	    cmocka_unit_test(test_errors),	  cmocka_unit_test(test_cut),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
