/* SPDX-License-Identifier: MIT */
/*
 * CM MADs of vfab's CM messages (tools/capture_cm.h). Offsets and bit
 * fields are the IBA's (12.6, the CM message formats; 13.4.3 the MAD
 * header), as the kernel's cm_msgs.h lays them out.
 */
#include "tools/capture_cm.h"
#include "cm/cm_path.h"

#include <string.h>

enum {
	MAD_CLASS_CM = 0x07,
	MAD_METHOD_SEND = 0x03,
	CM_RESPONSE_TIMEOUT = 20, /* 4.096 us * 2^20, what rdma_cm asks for */
	CM_MAX_RETRIES = 15,
	ACK_TIMEOUT = 18,
	HOP_LIMIT = 64,
};

static const uint16_t attr_id[VFAB_CM_MSG_TYPES] = {
    [VFAB_CM_REQ] = 0x0010,  [VFAB_CM_MRA] = 0x0011,	  [VFAB_CM_REJ] = 0x0012,
    [VFAB_CM_REP] = 0x0013,  [VFAB_CM_RTU] = 0x0014,	  [VFAB_CM_DREQ] = 0x0015,
    [VFAB_CM_DREP] = 0x0016, [VFAB_CM_SIDR_REQ] = 0x0017, [VFAB_CM_SIDR_REP] = 0x0018,
};

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, (uint16_t)(v >> 16));
	be16(p + 2, (uint16_t)v);
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

/* A 24-bit field and the byte after it in one big-endian word. */
static void be24_8(uint8_t *p, uint32_t v24, uint8_t low)
{
	be32(p, (v24 & 0xffffff) << 8 | low);
}

/* Private data: what fits of the consumer's. */
static void put_pd(uint8_t *p, size_t room, const struct vfab_cm_msg *m)
{
	memcpy(p, m->pd, m->pd_len < room ? m->pd_len : room);
}

/*
 * rdma_cm's header in front of a REQ's (or SIDR REQ's) private data: version
 * 0, the IP version, the source port, both addresses (IPv4 in the last 4
 * bytes of 16), then the consumer's private data.
 */
static void put_cma_hdr(uint8_t *p, size_t room, const struct vfab_cm_msg *m)
{
	bool v6 = m->family == 10; /* AF_INET6 */

	p[0] = 0x00;
	p[1] = (uint8_t)((v6 ? 6 : 4) << 4);
	be16(p + 2, m->sport);
	if (v6) {
		memcpy(p + 4, m->saddr, 16);
		memcpy(p + 20, m->daddr, 16);
	} else {
		memcpy(p + 16, m->saddr, 4);
		memcpy(p + 32, m->daddr, 4);
	}
	put_pd(p + 36, room - 36, m);
}

static uint64_t service_id(const struct vfab_cm_msg *m)
{
	/* The kernel's cma_get_service_id: port space << 16 | port. */
	return (uint64_t)m->ps << 16 | m->dport;
}

bool vfab_capture_cm_decode(uint32_t qkey, const uint8_t *payload, uint32_t len,
			    struct vfab_cm_msg *m)
{
	return qkey == VFAB_CM_QP1_QKEY && len == VFAB_CM_MSG_BYTES &&
	       !vfab_cm_msg_decode(m, payload, len);
}

int vfab_capture_cm_mad(const struct vfab_cm_msg *m, uint64_t guid, const uint8_t dgid[16],
			uint8_t mad[VFAB_MAD_BYTES])
{
	uint8_t *d = mad + 24; /* the message, after the MAD header */

	if (m->type == 0 || m->type >= VFAB_CM_MSG_TYPES || !attr_id[m->type])
		return 0;
	memset(mad, 0, VFAB_MAD_BYTES);
	mad[0] = 1; /* base version */
	mad[1] = MAD_CLASS_CM;
	mad[2] = 2; /* class version */
	mad[3] = MAD_METHOD_SEND;
	be64(mad + 8, (uint64_t)m->pid << 32 | m->local_id); /* transaction ID */
	be16(mad + 16, attr_id[m->type]);
	switch (m->type) {
	case VFAB_CM_REQ:
		be32(d, m->local_id);
		be64(d + 8, service_id(m));
		be64(d + 16, guid);
		be32(d + 28, m->qkey);
		be24_8(d + 32, m->qpn, m->resp_res);
		be24_8(d + 36, 0, m->init_depth);
		/* Remote CM response timeout, transport RC (0), end-to-end flow control. */
		be24_8(d + 40, 0, (uint8_t)(CM_RESPONSE_TIMEOUT << 3 | (m->flow_control & 1)));
		be24_8(d + 44, m->psn, (uint8_t)(CM_RESPONSE_TIMEOUT << 3 | (m->retry & 7)));
		be16(d + 48, 0xffff);
		d[50] = (uint8_t)((m->mtu & 15) << 4 | (m->rnr_retry & 7));
		d[51] = (uint8_t)(CM_MAX_RETRIES << 4 | (m->srq & 1) << 3);
		memcpy(d + 56, m->sgid, 16);
		memcpy(d + 72, dgid, 16);
		d[92] = m->tclass;
		d[93] = HOP_LIMIT;
		d[94] = 1 << 3; /* SL 0, subnet local */
		d[95] = ACK_TIMEOUT << 3;
		put_cma_hdr(d + 140, 92, m);
		break;
	case VFAB_CM_REP:
		be32(d, m->local_id);
		be32(d + 4, m->remote_id);
		be32(d + 8, m->qkey);
		be24_8(d + 12, m->qpn, 0);
		be24_8(d + 20, m->psn, 0);
		d[24] = m->resp_res;
		d[25] = m->init_depth;
		d[26] = (uint8_t)(m->flow_control & 1);
		d[27] = (uint8_t)((m->rnr_retry & 7) << 5 | (m->srq & 1) << 4);
		be64(d + 28, guid);
		put_pd(d + 36, 196, m);
		break;
	case VFAB_CM_RTU:
	case VFAB_CM_DREP:
		be32(d, m->local_id);
		be32(d + 4, m->remote_id);
		put_pd(d + 8, 224, m);
		break;
	case VFAB_CM_REJ:
		be32(d, m->local_id);
		be32(d + 4, m->remote_id);
		/* What it rejects: the REQ when nothing answered it yet, else the REP. */
		d[8] = (uint8_t)((m->remote_id ? 1 : 0) << 6);
		be16(d + 10, m->reason);
		put_pd(d + 84, 148, m);
		break;
	case VFAB_CM_DREQ:
		be32(d, m->local_id);
		be32(d + 4, m->remote_id);
		be24_8(d + 8, m->qpn, 0);
		put_pd(d + 12, 220, m);
		break;
	case VFAB_CM_MRA:
		be32(d, m->local_id);
		be32(d + 4, m->remote_id);
		d[8] = (uint8_t)((m->mraed == VFAB_CM_REP ? 1 : 0) << 6);
		d[9] = (uint8_t)((m->svc_timeout & 31) << 3);
		put_pd(d + 10, 222, m);
		break;
	case VFAB_CM_SIDR_REQ:
		be32(d, m->local_id);
		be16(d + 4, 0xffff);
		be64(d + 8, service_id(m));
		put_cma_hdr(d + 16, 216, m);
		break;
	case VFAB_CM_SIDR_REP:
		be32(d, m->remote_id);
		d[4] = m->reason;
		be24_8(d + 8, m->qpn, 0);
		be64(d + 12, service_id(m));
		be32(d + 20, m->qkey);
		put_pd(d + 96, 136, m);
		break;
	default:
		return 0;
	}
	return VFAB_MAD_BYTES;
}
