/* SPDX-License-Identifier: MIT */
#include "cm/cm_event.h"

#include <string.h>

#include "base/clock.h"
#include "cm/cm_agent.h"

#define NS_PER_MS 1000000ull

void vfab_cm_ev_conn(struct vfab_cm_id *owner, uint64_t uid, uint32_t handle, int ev, int status,
		     const struct vfab_cm_msg *m)
{
	struct rdma_ucm_event_resp r;

	/*
	 * A request's ID has no uid until the consumer accepts it: the kernel's
	 * ucma drops its events until then (but ESTABLISHED), and accept fails.
	 */
	if (!uid && ev != VFAB_EV_ESTABLISHED && ev != VFAB_EV_DEVICE_REMOVAL)
		return;
	memset(&r, 0, sizeof(r));
	r.uid = uid;
	r.id = handle;
	r.event = (uint32_t)ev;
	r.status = (uint32_t)status;
	if (m) {
		int len = vfab_cm_pd_reported(m->type);

		r.param.conn.private_data_len = (uint8_t)len;
		memcpy(r.param.conn.private_data, m->pd, (size_t)len);
		r.param.conn.qp_num = m->qpn;
		r.param.conn.srq = m->srq;
		/* What the peer offers, seen from here: its depth is our resources. */
		r.param.conn.responder_resources = m->init_depth;
		r.param.conn.initiator_depth = m->resp_res;
		r.param.conn.flow_control = m->flow_control;
		r.param.conn.retry_count = m->retry;
		r.param.conn.rnr_retry_count = m->rnr_retry;
		r.ece.vendor_id = m->ece_vendor;
		r.ece.attr_mod = m->ece_options;
	}
	vfab_cm_event_push(owner, &r);
}

void vfab_cm_ev(struct vfab_cm_id *id, int ev, int status)
{
	vfab_cm_ev_conn(id, id->uid, id->handle, ev, status, NULL);
}

void vfab_cm_ev_ud(struct vfab_cm_id *id, struct vfab_cm_id *owner, uint64_t uid, uint32_t handle,
		   int ev, const struct vfab_cm_msg *m, uint32_t qkey)
{
	struct rdma_ucm_event_resp r;
	struct ib_uverbs_ah_attr *ah = &r.param.ud.ah_attr;
	int len = vfab_cm_pd_reported(m->type);

	memset(&r, 0, sizeof(r));
	r.uid = uid;
	r.id = handle;
	r.event = (uint32_t)ev;
	memcpy(ah->grh.dgid, m->sgid, 16);
	ah->grh.sgid_index = id->loc.gid_index;
	ah->grh.hop_limit = VFAB_CM_HOP_LIMIT;
	ah->grh.traffic_class = id->tos;
	ah->is_global = 1;
	ah->port_num = id->loc.port;
	r.param.ud.qp_num = m->qpn;
	r.param.ud.qkey = qkey;
	r.param.ud.private_data_len = (uint8_t)len;
	memcpy(r.param.ud.private_data, m->pd, (size_t)len);
	vfab_cm_event_push(owner, &r);
}

void vfab_cm_ev_disconnected(struct vfab_cm_id *id)
{
	id->state = VFAB_CS_DISCONNECTED;
	id->resend_ns = 0;
	id->timewait_ns = vfab_mono_ns() + VFAB_CM_TIMEWAIT_MS * NS_PER_MS;
	vfab_cm_agent_arm(id->timewait_ns);
	vfab_cm_ev(id, VFAB_EV_DISCONNECTED, 0);
}
