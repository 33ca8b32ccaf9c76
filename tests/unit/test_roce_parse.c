/* SPDX-License-Identifier: MIT */
/*
 * The RoCE packet parser (fabric/roce_parse.c): a frame a ConnectX-4 Lx sent
 * (its ICRC, and the parser's answer to an opcode vfab does not speak);
 * every opcode the encoder builds, on RoCE v1, v2/IPv4 and v2/IPv6, read
 * back field for field; and each check a receiving port makes, one broken
 * field at a time.
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

/*
 * A RoCE v2 CNP (opcode 0x81, BECN set, to QP 0x118) as a ConnectX-4 Lx put
 * it on the wire: 10.0.17.1 -> 10.0.18.1, UDP source port 0, no FCS. From
 * the capture in scapy's RoCE tests (test/contrib/roce.uts). Its last four
 * bytes are the NIC's ICRC.
 */
static const uint8_t cx4_cnp[74] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
    0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a,
};

static uint8_t frame[2048];

/* The ICRC of frame[0..len) written again, after a test changed a covered byte. */
static void reicrc(size_t len, enum roce_l3 l3)
{
	uint32_t c = roce_icrc(frame, len - 4, l3);

	for (int i = 0; i < 4; i++)
		frame[len - 4 + (size_t)i] = (uint8_t)(c >> (8 * i));
}

