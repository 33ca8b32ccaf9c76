/* SPDX-License-Identifier: MIT */
/*
 * Field positions: IBA vol. 1 tables 106-120 as Linux's ibta_vol1_c12.h
 * spells them (bit 0 of a byte is its most significant one), offsets below
 * counted from the end of the 24-byte MAD header. Values: what ib_cm and
 * rdma_cm put there for a RoCE connection (cm_format_*, cma_connect_ib,
 * cma_format_hdr).
 */
#include "cm/cm_mad.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "cm/cm_path.h"

#define MAD_HDR 24
#define BASE_VERSION 1
#define CLASS_CM 0x07
#define CLASS_VERSION 2
#define METHOD_SEND 0x03
#define ATTR_FIRST 0x0010 /* REQ; SIDR REP is ATTR_FIRST + 8 */

/* Message REJected / MRAed (cm_msg_response). */
#define MSG_REQ 0
#define MSG_REP 1
#define MSG_OTHER 2

#define CMA_HDR 36
#define CMA_VERSION 0x00
#define DEFAULT_PKEY 0xffff
#define PERMISSIVE_LID 0xffff
#define CM_RESPONSE_TIMEOUT 20 /* rdma_cm's, both directions */
#define MAX_CM_RETRIES 15
#define CA_ACK_DELAY 16 /* provider/vfab_query.c's local_ca_ack_delay */
#define MTU_4096 5	/* IBV_MTU_4096: a REP has no MTU, the requester keeps its own */

/* Indexed by attribute ID - ATTR_FIRST; pd_off/pd_len: the private data field. */
static const struct attr {
	uint8_t type;
	uint8_t pd_off;
	uint8_t pd_len;
} attrs[] = {
    {VFAB_CM_REQ, 140, 92}, {VFAB_CM_MRA, 10, 222},	 {VFAB_CM_REJ, 84, 148},
    {VFAB_CM_REP, 36, 196}, {VFAB_CM_RTU, 8, 224},	 {VFAB_CM_DREQ, 12, 220},
    {VFAB_CM_DREP, 8, 224}, {VFAB_CM_SIDR_REQ, 16, 216}, {VFAB_CM_SIDR_REP, 96, 136},
};
#define NATTRS (sizeof(attrs) / sizeof(attrs[0]))

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* The high 24 bits of a 32-bit word: the low byte is another field (ECE vendor ID, ...). */
static void put24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}

static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)get16(p) << 16 | get16(p + 2);
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) << 32 | get32(p + 4);
}

static int has_cma_hdr(int type)
{
	return type == VFAB_CM_REQ || type == VFAB_CM_SIDR_REQ;
}

/* rdma_get_service_id: the port space above the port, in RDMA_PS space. */
static uint64_t service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/* What a REQ's rdma_cm header and service ID say. */
struct cma {
	uint8_t family;
	uint16_t sport, dport, ps;
	uint8_t saddr[16], daddr[16];
};

/* The header's 16-byte address (IPv4 in its last 4 bytes) in cm_wire's form (IPv4 first). */
static void cma_addr_get(uint8_t out[16], const uint8_t *field, uint8_t family)
{
	memset(out, 0, 16);
	if (family == AF_INET6)
		memcpy(out, field, 16);
	else
		memcpy(out, field + 12, 4);
}

static void cma_addr_put(uint8_t *field, const uint8_t in[16], uint8_t family)
{
	if (family == AF_INET6)
		memcpy(field, in, 16);
	else
		memcpy(field + 12, in, 4);
}

/* -EBADMSG unless rdma_cm sent it: its header version, IP 4 or 6, an RDMA_PS service ID. */
static int cma_parse(const uint8_t *msg, const struct attr *a, struct cma *c)
{
	const uint8_t *h = msg + a->pd_off;
	uint64_t sid = get64(msg + 8); /* REQ and SIDR REQ alike */
	int ipv = h[1] >> 4;

	if (h[0] != CMA_VERSION || (ipv != 4 && ipv != 6) || sid >> 32 || !(sid >> 16))
		return -EBADMSG;
	c->family = ipv == 6 ? AF_INET6 : AF_INET;
	c->sport = get16(h + 2);
	cma_addr_get(c->saddr, h + 4, c->family);
	cma_addr_get(c->daddr, h + 20, c->family);
	c->ps = (uint16_t)(sid >> 16);
	c->dport = (uint16_t)sid;
	return 0;
}

