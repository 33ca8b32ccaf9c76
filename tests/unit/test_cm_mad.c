/* SPDX-License-Identifier: MIT */
/*
 * cm/cm_mad.c: the CM's messages as IB CM MADs. Every type survives
 * encode/decode with what it carries (IPv4 and IPv6), the bytes sit where
 * IBA vol. 1 tables 106-120 (Linux's ibta_vol1_c12.h) put them, the key
 * reads the IDs and the service, and what vfab's CM does not take is
 * refused, truncated MADs included.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cm/cm_mad.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#define HDR 24 /* the MAD header: message offsets below are from its end */

static const uint8_t sgid4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1};
static const uint8_t dgid4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2};
static const uint8_t sgid6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x11, 0x01};
static const uint8_t dgid6[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x22, 0x02};
/* A CA GUID in network order, as ibv_query_device gives it. */
static const uint8_t guid_bytes[8] = {0x00, 0x02, 0xc9, 0x03, 0x00, 0xa1, 0xb2, 0xc3};

static uint64_t guid(void)
{
	uint64_t g;

	memcpy(&g, guid_bytes, 8);
	return g;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint16_t be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Every field set, those the MAD does not carry included. */
static struct vfab_cm_msg msg_of(int type, int v6)
{
	struct vfab_cm_msg m;

	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)type;
	m.reason = 28;
	m.pd_len = (uint8_t)vfab_cm_pd_limit(type);
	m.mtu = 3;
	m.resp_res = 16;
	m.init_depth = 8;
	m.retry = 6;
	m.rnr_retry = 5;
	m.srq = 1;
	m.flow_control = 1;
	m.family = v6 ? AF_INET6 : AF_INET;
	m.tclass = 0x68;
	m.mraed = VFAB_CM_REP;
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
	if (v6) {
		memcpy(m.saddr, sgid6, 16);
		memcpy(m.daddr, dgid6, 16);
		memcpy(m.sgid, sgid6, 16);
	} else {
		memcpy(m.saddr, sgid4 + 12, 4);
		memcpy(m.daddr, dgid4 + 12, 4);
		memcpy(m.sgid, sgid4, 16);
	}
	for (int i = 0; i < VFAB_CM_PD_MAX; i++)
		m.pd[i] = (uint8_t)(i * 7 + 1);
	return m;
}

/* What decoding m's MAD must give: the fields the type carries, the rest as the header says. */
static struct vfab_cm_msg expected(const struct vfab_cm_msg *m, int v6)
{
	struct vfab_cm_msg e;
	int limit = vfab_cm_pd_limit(m->type);
	int n = m->pd_len < limit ? m->pd_len : limit;

	memset(&e, 0, sizeof(e));
	e.type = m->type;
	e.cm_qpn = VFAB_CM_MAD_QPN;
	memcpy(e.sgid, v6 ? sgid6 : sgid4, 16);
	e.pd_len = (uint8_t)limit;
	memcpy(e.pd, m->pd, (size_t)n);
	e.family = v6 ? AF_INET6 : AF_INET;
	if (v6) {
		memcpy(e.saddr, sgid6, 16);
		memcpy(e.daddr, dgid6, 16);
	} else {
		memcpy(e.saddr, sgid4 + 12, 4);
		memcpy(e.daddr, dgid4 + 12, 4);
	}
	switch (m->type) {
	case VFAB_CM_REQ:
		e.qpn = m->qpn;
		e.psn = m->psn;
		e.resp_res = m->resp_res;
		e.init_depth = m->init_depth;
		e.retry = m->retry;
		e.rnr_retry = m->rnr_retry;
		e.srq = m->srq;
		e.flow_control = m->flow_control;
		e.mtu = m->mtu;
		e.tclass = m->tclass;
		/* fall through */
	case VFAB_CM_SIDR_REQ:
		e.local_id = m->local_id;
		e.family = m->family;
		memcpy(e.saddr, m->saddr, 16);
		memcpy(e.daddr, m->daddr, 16);
		e.sport = m->sport;
		e.dport = m->dport;
		e.ps = m->ps;
		break;
	case VFAB_CM_REP:
		e.local_id = m->local_id;
		e.remote_id = m->remote_id;
		e.qpn = m->qpn;
		e.psn = m->psn;
		e.resp_res = m->resp_res;
		e.init_depth = m->init_depth;
		e.rnr_retry = m->rnr_retry;
		e.srq = m->srq;
		e.flow_control = m->flow_control;
		e.mtu = 5; /* IBV_MTU_4096: the requester's min() keeps its own */
		break;
	case VFAB_CM_MRA:
		e.svc_timeout = m->svc_timeout;
		/* fall through */
	case VFAB_CM_REJ:
		e.local_id = m->local_id;
		e.remote_id = m->remote_id;
		e.mraed = m->mraed;
		if (m->type == VFAB_CM_REJ)
			e.reason = m->reason;
		break;
	case VFAB_CM_DREQ:
		e.qpn = m->qpn;
		/* fall through */
	case VFAB_CM_RTU:
	case VFAB_CM_DREP:
		e.local_id = m->local_id;
		e.remote_id = m->remote_id;
		break;
	case VFAB_CM_SIDR_REP:
		e.remote_id = m->remote_id;
		e.reason = m->reason;
		e.qpn = m->qpn;
		e.qkey = m->qkey;
		e.ps = m->ps;
		e.sport = m->sport;
		break;
	}
	return e;
}

