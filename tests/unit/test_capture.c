/* SPDX-License-Identifier: MIT */
/*
 * Packet capture: which datagrams the tool believes (fabric/capture.c), and
 * the CM MADs it writes for vfab's CM messages (tools/capture_cm.c, through
 * cm/cm_mad.c, whose own tests hold every message's layout): a REQ.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cm/cm_mad.h"
#include "cm/cm_path.h"
#include "fabric/capture.h"
#include "fabric/region.h"
#include "tools/capture_cm.h"

#include <endian.h>
#include <string.h>

/* Packets 1 and 2 of a 2500-byte message at MTU 1024, 600 bytes kept of each. */
static struct vfab_cap_rec good(void)
{
	struct vfab_cap_rec r;

	memset(&r, 0, sizeof(r));
	r.magic = VFAB_CAP_MAGIC;
	r.src_hca = 0;
	r.src_port = 1;
	r.dst_hca = 1;
	r.dst_port = 1;
	r.pmtu = 3; /* 1024 */
	r.msg_len = 2500;
	r.npkts = 3;
	r.pkt = 1;
	r.pkt_count = 2;
	r.pkt_bytes = 600;
	r.cap_len = 600 + 452;
	return r;
}

static void rec_checks(void **state)
{
	struct vfab_cap_rec r = good();
	size_t n = sizeof(r) + 1052;

	(void)state;
	assert_true(vfab_cap_rec_sound(&r, n, 2));
	assert_false(vfab_cap_rec_sound(&r, n - 1, 2)); /* payload shorter than said */
	assert_false(vfab_cap_rec_sound(&r, n, 1));	/* an HCA the fabric lacks */
	r.magic ^= 1;
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.dst_port = 0;
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.pmtu = 6;
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.pkt_count = 3; /* past the message */
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.pkt_count = 0;
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.npkts = 4; /* not what msg_len and the MTU give */
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r = good();
	r.pkt_bytes = 700; /* the shares would be 700 + 452 */
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	r.cap_len = 1152;
	assert_true(vfab_cap_rec_sound(&r, sizeof(r) + 1152, 2));
	r = good();
	r.result = VFAB_CAP_LOST + 1;
	assert_false(vfab_cap_rec_sound(&r, n, 2));
	/* A message without payload is one packet with none. */
	r = good();
	r.msg_len = 0;
	r.npkts = 1;
	r.pkt = 0;
	r.pkt_count = 1;
	r.cap_len = 0;
	assert_true(vfab_cap_rec_sound(&r, sizeof(r), 2));
	assert_int_equal(vfab_cap_npkts(0, 1024), 1);
	assert_int_equal(vfab_cap_npkts(1024, 1024), 1);
	assert_int_equal(vfab_cap_npkts(1025, 1024), 2);
	assert_int_equal(vfab_cap_pkt_kept(2500, 1024, 2, 600), 452);
	assert_int_equal(vfab_cap_pkt_kept(2500, 1024, 0, 4096), 1024);
	assert_int_equal(vfab_cap_pkt_kept(2500, 1024, 3, 600), 0);
	assert_int_equal(vfab_cap_mtu_bytes(5), 4096);
	assert_int_equal(vfab_cap_mtu_bytes(0), 0);
}

static uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static struct vfab_cm_msg req(void)
{
	struct vfab_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.type = VFAB_CM_REQ;
	m.local_id = 0x11223344;
	m.qpn = 0x100203;
	m.psn = 0xabcdef;
	m.resp_res = 4;
	m.init_depth = 2;
	m.retry = 7;
	m.rnr_retry = 6;
	m.mtu = 5;
	m.family = 2;
	m.ps = 0x0106; /* RDMA_PS_TCP */
	m.sport = 40000;
	m.dport = 7174;
	m.pid = 77;
	memcpy(m.saddr, "\xc6\x12\x00\x01", 4);
	memcpy(m.daddr, "\xc6\x12\x00\x02", 4);
	m.sgid[15] = 1;
	m.pd_len = 3;
	memcpy(m.pd, "abc", 3);
	return m;
}

static void cm_req_mad(void **state)
{
	struct vfab_cm_msg m = req(), back;
	uint8_t wire[VFAB_CM_MSG_BYTES], mad[VFAB_CM_MAD_BYTES], dgid[16] = {0};
	const uint8_t *d = mad + 24;

	(void)state;
	dgid[15] = 2;
	assert_int_equal(vfab_cm_msg_encode(&m, wire, sizeof(wire)), VFAB_CM_MSG_BYTES);
	/* Only the GSI's Q_Key and the whole message are the CM's. */
	assert_true(vfab_capture_cm_decode(VFAB_CM_QP1_QKEY, wire, sizeof(wire), &back));
	assert_false(vfab_capture_cm_decode(0x11111111, wire, sizeof(wire), &back));
	assert_false(vfab_capture_cm_decode(VFAB_CM_QP1_QKEY, wire, sizeof(wire) - 1, &back));
	assert_int_equal(
	    vfab_cm_mad_encode(&back, 0, htobe64(0x0276660000000001ull), dgid, mad, sizeof(mad)),
	    VFAB_CM_MAD_BYTES);
	/* The MAD header: version 1, class CM, class version 2, Send, ConnectRequest. */
	assert_int_equal(mad[0], 1);
	assert_int_equal(mad[1], 0x07);
	assert_int_equal(mad[2], 2);
	assert_int_equal(mad[3], 0x03);
	assert_int_equal(mad[16] << 8 | mad[17], 0x0010);
	assert_int_equal(rd32(d), 0x11223344);
	/* Service ID: port space 0x0106, port 7174 (0x1c06). */
	assert_int_equal(rd32(d + 8), 0);
	assert_int_equal(rd32(d + 12), 0x01061c06);
	assert_int_equal(rd32(d + 16), 0x02766600);
	assert_int_equal(rd32(d + 32), 0x10020304); /* QPN, responder resources */
	assert_int_equal(rd32(d + 36) & 0xff, 2);   /* initiator depth */
	assert_int_equal(rd32(d + 44) >> 8, 0xabcdef);
	assert_int_equal(d[44 + 3] & 7, 7);	      /* retry count */
	assert_int_equal(d[48] << 8 | d[49], 0xffff); /* P_Key */
	assert_int_equal(d[50], 5 << 4 | 6);	      /* MTU 4096, RNR retry 6 */
	assert_int_equal(d[56 + 15], 1);	      /* local GID */
	assert_int_equal(d[72 + 15], 2);	      /* remote GID */
	/* rdma_cm's header: version 0, IPv4, source port, both addresses. */
	assert_int_equal(d[140], 0);
	assert_int_equal(d[141], 0x40);
	assert_int_equal(d[142] << 8 | d[143], 40000);
	assert_memory_equal(d + 140 + 16, "\xc6\x12\x00\x01", 4);
	assert_memory_equal(d + 140 + 32, "\xc6\x12\x00\x02", 4);
	assert_memory_equal(d + 140 + 36, "abc", 3);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(rec_checks),
	    cmocka_unit_test(cm_req_mad),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
