/* SPDX-License-Identifier: MIT */
#include "cm/cm_msg.h"

#include <errno.h>
#include <string.h>

#include "base/clock.h"
#include "cm/cm_addr.h"
#include "cm/cm_agent.h"
#include "cm/cm_local.h"
#include "cm/cm_log.h"

static uint64_t resends;

static struct vfab_cm_port *port_of(const struct vfab_cm_id *id)
{
	return id->have_dev ? vfab_cm_agent_port(id->loc.dev, id->loc.port) : NULL;
}

void vfab_cm_msg_init(const struct vfab_cm_id *id, struct vfab_cm_msg *m, int type)
{
	struct vfab_cm_port *p = port_of(id);

	memset(m, 0, sizeof(*m));
	m->type = (uint8_t)type;
	m->local_id = id->local_id;
	m->remote_id = id->remote_id;
	m->cm_qpn = p ? p->qp->qp_num : 0;
	m->pid = (uint32_t)vfab_cm_agent_pid();
	m->start = vfab_cm_agent_start_time();
	m->ps = id->ps;
	m->family = (uint8_t)id->src.ss_family;
	m->sport = vfab_cm_sa_port(&id->src);
	m->dport = vfab_cm_sa_port(&id->dst);
	vfab_cm_sa_bytes(&id->src, m->saddr);
	vfab_cm_sa_bytes(&id->dst, m->daddr);
	memcpy(m->sgid, id->loc.gid, 16);
	m->tclass = id->tos;
}

int vfab_cm_send(struct vfab_cm_id *id, const struct vfab_cm_msg *m)
{
	struct vfab_cm_port *p = port_of(id);
	int ret = p ? vfab_cm_port_send(p, id->loc.gid_index, id->remote_gid, id->remote_cm_qpn, m)
		    : -ENODEV;

	vfab_cm_dbg("send %s to CM QP %u ids %08x->%08x port %u->%u: %d", vfab_cm_msg_name(m->type),
		    id->remote_cm_qpn, m->local_id, m->remote_id, m->sport, m->dport, ret);
	return ret;
}

void vfab_cm_retrack(struct vfab_cm_id *id, unsigned try_ms)
{
	id->resend_ns = vfab_mono_ns() + try_ms * VFAB_CM_NS_PER_MS;
	vfab_cm_agent_arm(id->resend_ns);
}

int vfab_cm_send_tracked(struct vfab_cm_id *id, const struct vfab_cm_msg *m, unsigned try_ms)
{
	id->sent = *m;
	id->retries = VFAB_CM_RETRIES;
	vfab_cm_retrack(id, try_ms);
	return vfab_cm_send(id, m);
}

int vfab_cm_resend(struct vfab_cm_id *id, uint64_t now)
{
	if (id->retries-- <= 0) {
		id->resend_ns = 0;
		return 0;
	}
	resends++;
	vfab_cm_log_resend("resend %s (no answer in time; %d tries left, %llu resends in all)",
			   vfab_cm_msg_name(id->sent.type), id->retries,
			   (unsigned long long)resends);
	id->resend_ns = now + VFAB_CM_TRY_MS * VFAB_CM_NS_PER_MS;
	vfab_cm_agent_arm(id->resend_ns);
	vfab_cm_send(id, &id->sent);
	return 1;
}

uint64_t vfab_cm_msg_resends(void)
{
	return resends;
}

void vfab_cm_send_mra(struct vfab_cm_id *id, int mraed)
{
	struct vfab_cm_msg m;

	vfab_cm_msg_init(id, &m, VFAB_CM_MRA);
	m.mraed = (uint8_t)mraed;
	m.svc_timeout = VFAB_CM_MRA_TIMEOUT;
	id->mra = 1;
	vfab_cm_send(id, &m);
}

void vfab_cm_send_stray(struct vfab_cm_port *p, const struct vfab_cm_msg *in, int type,
			uint8_t reason)
{
	struct vfab_cm_local loc;
	struct vfab_cm_msg m;
	struct sockaddr_storage d;

	vfab_cm_sa_make(&d, in->family, in->daddr, 0);
	if (vfab_cm_local_find((struct sockaddr *)&d, &loc))
		return;
	memset(&m, 0, sizeof(m));
	m.type = (uint8_t)type;
	m.reason = reason;
	m.remote_id = in->local_id;
	m.cm_qpn = p->qp->qp_num;
	m.pid = (uint32_t)vfab_cm_agent_pid();
	m.start = vfab_cm_agent_start_time();
	m.family = in->family;
	memcpy(m.sgid, loc.gid, 16);
	vfab_cm_dbg("send %s to CM QP %u for a stray %s", vfab_cm_msg_name(type), in->cm_qpn,
		    vfab_cm_msg_name(in->type));
	vfab_cm_port_send(p, loc.gid_index, in->sgid, in->cm_qpn, &m);
}

int vfab_cm_msg_reserve(struct vfab_cm_id *id)
{
	struct vfab_cm_port *p = port_of(id);

	if (id->reserved || !p)
		return p ? 0 : -ENODEV;
	id->reserved = VFAB_CM_RECVS_PER_ID;
	return vfab_cm_port_reserve(p, id->reserved);
}

void vfab_cm_msg_release(struct vfab_cm_id *id)
{
	struct vfab_cm_port *p = id->reserved ? port_of(id) : NULL;

	if (p)
		vfab_cm_port_reserve(p, -id->reserved);
	id->reserved = 0;
}