static void roundtrip_one(const struct vfab_cm_msg *m, int v6)
{
	uint8_t buf[VFAB_CM_MAD_BYTES];
	struct vfab_cm_msg d, e = expected(m, v6);

	assert_int_equal(vfab_cm_mad_encode(m, 0x1122334455667788ull, guid(), v6 ? dgid6 : dgid4,
					    buf, sizeof(buf)),
			 VFAB_CM_MAD_BYTES);
	memset(&d, 0xa5, sizeof(d));
	assert_int_equal(
	    vfab_cm_mad_decode(&d, buf, sizeof(buf), v6 ? sgid6 : sgid4, v6 ? dgid6 : dgid4), 0);
	assert_memory_equal(&d, &e, sizeof(d));
}

static void roundtrip(void **state)
{
	(void)state;
	for (int v6 = 0; v6 < 2; v6++) {
		for (int t = VFAB_CM_REQ; t < VFAB_CM_MSG_TYPES; t++) {
			struct vfab_cm_msg m = msg_of(t, v6);

			roundtrip_one(&m, v6);
			m.mraed = VFAB_CM_REQ; /* MRA and REJ: the other message */
			m.pd_len = 3;	       /* and a short private data, zero-padded */
			roundtrip_one(&m, v6);
		}
	}
}