/*
 * The checks decode and key share: the MAD header, an attribute vfab's CM
 * takes, field values it can represent. The rdma_cm header of a REQ or
 * SIDR REQ into *c.
 */
static const struct attr *check(const uint8_t *buf, size_t len, struct cma *c)
{
	const uint8_t *msg;
	const struct attr *a;
	unsigned id;

	if (!buf || len < VFAB_CM_MAD_BYTES || buf[0] != BASE_VERSION || buf[1] != CLASS_CM ||
	    buf[2] != CLASS_VERSION || buf[3] != METHOD_SEND)
		return NULL;
	msg = buf + MAD_HDR;
	id = get16(buf + 16);
	if (id < ATTR_FIRST || id - ATTR_FIRST >= NATTRS)
		return NULL; /* ClassPortInfo, LAP, APR: not on RoCE (cm_lap_handler) */
	a = &attrs[id - ATTR_FIRST];
	switch (a->type) {
	case VFAB_CM_MRA: /* an MRA of a LAP has nothing to delay here */
		return msg[8] >> 6 > MSG_REP ? NULL : a;
	case VFAB_CM_REJ: /* "other": ib_cm's REJ after its REP, or of a stale connection */
		return msg[8] >> 6 > MSG_OTHER ? NULL : a;
	case VFAB_CM_REQ: /* transport service type RC: vfab_cm_msg knows no UC or XRC */
		if (msg[43] & 0x06)
			return NULL;
		/* fall through */
	case VFAB_CM_SIDR_REQ:
		return cma_parse(msg, a, c) ? NULL : a;
	default:
		return a;
	}
}

static void put_req(uint8_t *msg, const struct vfab_cm_msg *m, uint64_t guid,
		    const uint8_t dgid[16])
{
	/*
	 * ib_cm's cm_ack_timeout of the packet lifetime and the HCA's CA ACK
	 * delay (16, as a ConnectX and vfab's query_device report): 18.
	 */
	int t = VFAB_CM_PACKET_LIFETIME + 1;
	int ack = t >= CA_ACK_DELAY ? t + (CA_ACK_DELAY >= t - 1)
				    : CA_ACK_DELAY + (t >= CA_ACK_DELAY - 1);

	if (ack > 31)
		ack = 31;

	put32(msg, m->local_id);
	put64(msg + 8, service_id(m->ps, m->dport));
	memcpy(msg + 16, &guid, 8);
	put24(msg + 32, m->qpn);
	msg[35] = m->resp_res;
	msg[39] = m->init_depth;
	msg[43] = CM_RESPONSE_TIMEOUT << 3 | (m->flow_control & 1); /* RC: service type 0 */
	put24(msg + 44, m->psn);
	msg[47] = (uint8_t)(CM_RESPONSE_TIMEOUT << 3 | (m->retry & 7));
	put16(msg + 48, DEFAULT_PKEY);
	msg[50] = (uint8_t)((m->mtu & 0xf) << 4 | (m->rnr_retry & 7));
	msg[51] = (uint8_t)(MAX_CM_RETRIES << 4 | (m->srq & 1) << 3);
	/* A hop limit above 1: cm_format_req knows no LIDs and leaves them permissive. */
	put16(msg + 52, PERMISSIVE_LID);
	put16(msg + 54, PERMISSIVE_LID);
	memcpy(msg + 56, m->sgid, 16);
	if (dgid)
		memcpy(msg + 72, dgid, 16);
	msg[92] = m->tclass;
	msg[93] = VFAB_CM_HOP_LIMIT;
	msg[95] = (uint8_t)(ack << 3); /* SL 0, not subnet local: routed (RoCE v2) */
}

static void put_rep(uint8_t *msg, const struct vfab_cm_msg *m, uint64_t guid)
{
	put32(msg, m->local_id);
	put32(msg + 4, m->remote_id);
	put24(msg + 12, m->qpn);
	put24(msg + 20, m->psn);
	msg[24] = m->resp_res;
	msg[25] = m->init_depth;
	msg[26] = m->flow_control & 1; /* target ACK delay 0, no failover (rdma_cm) */
	msg[27] = (uint8_t)((m->rnr_retry & 7) << 5 | (m->srq & 1) << 4);
	memcpy(msg + 28, &guid, 8);
}

