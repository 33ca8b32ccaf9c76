/* SPDX-License-Identifier: MIT */
#include "cm/cm_wire.h"

#include <errno.h>
#include <string.h>

/* Private data of the IB CM messages (IBA 12.6) and rdma_cm's header in REQs. */
#define REQ_PD 92
#define REP_PD 196
#define REJ_PD 148
#define DREQ_PD 220
#define DREP_PD 224
#define SIDR_REQ_PD 216
#define SIDR_REP_PD 136
#define RTU_PD 224
#define MRA_PD 222
#define CMA_HDR 36

static const struct {
	const char *name;
	int limit, reported;
} kinds[VFAB_CM_MSG_TYPES] = {
    [VFAB_CM_REQ] = {"REQ", REQ_PD - CMA_HDR, REQ_PD - CMA_HDR},
    [VFAB_CM_REP] = {"REP", REP_PD, REP_PD},
    [VFAB_CM_RTU] = {"RTU", RTU_PD, 0},
    [VFAB_CM_REJ] = {"REJ", REJ_PD, REJ_PD},
    [VFAB_CM_DREQ] = {"DREQ", DREQ_PD, 0},
    [VFAB_CM_DREP] = {"DREP", DREP_PD, 0},
    [VFAB_CM_SIDR_REQ] = {"SIDR_REQ", SIDR_REQ_PD - CMA_HDR, SIDR_REQ_PD - CMA_HDR},
    [VFAB_CM_SIDR_REP] = {"SIDR_REP", SIDR_REP_PD, SIDR_REP_PD},
    [VFAB_CM_MRA] = {"MRA", MRA_PD, 0},
};

static int valid_type(int type)
{
	return type > 0 && type < VFAB_CM_MSG_TYPES;
}

int vfab_cm_pd_limit(int type)
{
	return valid_type(type) ? kinds[type].limit : 0;
}

int vfab_cm_pd_reported(int type)
{
	return valid_type(type) ? kinds[type].reported : 0;
}

const char *vfab_cm_msg_name(int type)
{
	return valid_type(type) ? kinds[type].name : "?";
}

static uint8_t *put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

static uint8_t *put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
	return p + 2;
}

static const uint8_t *get32(const uint8_t *p, uint32_t *v)
{
	*v = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return p + 4;
}

static const uint8_t *get16(const uint8_t *p, uint16_t *v)
{
	*v = (uint16_t)(p[0] << 8 | p[1]);
	return p + 2;
}

static uint8_t *put64(uint8_t *p, uint64_t v)
{
	return put32(put32(p, (uint32_t)(v >> 32)), (uint32_t)v);
}

static const uint8_t *get64(const uint8_t *p, uint64_t *v)
{
	uint32_t hi, lo;

	p = get32(get32(p, &hi), &lo);
	*v = (uint64_t)hi << 32 | lo;
	return p;
}

/* Byte fields first, then 32-, 64- and 16-bit, addresses and private data (network order). */
size_t vfab_cm_msg_encode(const struct vfab_cm_msg *m, uint8_t *buf, size_t len)
{
	uint8_t *p = buf;

	if (len < VFAB_CM_MSG_BYTES)
		return 0;
	memset(buf, 0, VFAB_CM_MSG_BYTES);
	*p++ = m->type;
	*p++ = m->reason;
	*p++ = m->pd_len;
	*p++ = m->mtu;
	*p++ = m->resp_res;
	*p++ = m->init_depth;
	*p++ = m->retry;
	*p++ = m->rnr_retry;
	*p++ = m->srq;
	*p++ = m->flow_control;
	*p++ = m->family;
	*p++ = m->tclass;
	*p++ = m->mraed;
	*p++ = m->svc_timeout;
	p += 2;
	p = put32(p, m->local_id);
	p = put32(p, m->remote_id);
	p = put32(p, m->qpn);
	p = put32(p, m->psn);
	p = put32(p, m->qkey);
	p = put32(p, m->cm_qpn);
	p = put32(p, m->pid);
	p = put32(p, m->ece_vendor);
	p = put32(p, m->ece_options);
	p = put64(p, m->start);
	p = put16(p, m->ps);
	p = put16(p, m->sport);
	p = put16(p, m->dport);
	p += 2;
	memcpy(p, m->saddr, 16);
	memcpy(p + 16, m->daddr, 16);
	memcpy(p + 32, m->sgid, 16);
	p += 48;
	memcpy(p, m->pd, VFAB_CM_PD_MAX);
	p += VFAB_CM_PD_MAX;
	return (size_t)(p - buf);
}

int vfab_cm_msg_decode(struct vfab_cm_msg *m, const uint8_t *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < VFAB_CM_MSG_BYTES)
		return -EBADMSG;
	memset(m, 0, sizeof(*m));
	m->type = *p++;
	m->reason = *p++;
	m->pd_len = *p++;
	m->mtu = *p++;
	m->resp_res = *p++;
	m->init_depth = *p++;
	m->retry = *p++;
	m->rnr_retry = *p++;
	m->srq = *p++;
	m->flow_control = *p++;
	m->family = *p++;
	m->tclass = *p++;
	m->mraed = *p++;
	m->svc_timeout = *p++;
	p += 2;
	p = get32(p, &m->local_id);
	p = get32(p, &m->remote_id);
	p = get32(p, &m->qpn);
	p = get32(p, &m->psn);
	p = get32(p, &m->qkey);
	p = get32(p, &m->cm_qpn);
	p = get32(p, &m->pid);
	p = get32(p, &m->ece_vendor);
	p = get32(p, &m->ece_options);
	p = get64(p, &m->start);
	p = get16(p, &m->ps);
	p = get16(p, &m->sport);
	p = get16(p, &m->dport);
	p += 2;
	memcpy(m->saddr, p, 16);
	memcpy(m->daddr, p + 16, 16);
	memcpy(m->sgid, p + 32, 16);
	p += 48;
	memcpy(m->pd, p, VFAB_CM_PD_MAX);
	if (!valid_type(m->type) || m->pd_len > kinds[m->type].limit)
		return -EBADMSG;
	return 0;
}