static void req_layout(void **state)
{
	struct vfab_cm_msg m = msg_of(VFAB_CM_REQ, 0);
	uint8_t buf[VFAB_CM_MAD_BYTES + 8], *msg = buf + HDR, *cma = msg + 140;

	(void)state;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(
	    vfab_cm_mad_encode(&m, 0x1122334455667788ull, guid(), dgid4, buf, sizeof(buf)), 256);
	assert_int_equal(buf[256], 0xee); /* nothing past the MAD */
	/* MAD header: base version 1, class CM, class version 2, Send */
	assert_int_equal(be32(buf), 0x01070203);
	assert_int_equal(be32(buf + 4), 0); /* status, class specific */
	assert_true(be64(buf + 8) == 0x1122334455667788ull);
	assert_int_equal(be16(buf + 16), 0x0010);
	assert_true(all_zero(buf + 18, 6)); /* reserved, attribute modifier */
	assert_int_equal(be32(msg), 0x01020304);
	assert_true(all_zero(msg + 4, 4));
	assert_true(be64(msg + 8) == 0x0000000001061c06ull); /* RDMA_PS_TCP, port 7174 */
	assert_memory_equal(msg + 16, guid_bytes, 8);
	assert_int_equal(be32(msg + 28), 0);	      /* local Q_Key */
	assert_int_equal(be32(msg + 32), 0xabcdef10); /* QPN, responder resources */
	assert_int_equal(be32(msg + 36), 0x00000008); /* EECN, initiator depth */
	/* remote EECN, remote CM response timeout 20, RC, flow control */
	assert_int_equal(be32(msg + 40), 20 << 3 | 1);
	assert_int_equal(be32(msg + 44), 0x12345600 | 20 << 3 | 6); /* PSN, timeout, retry */
	assert_int_equal(be16(msg + 48), 0xffff);		    /* P_Key */
	assert_int_equal(msg[50], 3 << 4 | 5);			    /* MTU, RNR retry */
	assert_int_equal(msg[51], 15 << 4 | 1 << 3);		    /* max CM retries, SRQ */
	assert_int_equal(be32(msg + 52), 0xffffffff);		    /* permissive LIDs */
	assert_memory_equal(buf + HDR + 56, sgid4, 16);
	assert_memory_equal(buf + HDR + 72, dgid4, 16);
	assert_int_equal(be32(msg + 88), 0); /* flow label, packet rate */
	assert_int_equal(msg[92], 0x68);
	assert_int_equal(msg[93], 64);
	assert_int_equal(msg[94], 0);	     /* SL 0, not subnet local */
	assert_int_equal(msg[95], 18 << 3);  /* local ACK timeout: cm_ack_timeout(16, 16) */
	assert_true(all_zero(msg + 96, 44)); /* no alternate path */
	/* rdma_cm's header: version 0, IPv4, source port, addresses in the last 4 bytes */
	assert_int_equal(cma[0], 0x00);
	assert_int_equal(cma[1], 0x40);
	assert_int_equal(be16(cma + 2), 40000);
	assert_true(all_zero(cma + 4, 12));
	assert_memory_equal(cma + 16, sgid4 + 12, 4);
	assert_true(all_zero(cma + 20, 12));
	assert_memory_equal(cma + 32, dgid4 + 12, 4);
	assert_memory_equal(cma + 36, m.pd, 56);

	/* IPv6: ip_version 0x60 and the whole addresses */
	m = msg_of(VFAB_CM_REQ, 1);
	vfab_cm_mad_encode(&m, 1, guid(), dgid6, buf, sizeof(buf));
	assert_int_equal(cma[1], 0x60);
	assert_memory_equal(cma + 4, sgid6, 16);
	assert_memory_equal(cma + 20, dgid6, 16);
	assert_memory_equal(msg + 56, sgid6, 16);
	assert_memory_equal(msg + 72, dgid6, 16);

	/* Private data beyond the field's room is cut; short private data zero-padded. */
	m.pd_len = 200;
	vfab_cm_mad_encode(&m, 1, guid(), dgid6, buf, sizeof(buf));
	assert_memory_equal(cma + 36, m.pd, 56);
	m.pd_len = 5;
	vfab_cm_mad_encode(&m, 1, guid(), dgid6, buf, sizeof(buf));
	assert_memory_equal(cma + 36, m.pd, 5);
	assert_true(all_zero(cma + 41, 51));
}

static void rep_layout(void **state)
{
	struct vfab_cm_msg m = msg_of(VFAB_CM_REP, 0);
	uint8_t buf[VFAB_CM_MAD_BYTES], *msg = buf + HDR;

	(void)state;
	assert_int_equal(vfab_cm_mad_encode(&m, 7, guid(), dgid4, buf, sizeof(buf)), 256);
	assert_int_equal(be16(buf + 16), 0x0013);
	assert_int_equal(be32(msg), 0x01020304);
	assert_int_equal(be32(msg + 4), 0xa0b0c0d0);
	assert_int_equal(be32(msg + 8), 0);	      /* Q_Key */
	assert_int_equal(be32(msg + 12), 0xabcdef00); /* QPN */
	assert_int_equal(be32(msg + 16), 0);	      /* EECN */
	assert_int_equal(be32(msg + 20), 0x12345600); /* PSN */
	assert_int_equal(msg[24], 16);
	assert_int_equal(msg[25], 8);
	assert_int_equal(msg[26], 1);		    /* ACK delay 0, no failover, flow control */
	assert_int_equal(msg[27], 5 << 5 | 1 << 4); /* RNR retry, SRQ */
	assert_memory_equal(msg + 28, guid_bytes, 8);
	assert_memory_equal(msg + 36, m.pd, 196);
}

