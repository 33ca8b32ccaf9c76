/* SPDX-License-Identifier: MIT */
/*
 * vfabd's RoCE wire (daemon/vfabd_wirepkt.h): the checks on a process's TX
 * message, the frame it becomes (parsed back by roce_pkt_parse, as the
 * receiving port does), its destination, and the RX message of a frame.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/vfabd_wirepkt.h"

#define QPN 0x1234a

static const uint8_t v4a[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 1};
static const uint8_t v4b[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 19, 0, 1};
static const uint8_t v6a[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
static const uint8_t v6b[16] = {0xfd, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2};
static const uint8_t ll[16] = {0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7};

static const struct vfabd_wire_bind bound = {.hca = 3, .port = 1, .qpn = QPN};

/* A TX message of the bound QP: an RC SEND_ONLY from v4a to v4b with 6 payload bytes. */
static void tx_msg(struct vfab_wire_msg *m)
{
	memset(m, 0, sizeof(*m));
	m->type = VFAB_WIRE_TX;
	m->hca = bound.hca;
	m->port = bound.port;
	m->qpn = bound.qpn;
	memcpy(m->sgid, v4a, 16);
	memcpy(m->dgid, v4b, 16);
	m->udp_sport = 0xc123;
	m->tclass = 0x68;
	m->hop_limit = 33;
	m->bth = (struct roce_bth){.opcode = ROCE_OP_RC | ROCE_OP_SEND_ONLY,
				   .ackreq = true,
				   .pkey = ROCE_DEFAULT_PKEY,
				   .dqpn = 0x77,
				   .psn = 0x123456};
	m->paylen = 6;
}

static void test_tx_check(void **state)
{
	const uint8_t addrs[3][16] = {
	    {0xfe, 0x80, [15] = 1}, {[10] = 0xff, [11] = 0xff, 198, 18, 0, 1}, {0xfd, [15] = 1}};
	struct vfab_wire_msg m;

	(void)state;
	tx_msg(&m);
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_PASS);
	/* The port's addresses only, as the kernel reported them. */
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 1), VFABD_WIRE_DROP_SGID);
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 0), VFABD_WIRE_DROP_SGID);
	memcpy(m.sgid, v4b, 16);
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_SGID);
	/* Another QP, port or HCA than the binding's. */
	tx_msg(&m);
	m.qpn++;
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_BINDING);
	tx_msg(&m);
	m.port = 2;
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_BINDING);
	tx_msg(&m);
	m.hca = 0;
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_BINDING);
	/* IPv4 source, IPv6 destination: no encapsulation carries both. */
	tx_msg(&m);
	memcpy(m.dgid, v6b, 16);
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_DGID);
	memcpy(m.sgid, v6a, 16);
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_PASS);
	/* UD: the DETH's source QP is the bound one's, never another. */
	tx_msg(&m);
	m.bth.opcode = ROCE_OP_UD_SEND_ONLY;
	m.ext.src_qpn = QPN + 1;
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_DROP_SRC_QP);
	m.ext.src_qpn = QPN | 0xff000000u; /* the high byte is not on the wire */
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_PASS);
	/* RC carries no DETH: whatever the field holds is not sent. */
	m.bth.opcode = ROCE_OP_RC | ROCE_OP_SEND_ONLY;
	m.ext.src_qpn = 99;
	assert_int_equal(vfabd_wire_tx_check(&m, &bound, addrs, 3), VFABD_WIRE_PASS);
	assert_string_equal(vfabd_wire_drop_name(VFABD_WIRE_DROP_SGID), "sgid");
	assert_string_equal(vfabd_wire_drop_name(VFABD_WIRE_DROP_REASONS), "?");
}

