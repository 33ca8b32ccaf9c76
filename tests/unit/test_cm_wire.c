/* SPDX-License-Identifier: MIT */
/*
 * cm/cm_wire.c: every field survives encode/decode, bad messages are
 * refused, and the private-data limits are those of rdma_cm over RoCE
 * (IBA 12.6 field sizes, minus rdma_cm's 36-byte header in REQ/SIDR REQ).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cm/cm_wire.h"

#include <errno.h>
#include <string.h>

static void roundtrip(void **state)
{
	struct vfab_cm_msg m, d;
	uint8_t buf[VFAB_CM_MSG_BYTES];

	(void)state;
	memset(&m, 0, sizeof(m));
	m.type = VFAB_CM_REP;
	m.reason = 3;
	m.pd_len = 196;
	m.mtu = 3;
	m.resp_res = 16;
	m.init_depth = 8;
	m.retry = 7;
	m.rnr_retry = 6;
	m.srq = 1;
	m.flow_control = 1;
	m.family = 2;
	m.tclass = 0x68;
	m.mraed = VFAB_CM_REQ;
	m.svc_timeout = 24;
	m.local_id = 0x01020304;
	m.remote_id = 0xa0b0c0d0;
	m.qpn = 0xabcdef;
	m.psn = 0x123456;
	m.qkey = 0x01234567;
	m.cm_qpn = 0x4000;
	m.pid = 4242;
	m.ece_vendor = 0x02c9;
	m.ece_options = 0x80000001;
	m.start = 0x0123456789abcdefull;
	m.ps = 0x0106;
	m.sport = 40000;
	m.dport = 7174;
	for (int i = 0; i < 16; i++) {
		m.saddr[i] = (uint8_t)i;
		m.daddr[i] = (uint8_t)(0x10 + i);
		m.sgid[i] = (uint8_t)(0x20 + i);
	}
	for (int i = 0; i < VFAB_CM_PD_MAX; i++)
		m.pd[i] = (uint8_t)(i * 7);
	assert_int_equal(vfab_cm_msg_encode(&m, buf, sizeof(buf)), VFAB_CM_MSG_BYTES);
	assert_int_equal(vfab_cm_msg_decode(&d, buf, sizeof(buf)), 0);
	assert_memory_equal(&m, &d, sizeof(m));
}

static void refuses(void **state)
{
	struct vfab_cm_msg m = {.type = VFAB_CM_REQ}, d;
	uint8_t buf[VFAB_CM_MSG_BYTES];

	(void)state;
	assert_int_equal(vfab_cm_msg_encode(&m, buf, sizeof(buf) - 1), 0);
	vfab_cm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(vfab_cm_msg_decode(&d, buf, sizeof(buf) - 1), -EBADMSG);
	buf[0] = 0; /* no such type */
	assert_int_equal(vfab_cm_msg_decode(&d, buf, sizeof(buf)), -EBADMSG);
	buf[0] = VFAB_CM_MSG_TYPES;
	assert_int_equal(vfab_cm_msg_decode(&d, buf, sizeof(buf)), -EBADMSG);
	m.pd_len = 57; /* a REQ carries 56 bytes of the consumer's */
	vfab_cm_msg_encode(&m, buf, sizeof(buf));
	assert_int_equal(vfab_cm_msg_decode(&d, buf, sizeof(buf)), -EBADMSG);
}

static void limits(void **state)
{
	(void)state;
	/* rdma_cm over RoCE: 56 bytes on connect, 196 on accept, 148 on reject. */
	assert_int_equal(vfab_cm_pd_limit(VFAB_CM_REQ), 56);
	assert_int_equal(vfab_cm_pd_limit(VFAB_CM_REP), 196);
	assert_int_equal(vfab_cm_pd_limit(VFAB_CM_REJ), 148);
	assert_int_equal(vfab_cm_pd_limit(VFAB_CM_SIDR_REQ), 180);
	assert_int_equal(vfab_cm_pd_limit(VFAB_CM_SIDR_REP), 136);
	assert_int_equal(vfab_cm_pd_limit(0), 0);
	/* The receiver's event reports the whole field, as the kernel's does. */
	assert_int_equal(vfab_cm_pd_reported(VFAB_CM_REQ), 56);
	assert_int_equal(vfab_cm_pd_reported(VFAB_CM_REJ), 148);
	assert_int_equal(vfab_cm_pd_reported(VFAB_CM_RTU), 0);
	assert_int_equal(VFAB_CM_REJ_INVALID_SERVICE_ID, 8);
	assert_int_equal(VFAB_CM_REJ_CONSUMER_DEFINED, 28);
	assert_string_equal(vfab_cm_msg_name(VFAB_CM_DREQ), "DREQ");
	/* rdma_cm's MRA carries no consumer data. */
	assert_string_equal(vfab_cm_msg_name(VFAB_CM_MRA), "MRA");
	assert_int_equal(vfab_cm_pd_reported(VFAB_CM_MRA), 0);
	assert_string_equal(vfab_cm_msg_name(99), "?");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(roundtrip),
	    cmocka_unit_test(refuses),
	    cmocka_unit_test(limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