static void rej_mra_layout(void **state)
{
	struct vfab_cm_msg m = msg_of(VFAB_CM_REJ, 0);
	uint8_t buf[VFAB_CM_MAD_BYTES], *msg = buf + HDR;

	(void)state;
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0012);
	assert_int_equal(be32(msg), 0x01020304);
	assert_int_equal(be32(msg + 4), 0xa0b0c0d0);
	assert_int_equal(msg[8], 1 << 6); /* REP rejected */
	assert_int_equal(msg[9], 0);	  /* no ARI */
	assert_int_equal(be16(buf + HDR + 10), 28);
	assert_true(all_zero(msg + 12, 72));
	assert_memory_equal(msg + 84, m.pd, 148);
	m.mraed = VFAB_CM_REQ;
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(msg[8], 0);

	m = msg_of(VFAB_CM_MRA, 0);
	m.mraed = VFAB_CM_REQ;
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0011);
	assert_int_equal(msg[8], 0);	   /* REQ MRAed */
	assert_int_equal(msg[9], 24 << 3); /* service timeout */
	assert_memory_equal(msg + 10, m.pd, 222);
	m.mraed = VFAB_CM_REP;
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(msg[8], 1 << 6);
}

static void other_layouts(void **state)
{
	struct vfab_cm_msg m = msg_of(VFAB_CM_SIDR_REP, 0);
	uint8_t buf[VFAB_CM_MAD_BYTES], *msg = buf + HDR;

	(void)state;
	m.reason = 1;
	m.ps = 0x0111;
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0018);
	assert_int_equal(be32(msg), 0xa0b0c0d0); /* the request it answers */
	assert_int_equal(msg[4], 1);		 /* status */
	assert_int_equal(msg[5], 0);
	assert_int_equal(be32(msg + 8), 0xabcdef00);
	assert_true(be64(msg + 12) == 0x0000000001119c40ull); /* RDMA_PS_UDP, the listener's port */
	assert_int_equal(be32(msg + 20), 0x01234567);
	assert_true(all_zero(msg + 24, 72)); /* class port info */
	assert_memory_equal(msg + 96, m.pd, 136);

	m = msg_of(VFAB_CM_SIDR_REQ, 1);
	m.ps = 0x0111;
	vfab_cm_mad_encode(&m, 7, 0, dgid6, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0017);
	assert_int_equal(be32(msg), 0x01020304);
	assert_int_equal(be16(msg + 4), 0xffff);
	assert_true(be64(msg + 8) == 0x0000000001111c06ull);
	assert_int_equal(msg[17], 0x60);
	assert_memory_equal(msg + 16 + 36, m.pd, 180);

	m = msg_of(VFAB_CM_DREQ, 0);
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0015);
	assert_int_equal(be32(msg + 8), 0xabcdef00); /* remote QPN */
	assert_memory_equal(msg + 12, m.pd, 220);
	m = msg_of(VFAB_CM_RTU, 0);
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0014);
	assert_memory_equal(msg + 8, m.pd, 224);
	m = msg_of(VFAB_CM_DREP, 0);
	vfab_cm_mad_encode(&m, 7, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(be16(buf + 16), 0x0016);
	assert_int_equal(be32(msg + 4), 0xa0b0c0d0);
}

/*
 * A REQ and a REP assembled byte by byte as a Linux peer with ECE sends
 * them (vendor ID in the reserved bytes, options in the attribute
 * modifier): decoding reads the fields around them.
 */