static void test_connectx4_cnp(void **state)
{
	struct roce_pkt_view v;
	uint8_t f[sizeof(cx4_cnp)];

	(void)state;
	/* The hardware's ICRC, least significant byte first, is the encoder's. */
	assert_int_equal(roce_icrc(cx4_cnp, sizeof(cx4_cnp) - 4, ROCE_L3_V2_IPV4), 0x2a00fd82);
	/* A CNP is no opcode vfab speaks: refused, but read and checked first. */
	assert_int_equal(roce_pkt_parse(cx4_cnp, sizeof(cx4_cnp), &v), -EOPNOTSUPP);
	assert_int_equal(v.l3, ROCE_L3_V2_IPV4);
	assert_int_equal(v.len, sizeof(cx4_cnp));
	assert_int_equal(v.bth.opcode, 0x81);
	assert_true(v.becn);
	assert_false(v.fecn);
	assert_int_equal(v.bth.dqpn, 0x118);
	assert_int_equal(v.bth.pkey, 0xffff);
	assert_int_equal(v.bth.psn, 0);
	assert_int_equal(v.addr.tclass, 0xc2);
	assert_int_equal(v.addr.ip_id, 0x718c);
	assert_int_equal(v.addr.udp_sport, 0);
	assert_memory_equal(v.addr.sgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x11\x01", 16);
	assert_memory_equal(v.addr.dgid, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x0a\x00\x12\x01", 16);
	/* One bit of the covered padding changed: the ICRC no longer holds. */
	memcpy(f, cx4_cnp, sizeof(f));
	f[60] ^= 0x01;
	assert_int_equal(roce_pkt_parse(f, sizeof(f), &v), -EBADMSG);
	/* The ECN bits and the TTL are not covered: a switch may change them. */
	memcpy(f, cx4_cnp, sizeof(f));
	f[15] ^= 0x03;
	f[22] = 0x3f;
	f[24] = f[25] = 0; /* the IPv4 checksum, made right again below */
	{
		uint16_t c = roce_fold(roce_sum16(0, f + 14, 20));

		f[24] = (uint8_t)(c >> 8);
		f[25] = (uint8_t)c;
	}
	assert_int_equal(roce_pkt_parse(f, sizeof(f), &v), -EOPNOTSUPP);
}

static struct roce_addr addr(enum roce_l3 l3, unsigned seed)
{
	struct roce_addr a;

	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 6; i++) {
		a.smac[i] = (uint8_t)(0x02 + seed + (unsigned)i);
		a.dmac[i] = (uint8_t)(0x12 + seed * 3 + (unsigned)i);
	}
	a.l3 = l3;
	if (l3 == ROCE_L3_V2_IPV4) {
		a.sgid[10] = a.sgid[11] = a.dgid[10] = a.dgid[11] = 0xff;
		a.sgid[12] = 198, a.sgid[13] = 18, a.sgid[15] = (uint8_t)(1 + seed);
		a.dgid[12] = 198, a.dgid[13] = 19, a.dgid[15] = (uint8_t)(2 + seed);
		a.ip_id = (uint16_t)(0x1234 + seed);
	} else {
		assert_int_equal(inet_pton(AF_INET6, "fd00:198:18::1", a.sgid), 1);
		assert_int_equal(inet_pton(AF_INET6, "fd00:198:19::2", a.dgid), 1);
		a.sgid[15] = (uint8_t)seed;
		a.flow_label = 0xabcde ^ seed;
	}
	a.tclass = (uint8_t)(0x68 + seed);
	a.hop_limit = (uint8_t)(60 + seed);
	a.udp_sport = (uint16_t)(0xc000 | seed);
	return a;
}

/* Every field the opcode carries, read back as it was built. */
static void roundtrip(enum roce_l3 l3, uint8_t opcode, uint32_t paylen, unsigned seed)
{
	struct roce_addr a = addr(l3, seed);
	struct roce_bth b = {.opcode = opcode,
			     .se = seed & 1,
			     .mig = seed & 2,
			     .ackreq = seed & 4,
			     .pkey = (uint16_t)(0x8000 | seed),
			     .dqpn = 0xabcdef ^ seed,
			     .psn = 0xfedcba ^ seed};
	struct roce_ext x = {.va = 0x0123456789abcdefull ^ seed,
			     .rkey = 0x11223344,
			     .dma_len = 1u << 20,
			     .aeth_syndrome = 0x1f,
			     .msn = 0x00abcd,
			     .qkey = 0x80010000,
			     .src_qpn = 0x123456,
			     .imm = htonl(0xdeadbeef),
			     .inv_rkey = 0x55667788,
			     .swap_add = 0x1111222233334444ull,
			     .compare = 0x5555666677778888ull,
			     .orig = 0x99990000aaaabbbbull,
			     .xrc_srqn = 0x000777};
	uint8_t pay[64];
	struct roce_pkt_view v;
	unsigned h = roce_op_hdrs(opcode);
	int n;

	for (uint32_t i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)(i * 7 + seed);
	n = roce_pkt_build(frame, sizeof(frame), &a, &b, &x, pay, paylen);
	assert_true(n > 0);
	if (roce_pkt_parse(frame, (size_t)n, &v))
		fail_msg("l3 %d opcode 0x%02x paylen %u: %d", l3, opcode, paylen,
			 roce_pkt_parse(frame, (size_t)n, &v));
	assert_int_equal(v.l3, l3);
	assert_int_equal(v.len, n);
	assert_memory_equal(v.addr.smac, a.smac, 6);
	assert_memory_equal(v.addr.dmac, a.dmac, 6);
	assert_memory_equal(v.addr.sgid, a.sgid, 16);
	assert_memory_equal(v.addr.dgid, a.dgid, 16);
	assert_int_equal(v.addr.tclass, a.tclass);
	assert_int_equal(v.addr.hop_limit, a.hop_limit);
	assert_int_equal(v.addr.flow_label, l3 == ROCE_L3_V2_IPV4 ? 0 : a.flow_label);
	assert_int_equal(v.addr.udp_sport, l3 == ROCE_L3_V1 ? 0 : a.udp_sport);
	assert_int_equal(v.addr.ip_id, l3 == ROCE_L3_V2_IPV4 ? a.ip_id : 0);
	assert_int_equal(v.bth.opcode, opcode);
	assert_int_equal(v.bth.se, b.se);
	assert_int_equal(v.bth.mig, b.mig);
	assert_int_equal(v.bth.ackreq, b.ackreq);
	assert_int_equal(v.bth.pkey, b.pkey);
	assert_int_equal(v.bth.dqpn, b.dqpn);
	assert_int_equal(v.bth.psn, b.psn);
	assert_int_equal(v.pad, (4 - paylen % 4) % 4);
	assert_int_equal(v.paylen, paylen);
	if (paylen)
		assert_memory_equal(v.payload, pay, paylen);
	assert_int_equal(v.ext.xrc_srqn, h & ROCE_H_XRCETH ? x.xrc_srqn : 0);
	assert_int_equal(v.ext.qkey, h & ROCE_H_DETH ? x.qkey : 0);
	assert_int_equal(v.ext.src_qpn, h & ROCE_H_DETH ? x.src_qpn : 0);
	assert_int_equal(v.ext.va, h & (ROCE_H_RETH | ROCE_H_ATOMETH) ? x.va : 0);
	assert_int_equal(v.ext.rkey, h & (ROCE_H_RETH | ROCE_H_ATOMETH) ? x.rkey : 0);
	assert_int_equal(v.ext.dma_len, h & ROCE_H_RETH ? x.dma_len : 0);
	assert_int_equal(v.ext.swap_add, h & ROCE_H_ATOMETH ? x.swap_add : 0);
	assert_int_equal(v.ext.compare, h & ROCE_H_ATOMETH ? x.compare : 0);
	assert_int_equal(v.ext.aeth_syndrome, h & ROCE_H_AETH ? x.aeth_syndrome : 0);
	assert_int_equal(v.ext.msn, h & ROCE_H_AETH ? x.msn : 0);
	assert_int_equal(v.ext.orig, h & ROCE_H_ATOMACK ? x.orig : 0);
	assert_int_equal(v.ext.imm, h & ROCE_H_IMMDT ? x.imm : 0);
	assert_int_equal(v.ext.inv_rkey, h & ROCE_H_IETH ? x.inv_rkey : 0);
	/* Ethernet pads short frames: bytes past the IP / GRH length are not the packet's. */
	memset(frame + n, 0x5a, 16);
	assert_int_equal(roce_pkt_parse(frame, (size_t)n + 16, &v), 0);
	assert_int_equal(v.len, n);
	assert_int_equal(v.paylen, paylen);
}

static void test_roundtrip_all_opcodes(void **state)
{
	static const enum roce_l3 l3s[] = {ROCE_L3_V1, ROCE_L3_V2_IPV4, ROCE_L3_V2_IPV6};
	static const uint32_t lens[] = {0, 1, 2, 3, 4, 5, 8, 61};
	unsigned seed = 0, opcodes = 0;

	(void)state;
	for (unsigned op = 0; op < 256; op++) {
		unsigned h = roce_op_hdrs((uint8_t)op);

		if (!h)
			continue;
		opcodes++;
		for (size_t l = 0; l < sizeof(l3s) / sizeof(l3s[0]); l++)
			for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
				if (!lens[k] || (h & ROCE_H_PAY))
					roundtrip(l3s[l], (uint8_t)op, lens[k], seed++ & 0x3f);
	}
	/* RC 0x00-0x14, 0x16-0x17; UC 0x20-0x2B; UD 0x64-0x65; XRC as RC. */
	assert_int_equal(opcodes, 23 + 12 + 2 + 23);
}

/* A WRITE_ONLY of 13 bytes on l3, built into frame[]; its length. */
static int write13(enum roce_l3 l3)
{
	static const uint8_t pay[13] = "thirteen byte";
	struct roce_addr a = addr(l3, 5);
	struct roce_bth b = {.opcode = ROCE_OP_RC | ROCE_OP_WRITE_ONLY, .pkey = 0xffff, .dqpn = 7};
	struct roce_ext x = {.va = 0x1000, .rkey = 9, .dma_len = 13};
	int n = roce_pkt_build(frame, sizeof(frame), &a, &b, &x, pay, sizeof(pay));

	assert_true(n > 0);
	return n;
}

static void test_rejects(void **state)
{
	struct roce_pkt_view v;
	enum { IP = 14, UDP4 = IP + 20, BTH4 = UDP4 + 8, UDP6 = IP + 40, BTH6 = UDP6 + 8 };
	size_t n;

	(void)state;
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	/* Short or cut: never read past len. */
	assert_int_equal(roce_pkt_parse(frame, 13, &v), -EINVAL);
	assert_int_equal(roce_pkt_parse(frame, BTH4 + 15, &v), -EINVAL);
	assert_int_equal(roce_pkt_parse(frame, n - 1, &v), -EINVAL);
	/* Not RoCE: another ethertype, protocol, UDP port; IP options; a fragment. */
	frame[12] = 0x08, frame[13] = 0x06;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[IP + 9] = 6;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[UDP4 + 3] ^= 1;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[IP] = 0x46;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[IP + 6] |= 0x20; /* more fragments */
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	/* The IPv4 header checksum. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[IP + 11] ^= 0x10;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EBADMSG);
	/* Lengths: IP longer than the frame; UDP not IP's. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n - 4, &v), -EINVAL);
	frame[UDP4 + 5] += 4;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EINVAL);
	/* The ICRC: any covered byte, payload or header. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[BTH4 + 12 + 16 + 3] ^= 0x80;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EBADMSG);
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[BTH4 + 7] ^= 1; /* the destination QP */
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EBADMSG);
	/* TVer other than 0, with a right ICRC. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[BTH4 + 1] |= 0x01;
	reicrc(n, ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	/* PadCnt says which of the last bytes are pad: 0 makes them payload. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	assert_int_equal(v.pad, 3);
	frame[BTH4 + 1] &= (uint8_t)~0x30;
	reicrc(n, ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	assert_int_equal(v.paylen, 16);
	frame[BTH4 + 1] |= 1 << 4;
	reicrc(n, ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	assert_int_equal(v.paylen, 15);
	/* One byte shorter, every length and check made right: no IBA packet is 4k + 3 long. */
	n = (size_t)write13(ROCE_L3_V2_IPV4);
	frame[IP + 3] -= 1;
	frame[UDP4 + 5] -= 1;
	frame[IP + 10] = frame[IP + 11] = 0;
	{
		uint16_t c = roce_fold(roce_sum16(0, frame + IP, 20));

		frame[IP + 10] = (uint8_t)(c >> 8);
		frame[IP + 11] = (uint8_t)c;
	}
	reicrc(n - 1, ROCE_L3_V2_IPV4);
	assert_int_equal(roce_pkt_parse(frame, n - 1, &v), -EINVAL);
	/* A pad with no payload to complete. */
	{
		struct roce_addr a = addr(ROCE_L3_V2_IPV4, 2);
		struct roce_bth b = {.opcode = ROCE_OP_SEND_ONLY, .pkey = 0xffff};
		int k = roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0);

		assert_true(k > 0);
		assert_int_equal(roce_pkt_parse(frame, (size_t)k, &v), 0);
		assert_int_equal(v.paylen, 0);
		frame[BTH4 + 1] |= 2 << 4;
		reicrc((size_t)k, ROCE_L3_V2_IPV4);
		assert_int_equal(roce_pkt_parse(frame, (size_t)k, &v), -EINVAL);
	}
	/* An ACK with a pad, or with payload: neither is an ACK. */
	{
		struct roce_addr a = addr(ROCE_L3_V2_IPV4, 1);
		struct roce_bth b = {.opcode = ROCE_OP_ACK, .pkey = 0xffff};
		int k = roce_pkt_build(frame, sizeof(frame), &a, &b, NULL, NULL, 0);

		assert_true(k > 0);
		assert_int_equal(roce_pkt_parse(frame, (size_t)k, &v), 0);
		frame[BTH4 + 1] |= 1 << 4;
		reicrc((size_t)k, ROCE_L3_V2_IPV4);
		assert_int_equal(roce_pkt_parse(frame, (size_t)k, &v), -EINVAL);
	}
	/* IPv6: the UDP checksum holds, or is 0 (not sent); the GRH's next header. */
	n = (size_t)write13(ROCE_L3_V2_IPV6);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	frame[UDP6 + 6] ^= 0x01;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EBADMSG);
	frame[UDP6 + 6] = frame[UDP6 + 7] = 0;
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	frame[IP + 6] = 6;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V1);
	assert_int_equal(roce_pkt_parse(frame, n, &v), 0);
	frame[IP + 6] = 17;
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EPROTO);
	n = (size_t)write13(ROCE_L3_V1);
	frame[IP + 5] += 1; /* the GRH payload length past the frame */
	assert_int_equal(roce_pkt_parse(frame, n, &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_connectx4_cnp),
	    cmocka_unit_test(test_roundtrip_all_opcodes),
	    cmocka_unit_test(test_rejects),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