/* The frame of m parsed back as the receiving port does; its RX message equals m's fields. */
static void round_trip(const struct vfab_wire_msg *m, enum roce_l3 l3)
{
	static const char payload[] = "hello!";
	uint8_t buf[VFABD_WIRE_FRAME_MAX];
	struct roce_pkt_view v;
	struct vfab_wire_msg rx;
	int len = vfabd_wire_tx_frame(m, payload, 0x4321, buf, sizeof(buf));

	assert_true(len > ROCE_ETH_HLEN);
	assert_int_equal(roce_pkt_parse(buf, (size_t)len, &v), 0);
	assert_int_equal(v.l3, l3);
	/* What a raw IP socket sends starts after the Ethernet header. */
	if (l3 == ROCE_L3_V2_IPV4) {
		assert_int_equal(buf[ROCE_ETH_HLEN] >> 4, 4);
		assert_int_equal(roce_get16(buf + ROCE_ETH_HLEN + 4), 0x4321); /* the id */
		assert_int_equal(v.addr.ip_id, 0x4321);
	} else {
		assert_int_equal(buf[ROCE_ETH_HLEN] >> 4, 6);
		assert_int_equal(v.addr.flow_label, m->flow_label);
	}
	assert_int_equal(v.paylen, m->paylen);
	assert_memory_equal(v.payload, payload, m->paylen);

	vfabd_wire_rx_msg(&v, &bound, &rx);
	assert_int_equal(rx.type, VFAB_WIRE_RX);
	assert_int_equal(rx.err, 0);
	assert_int_equal(rx.hca, bound.hca);
	assert_int_equal(rx.port, bound.port);
	assert_int_equal(rx.qpn, bound.qpn);
	assert_memory_equal(rx.sgid, m->sgid, 16);
	assert_memory_equal(rx.dgid, m->dgid, 16);
	assert_int_equal(rx.udp_sport, m->udp_sport);
	assert_int_equal(rx.tclass, m->tclass);
	assert_int_equal(rx.hop_limit, m->hop_limit);
	assert_int_equal(rx.bth.opcode, m->bth.opcode);
	assert_int_equal(rx.bth.dqpn, m->bth.dqpn);
	assert_int_equal(rx.bth.psn, m->bth.psn);
	assert_true(rx.bth.ackreq);
	assert_int_equal(rx.ext.src_qpn, m->ext.src_qpn);
	assert_int_equal(rx.ext.qkey, m->ext.qkey);
	assert_int_equal(rx.paylen, m->paylen);
	assert_true(vfab_wire_msg_ok(&rx, sizeof(rx) + rx.paylen));
}

static void test_tx_frame(void **state)
{
	uint8_t buf[VFABD_WIRE_FRAME_MAX];
	struct vfab_wire_msg m;

	(void)state;
	tx_msg(&m);
	round_trip(&m, ROCE_L3_V2_IPV4);
	memcpy(m.sgid, v6a, 16);
	memcpy(m.dgid, v6b, 16);
	m.flow_label = 0xabcde;
	m.bth.opcode = ROCE_OP_UD_SEND_ONLY;
	m.ext.src_qpn = QPN;
	m.ext.qkey = 0x11111111;
	round_trip(&m, ROCE_L3_V2_IPV6);

	/* A 0 IPv4 id would be replaced by the kernel's, outside the ICRC. */
	tx_msg(&m);
	assert_int_equal(vfabd_wire_tx_frame(&m, "hello!", 0, buf, sizeof(buf)), -EINVAL);
	/* What the encoder refuses: an opcode vfab does not speak, a buffer too small. */
	m.bth.opcode = 0x1f;
	assert_int_equal(vfabd_wire_tx_frame(&m, "hello!", 1, buf, sizeof(buf)), -EINVAL);
	tx_msg(&m);
	assert_int_equal(vfabd_wire_tx_frame(&m, "hello!", 1, buf, 40), -ENOSPC);
	/* The largest payload fits the module's buffer. */
	{
		static uint8_t big[VFAB_WIRE_MAX_PAYLOAD];

		m.paylen = VFAB_WIRE_MAX_PAYLOAD;
		memcpy(m.sgid, v6a, 16);
		memcpy(m.dgid, v6b, 16);
		assert_true(vfabd_wire_tx_frame(&m, big, 1, buf, sizeof(buf)) > 0);
	}
}

static void test_dst(void **state)
{
	struct sockaddr_storage sa;
	const struct sockaddr_in *s4 = (const void *)&sa;
	const struct sockaddr_in6 *s6 = (const void *)&sa;
	socklen_t len;

	(void)state;
	assert_int_equal(vfabd_wire_dst(v4b, 5, &sa, &len), AF_INET);
	assert_int_equal(len, sizeof(*s4));
	assert_int_equal(s4->sin_family, AF_INET);
	assert_int_equal(s4->sin_port, 0);
	assert_memory_equal(&s4->sin_addr, v4b + 12, 4);

	assert_int_equal(vfabd_wire_dst(v6b, 5, &sa, &len), AF_INET6);
	assert_int_equal(len, sizeof(*s6));
	assert_memory_equal(&s6->sin6_addr, v6b, 16);
	assert_int_equal(s6->sin6_scope_id, 0);
	assert_int_equal(s6->sin6_port, 0);
	/* A link-local peer is on the port's own link. */
	assert_int_equal(vfabd_wire_dst(ll, 5, &sa, &len), AF_INET6);
	assert_int_equal(s6->sin6_scope_id, 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tx_check),
	    cmocka_unit_test(test_tx_frame),
	    cmocka_unit_test(test_dst),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