static void decodes_linux_frames(void **state)
{
	uint8_t buf[VFAB_CM_MAD_BYTES] = {0x01, 0x07, 0x02, 0x03}, *msg = buf + HDR;
	struct vfab_cm_msg d;
	static const uint8_t sid[8] = {0, 0, 0, 0, 0x01, 0x06, 0x12, 0xb7}; /* TCP, 4791 */

	(void)state;
	buf[8] = 0xde;
	buf[15] = 0x42;
	buf[17] = 0x10;
	buf[20] = 0x80; /* ECE options */
	msg[0] = 0x4b;
	msg[3] = 0x11;
	msg[5] = 0x02; /* ECE vendor ID */
	msg[6] = 0xc9;
	memcpy(msg + 8, sid, 8);
	msg[32] = 0x00; /* QPN 0x0000b1, responder resources 4 */
	msg[34] = 0xb1;
	msg[35] = 4;
	msg[39] = 2;
	msg[43] = 20 << 3; /* RC, no flow control */
	msg[44] = 0xaa;	   /* PSN 0xaa5501, retry 7 */
	msg[45] = 0x55;
	msg[46] = 0x01;
	msg[47] = 20 << 3 | 7;
	msg[48] = msg[49] = 0xff;
	msg[50] = 5 << 4 | 7; /* 4096, RNR retry 7 */
	msg[51] = 15 << 4;
	memset(msg + 52, 0xff, 4);
	memcpy(msg + 56, sgid4, 16);
	memcpy(msg + 72, dgid4, 16);
	msg[88] = 0x12; /* a flow label and a packet rate: ignored */
	msg[91] = 0x10;
	msg[92] = 0x0a;
	msg[93] = 64;
	msg[95] = 17 << 3;
	msg[141] = 0x40;
	msg[142] = 0xc3; /* port 50000 */
	msg[143] = 0x50;
	memcpy(msg + 156, sgid4 + 12, 4);
	memcpy(msg + 172, dgid4 + 12, 4);
	msg[176] = 'h';
	msg[177] = 'i';
	assert_int_equal(vfab_cm_mad_decode(&d, buf, sizeof(buf), sgid4, dgid4), 0);
	assert_int_equal(d.type, VFAB_CM_REQ);
	assert_int_equal(d.local_id, 0x4b000011);
	assert_int_equal(d.remote_id, 0);
	assert_int_equal(d.qpn, 0xb1);
	assert_int_equal(d.resp_res, 4);
	assert_int_equal(d.init_depth, 2);
	assert_int_equal(d.flow_control, 0);
	assert_int_equal(d.psn, 0xaa5501);
	assert_int_equal(d.retry, 7);
	assert_int_equal(d.mtu, 5);
	assert_int_equal(d.rnr_retry, 7);
	assert_int_equal(d.srq, 0);
	assert_int_equal(d.tclass, 0x0a);
	assert_int_equal(d.family, AF_INET);
	assert_memory_equal(d.saddr, sgid4 + 12, 4);
	assert_memory_equal(d.daddr, dgid4 + 12, 4);
	assert_int_equal(d.sport, 50000);
	assert_int_equal(d.dport, 4791);
	assert_int_equal(d.ps, 0x0106);
	assert_int_equal(d.cm_qpn, VFAB_CM_MAD_QPN);
	assert_int_equal(d.ece_vendor, 0);
	assert_int_equal(d.ece_options, 0);
	assert_int_equal(d.pd_len, 56);
	assert_memory_equal(d.pd, "hi", 2);

	memset(buf + HDR, 0, sizeof(buf) - HDR);
	buf[17] = 0x13;
	msg[3] = 0x22;	/* local 0x22 */
	msg[7] = 0x11;	/* remote 0x11 */
	msg[14] = 0xb2; /* QPN, ECE vendor ID bytes after QPN, EECN and PSN */
	msg[15] = 0x00;
	msg[19] = 0x02;
	msg[21] = 0x77;
	msg[23] = 0xc9;
	msg[27] = 7 << 5;
	assert_int_equal(vfab_cm_mad_decode(&d, buf, sizeof(buf), sgid4, dgid4), 0);
	assert_int_equal(d.type, VFAB_CM_REP);
	assert_int_equal(d.local_id, 0x22);
	assert_int_equal(d.remote_id, 0x11);
	assert_int_equal(d.qpn, 0xb2);
	assert_int_equal(d.psn, 0x7700);
	assert_int_equal(d.rnr_retry, 7);
	assert_int_equal(d.mtu, 5);
	assert_int_equal(d.pd_len, 196);
}

static void encode_to(int type, int v6, uint8_t *buf)
{
	struct vfab_cm_msg m = msg_of(type, v6);

	assert_int_equal(
	    vfab_cm_mad_encode(&m, 9, guid(), v6 ? dgid6 : dgid4, buf, VFAB_CM_MAD_BYTES),
	    VFAB_CM_MAD_BYTES);
}