int vfab_cm_mad_encode(const struct vfab_cm_msg *m, uint64_t tid, uint64_t guid,
		       const uint8_t dgid[16], uint8_t *buf, size_t len)
{
	const struct attr *a = NULL;
	uint8_t *msg, *pd;
	size_t room, n;

	for (size_t i = 0; i < NATTRS; i++)
		if (attrs[i].type == m->type)
			a = &attrs[i];
	if (!a || !buf || len < VFAB_CM_MAD_BYTES)
		return -EINVAL;
	msg = buf + MAD_HDR;
	if (has_cma_hdr(m->type) && m->family != AF_INET && m->family != AF_INET6)
		return -EINVAL; /* rdma_cm's header has no other address */
	memset(buf, 0, VFAB_CM_MAD_BYTES);
	buf[0] = BASE_VERSION;
	buf[1] = CLASS_CM;
	buf[2] = CLASS_VERSION;
	buf[3] = METHOD_SEND;
	put64(buf + 8, tid);
	put16(buf + 16, (uint16_t)(ATTR_FIRST + (a - attrs)));
	pd = msg + a->pd_off;
	room = a->pd_len;
	switch (m->type) {
	case VFAB_CM_REQ:
		put_req(msg, m, guid, dgid);
		break;
	case VFAB_CM_REP:
		put_rep(msg, m, guid);
		break;
	case VFAB_CM_MRA:
	case VFAB_CM_REJ:
		put32(msg, m->local_id);
		put32(msg + 4, m->remote_id);
		msg[8] = (uint8_t)((m->mraed == VFAB_CM_REP ? MSG_REP : MSG_REQ) << 6);
		if (m->type == VFAB_CM_MRA)
			msg[9] = (uint8_t)((m->svc_timeout & 0x1f) << 3);
		else
			put16(msg + 10, m->reason); /* no ARI */
		break;
	case VFAB_CM_DREQ:
		put24(msg + 8, m->qpn);
		/* fall through */
	case VFAB_CM_RTU:
	case VFAB_CM_DREP:
		put32(msg, m->local_id);
		put32(msg + 4, m->remote_id);
		break;
	case VFAB_CM_SIDR_REQ:
		put32(msg, m->local_id);
		put16(msg + 4, DEFAULT_PKEY);
		put64(msg + 8, service_id(m->ps, m->dport));
		break;
	case VFAB_CM_SIDR_REP: /* the service the answering listener is bound to */
		put32(msg, m->remote_id);
		msg[4] = m->reason;
		put24(msg + 8, m->qpn);
		put64(msg + 12, service_id(m->ps, m->sport));
		put32(msg + 20, m->qkey);
		break;
	}
	if (has_cma_hdr(m->type)) {
		pd[0] = CMA_VERSION;
		pd[1] = (uint8_t)((m->family == AF_INET6 ? 6 : 4) << 4);
		put16(pd + 2, m->sport);
		cma_addr_put(pd + 4, m->saddr, m->family);
		cma_addr_put(pd + 20, m->daddr, m->family);
		pd += CMA_HDR;
		room -= CMA_HDR;
	}
	n = m->pd_len < room ? m->pd_len : room;
	memcpy(pd, m->pd, n);
	return VFAB_CM_MAD_BYTES;
}

/* The address of a GID: IPv4-mapped ones as cm_wire keeps IPv4 (first 4 bytes). */
static uint8_t gid_addr(uint8_t out[16], const uint8_t gid[16])
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	memset(out, 0, 16);
	if (!gid)
		return 0;
	if (!memcmp(gid, v4mapped, sizeof(v4mapped))) {
		memcpy(out, gid + 12, 4);
		return AF_INET;
	}
	memcpy(out, gid, 16);
	return AF_INET6;
}