static void keys(void **state)
{
	uint8_t buf[VFAB_CM_MAD_BYTES];
	struct vfab_cm_mad_key k;
	struct vfab_cm_msg m;

	(void)state;
	encode_to(VFAB_CM_REQ, 0, buf);
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
	assert_int_equal(k.type, VFAB_CM_REQ);
	assert_int_equal(k.own_id, 0x01020304);
	assert_int_equal(k.for_id, 0);
	assert_int_equal(k.ps, 0x0106);
	assert_int_equal(k.port, 7174);
	assert_int_equal(k.family, AF_INET);
	assert_memory_equal(k.daddr, dgid4 + 12, 4);
	assert_true(all_zero(k.daddr + 4, 12));

	encode_to(VFAB_CM_REP, 0, buf);
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
	assert_int_equal(k.type, VFAB_CM_REP);
	assert_int_equal(k.own_id, 0x01020304);
	assert_int_equal(k.for_id, 0xa0b0c0d0);
	assert_int_equal(k.ps, 0);
	assert_int_equal(k.port, 0);
	assert_int_equal(k.family, 0);

	for (int t = VFAB_CM_RTU; t <= VFAB_CM_MRA; t++) {
		if (t == VFAB_CM_SIDR_REQ || t == VFAB_CM_SIDR_REP)
			continue;
		encode_to(t, 1, buf);
		assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
		assert_int_equal(k.type, t);
		assert_int_equal(k.own_id, 0x01020304);
		assert_int_equal(k.for_id, 0xa0b0c0d0);
	}

	m = msg_of(VFAB_CM_SIDR_REQ, 1);
	m.ps = 0x0111;
	vfab_cm_mad_encode(&m, 9, 0, dgid6, buf, sizeof(buf));
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
	assert_int_equal(k.type, VFAB_CM_SIDR_REQ);
	assert_int_equal(k.own_id, 0x01020304);
	assert_int_equal(k.for_id, 0);
	assert_int_equal(k.ps, 0x0111);
	assert_int_equal(k.port, 7174);
	assert_int_equal(k.family, AF_INET6);
	assert_memory_equal(k.daddr, dgid6, 16);

	encode_to(VFAB_CM_SIDR_REP, 0, buf);
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
	assert_int_equal(k.type, VFAB_CM_SIDR_REP);
	assert_int_equal(k.own_id, 0);
	assert_int_equal(k.for_id, 0xa0b0c0d0);

	/* The key of ib_cm's REJ of a REQ it could not take: no ID of its own. */
	m = msg_of(VFAB_CM_REJ, 0);
	m.local_id = 0;
	vfab_cm_mad_encode(&m, 9, 0, dgid4, buf, sizeof(buf));
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), 0);
	assert_int_equal(k.own_id, 0);
	assert_int_equal(k.for_id, 0xa0b0c0d0);
}

/* buf, changed at off to v, is refused by decode and key alike. */
static void refused(const uint8_t *good, size_t off, uint8_t v)
{
	uint8_t buf[VFAB_CM_MAD_BYTES];
	struct vfab_cm_msg d;
	struct vfab_cm_mad_key k;

	memcpy(buf, good, sizeof(buf));
	buf[off] = v;
	assert_int_equal(vfab_cm_mad_decode(&d, buf, sizeof(buf), sgid4, dgid4), -EBADMSG);
	assert_int_equal(vfab_cm_mad_key(buf, sizeof(buf), &k), -EBADMSG);
}

static void refuses(void **state)
{
	uint8_t req[VFAB_CM_MAD_BYTES], sidr[VFAB_CM_MAD_BYTES], mra[VFAB_CM_MAD_BYTES];
	uint8_t rej[VFAB_CM_MAD_BYTES];
	struct vfab_cm_msg d;
	struct vfab_cm_mad_key k;

	(void)state;
	encode_to(VFAB_CM_REQ, 0, req);
	encode_to(VFAB_CM_SIDR_REQ, 1, sidr);
	encode_to(VFAB_CM_MRA, 0, mra);
	encode_to(VFAB_CM_REJ, 0, rej);
	refused(req, 0, 2);	/* base version */
	refused(req, 1, 0x03);	/* class: SA */
	refused(req, 2, 1);	/* class version */
	refused(req, 3, 0x81);	/* method: GetResp */
	refused(req, 3, 0x01);	/* Get (ClassPortInfo) */
	refused(req, 17, 0x01); /* ClassPortInfo */
	refused(req, 17, 0x0f);
	refused(req, 17, 0x19); /* LAP */
	refused(req, 17, 0x1a); /* APR */
	refused(req, 16, 0x01);
	refused(req, HDR + 43, 20 << 3 | 1 << 1 | 1); /* UC */
	refused(req, HDR + 43, 20 << 3 | 3 << 1 | 1); /* XRC */
	refused(req, HDR + 140, 1);		      /* rdma_cm header version */
	refused(req, HDR + 141, 0x50);		      /* IP version */
	refused(req, HDR + 141, 0x00);
	refused(req, HDR + 8, 0x80); /* service ID outside RDMA_PS space */
	refused(req, HDR + 11, 0x01);
	refused(sidr, HDR + 16, 1);
	refused(sidr, HDR + 17, 0x70);
	refused(sidr, HDR + 8, 0x01);
	refused(mra, HDR + 8, 2 << 6); /* an MRA of a LAP */
	refused(mra, HDR + 8, 3 << 6);
	refused(rej, HDR + 8, 3 << 6);

	/* Port space 0 alone (the port is another byte). */
	{
		uint8_t b[VFAB_CM_MAD_BYTES];

		memcpy(b, req, sizeof(b));
		b[HDR + 12] = 0;
		b[HDR + 13] = 0;
		assert_int_equal(vfab_cm_mad_decode(&d, b, sizeof(b), sgid4, dgid4), -EBADMSG);
		assert_int_equal(vfab_cm_mad_key(b, sizeof(b), &k), -EBADMSG);
	}
	/* ib_cm's REJ of "other" messages (after its REP, stale connections) is taken. */
	rej[HDR + 8] = 2 << 6;
	assert_int_equal(vfab_cm_mad_decode(&d, rej, sizeof(rej), sgid4, dgid4), 0);
	assert_int_equal(d.mraed, 0);
	assert_int_equal(d.reason, 28);
	assert_int_equal(vfab_cm_mad_decode(&d, NULL, 256, sgid4, dgid4), -EBADMSG);
	assert_int_equal(vfab_cm_mad_key(NULL, 256, &k), -EBADMSG);
}

static void encode_refuses(void **state)
{
	struct vfab_cm_msg m = msg_of(VFAB_CM_REQ, 0);
	uint8_t buf[VFAB_CM_MAD_BYTES];

	(void)state;
	assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, buf, sizeof(buf) - 1), -EINVAL);
	assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, NULL, sizeof(buf)), -EINVAL);
	m.type = 0;
	assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, buf, sizeof(buf)), -EINVAL);
	m.type = VFAB_CM_MSG_TYPES;
	assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, buf, sizeof(buf)), -EINVAL);
	m.type = VFAB_CM_SIDR_REQ; /* rdma_cm's header holds IPv4 or IPv6 only */
	m.family = 0;
	assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, buf, sizeof(buf)), -EINVAL);
	/* More than a MAD of room is fine: 256 bytes written. */
	{
		uint8_t big[300];

		m = msg_of(VFAB_CM_DREP, 0);
		memset(big, 0xee, sizeof(big));
		assert_int_equal(vfab_cm_mad_encode(&m, 1, 0, dgid4, big, sizeof(big)), 256);
		assert_int_equal(big[256], 0xee);
		assert_int_equal(vfab_cm_mad_key(big, sizeof(big), &(struct vfab_cm_mad_key){0}),
				 0);
	}
}

/* Every length short of a MAD, in a buffer of exactly that size (ASan sees overreads). */
static void truncated(void **state)
{
	uint8_t good[VFAB_CM_MAD_BYTES];

	(void)state;
	for (int t = VFAB_CM_REQ; t < VFAB_CM_MSG_TYPES; t++) {
		encode_to(t, 0, good);
		for (size_t n = 0; n < VFAB_CM_MAD_BYTES; n++) {
			uint8_t *p = malloc(n ? n : 1);
			struct vfab_cm_msg d;
			struct vfab_cm_mad_key k;

			assert_non_null(p);
			memcpy(p, good, n);
			assert_int_equal(vfab_cm_mad_decode(&d, p, n, sgid4, dgid4), -EBADMSG);
			assert_int_equal(vfab_cm_mad_key(p, n, &k), -EBADMSG);
			free(p);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(roundtrip),      cmocka_unit_test(req_layout),
	    cmocka_unit_test(rep_layout),     cmocka_unit_test(rej_mra_layout),
	    cmocka_unit_test(other_layouts),  cmocka_unit_test(decodes_linux_frames),
	    cmocka_unit_test(keys),	      cmocka_unit_test(refuses),
	    cmocka_unit_test(encode_refuses), cmocka_unit_test(truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