int vfab_cm_mad_decode(struct vfab_cm_msg *m, const uint8_t *buf, size_t len,
		       const uint8_t sgid[16], const uint8_t dgid[16])
{
	struct cma c;
	const struct attr *a = check(buf, len, &c);
	const uint8_t *msg;
	int off, limit;

	if (!a)
		return -EBADMSG;
	msg = buf + MAD_HDR;
	memset(m, 0, sizeof(*m));
	m->type = a->type;
	m->cm_qpn = VFAB_CM_MAD_QPN;
	if (sgid)
		memcpy(m->sgid, sgid, 16);
	if (has_cma_hdr(a->type)) {
		m->family = c.family;
		m->sport = c.sport;
		m->dport = c.dport;
		m->ps = c.ps;
		memcpy(m->saddr, c.saddr, 16);
		memcpy(m->daddr, c.daddr, 16);
	} else {
		m->family = gid_addr(m->saddr, sgid);
		gid_addr(m->daddr, dgid);
	}
	switch (a->type) {
	case VFAB_CM_REQ:
		m->local_id = get32(msg);
		m->qpn = get24(msg + 32);
		m->resp_res = msg[35];
		m->init_depth = msg[39];
		m->flow_control = msg[43] & 1;
		m->psn = get24(msg + 44);
		m->retry = msg[47] & 7;
		m->mtu = msg[50] >> 4;
		m->rnr_retry = msg[50] & 7;
		m->srq = msg[51] >> 3 & 1;
		m->tclass = msg[92];
		break;
	case VFAB_CM_REP:
		m->local_id = get32(msg);
		m->remote_id = get32(msg + 4);
		m->qpn = get24(msg + 12);
		m->psn = get24(msg + 20);
		m->resp_res = msg[24];
		m->init_depth = msg[25];
		m->flow_control = msg[26] & 1;
		m->rnr_retry = msg[27] >> 5;
		m->srq = msg[27] >> 4 & 1;
		m->mtu = MTU_4096;
		break;
	case VFAB_CM_MRA:
	case VFAB_CM_REJ:
		m->local_id = get32(msg);
		m->remote_id = get32(msg + 4);
		/* A REJ of "other" acknowledges neither: mraed stays 0. */
		if (msg[8] >> 6 == MSG_REQ)
			m->mraed = VFAB_CM_REQ;
		else if (msg[8] >> 6 == MSG_REP)
			m->mraed = VFAB_CM_REP;
		if (a->type == VFAB_CM_MRA)
			m->svc_timeout = msg[9] >> 3;
		else
			m->reason =
			    (uint8_t)get16(msg + 10); /* the reasons vfab knows fit a byte */
		break;
	case VFAB_CM_DREQ:
		m->qpn = get24(msg + 8);
		/* fall through */
	case VFAB_CM_RTU:
	case VFAB_CM_DREP:
		m->local_id = get32(msg);
		m->remote_id = get32(msg + 4);
		break;
	case VFAB_CM_SIDR_REQ:
		m->local_id = get32(msg);
		break;
	case VFAB_CM_SIDR_REP:
		m->remote_id = get32(msg);
		m->reason = msg[4];
		m->qpn = get24(msg + 8);
		m->ps = (uint16_t)(get64(msg + 12) >> 16);
		m->sport = (uint16_t)get64(msg + 12);
		m->qkey = get32(msg + 20);
		break;
	}
	/* The whole field, as the kernel reports it (cm_wire.h's pd_len on receipt). */
	off = a->pd_off + (has_cma_hdr(a->type) ? CMA_HDR : 0);
	limit = vfab_cm_pd_limit(a->type);
	memcpy(m->pd, msg + off, (size_t)limit);
	m->pd_len = (uint8_t)limit;
	return 0;
}

int vfab_cm_mad_key(const uint8_t *buf, size_t len, struct vfab_cm_mad_key *k)
{
	struct cma c;
	const struct attr *a = check(buf, len, &c);
	const uint8_t *msg;

	if (!a)
		return -EBADMSG;
	msg = buf + MAD_HDR;
	memset(k, 0, sizeof(*k));
	k->type = a->type;
	switch (a->type) {
	case VFAB_CM_REQ:
	case VFAB_CM_SIDR_REQ: /* a REQ's local comm ID, a SIDR REQ's request ID */
		k->own_id = get32(msg);
		break;
	case VFAB_CM_SIDR_REP:
		k->for_id = get32(msg);
		break;
	default: /* MRA, REJ, REP, RTU, DREQ, DREP: local, then remote comm ID */
		k->own_id = get32(msg);
		k->for_id = get32(msg + 4);
		break;
	}
	if (has_cma_hdr(a->type)) {
		k->ps = c.ps;
		k->port = c.dport;
		k->family = c.family;
		memcpy(k->daddr, c.daddr, 16);
	}
	return 0;
}
