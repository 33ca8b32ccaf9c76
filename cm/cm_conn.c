/* SPDX-License-Identifier: MIT */
#include "cm/cm_conn.h"

#include <errno.h>
#include <string.h>

#include "base/clock.h"
#include "cm/cm_agent.h"
#include "cm/cm_event.h"
#include "cm/cm_gone.h"
#include "cm/cm_listen.h"
#include "cm/cm_log.h"
#include "cm/cm_msg.h"
#include "cm/cm_peer.h"
#include "cm/cm_window.h"

#define IB_SIDR_REJECT 2

int vfab_cm_connect(struct vfab_cm_id *id, const struct rdma_ucm_conn_param *cp)
{
	int ud = id->qp_type == IBV_QPT_UD;
	int type = ud ? VFAB_CM_SIDR_REQ : VFAB_CM_REQ;
	struct vfab_cm_msg m;
	uint64_t now;

	if (id->state != VFAB_CS_ROUTE_RESOLVED)
		return -EINVAL;
	if (cp->private_data_len > vfab_cm_pd_limit(type))
		return -EINVAL;
	id->qpn = cp->qp_num;
	id->qp = (struct vfab_cm_qp_params){
	    .ud = ud,
	    .connected = 0,
	    .port = id->loc.port,
	    .sgid_index = id->loc.gid_index,
	    .hop_limit = VFAB_CM_HOP_LIMIT,
	    .tclass = id->tos,
	    .mtu = id->loc.mtu,
	    .qkey = VFAB_CM_UDP_QKEY,
	    .local_psn = vfab_cm_random24(),
	    .resp_res = cp->responder_resources,
	    .init_depth = cp->initiator_depth,
	    .retry = cp->retry_count & 7,
	    .rnr_retry = cp->rnr_retry_count & 7,
	    .timeout = id->ack_timeout ? id->ack_timeout : VFAB_CM_PACKET_LIFETIME + 2,
	};
	memcpy(id->qp.dgid, id->dgid, 16);
	vfab_cm_msg_init(id, &m, type);
	m.qpn = cp->qp_num;
	m.psn = id->qp.local_psn;
	m.qkey = VFAB_CM_UDP_QKEY;
	m.mtu = (uint8_t)id->loc.mtu;
	m.resp_res = cp->responder_resources;
	m.init_depth = cp->initiator_depth;
	m.retry = cp->retry_count & 7;
	m.rnr_retry = cp->rnr_retry_count & 7;
	m.srq = cp->srq;
	m.flow_control = cp->flow_control;
	m.ece_vendor = id->ece_vendor;
	m.ece_options = id->ece_options;
	m.pd_len = cp->private_data_len;
	memcpy(m.pd, cp->private_data, cp->private_data_len);
	/* The answers (MRA, REP or REJ) must find receives posted. */
	vfab_cm_msg_reserve(id);
	/*
	 * The answer (MRA and REP, or REJ when nobody listens) always comes as
	 * an event, at the earliest after the time a REQ takes to reach the
	 * peer's CM.
	 */
	id->state = VFAB_CS_REQ_SENT;
	id->sent = m;
	id->remote_cm_qpn = 0;
	id->remote_pid = 0;
	id->mra = 0;
	id->retries = VFAB_CM_RETRIES;
	now = vfab_mono_ns();
	id->req_deadline_ns = now + VFAB_CM_REQ_ARRIVAL_NS;
	vfab_cm_window_req(id, now);
	return 0;
}

static int accept_rep(struct vfab_cm_id *id, const struct rdma_ucm_conn_param *cp)
{
	struct vfab_cm_msg m;

	if (cp->private_data_len > vfab_cm_pd_limit(VFAB_CM_REP))
		return -EINVAL;
	id->qpn = cp->qp_num;
	id->qp.resp_res = cp->responder_resources;
	id->qp.init_depth = cp->initiator_depth;
	id->qp.rnr_retry = cp->rnr_retry_count & 7;
	vfab_cm_msg_init(id, &m, VFAB_CM_REP);
	m.qpn = cp->qp_num;
	m.psn = id->qp.local_psn;
	m.mtu = (uint8_t)id->qp.mtu;
	m.resp_res = cp->responder_resources;
	m.init_depth = cp->initiator_depth;
	m.rnr_retry = cp->rnr_retry_count & 7;
	m.srq = cp->srq;
	m.flow_control = cp->flow_control;
	m.ece_vendor = id->ece_vendor;
	m.ece_options = id->ece_options;
	m.pd_len = cp->private_data_len;
	memcpy(m.pd, cp->private_data, cp->private_data_len);
	id->state = VFAB_CS_REP_SENT;
	id->mra = 0;
	return vfab_cm_send_tracked(id, &m, VFAB_CM_TRY_MS);
}

int vfab_cm_accept(struct vfab_cm_id *id, uint64_t uid, const struct rdma_ucm_conn_param *cp)
{
	struct vfab_cm_msg m;

	if (id->state == VFAB_CS_REP_RCVD) { /* active side: the RTU */
		vfab_cm_msg_init(id, &m, VFAB_CM_RTU);
		id->state = VFAB_CS_ESTABLISHED;
		vfab_cm_peer_watch(id);
		return vfab_cm_send(id, &m);
	}
	if (id->state != VFAB_CS_REQ_RCVD)
		return -EINVAL;
	if (uid)
		id->uid = uid;
	if (!id->qp.ud)
		return accept_rep(id, cp);
	vfab_cm_msg_init(id, &m, VFAB_CM_SIDR_REP);
	m.qpn = cp->qp_num;
	m.qkey = cp->qkey ? cp->qkey : VFAB_CM_UDP_QKEY;
	m.pd_len = cp->private_data_len;
	memcpy(m.pd, cp->private_data, cp->private_data_len);
	id->state = VFAB_CS_ESTABLISHED;
	return vfab_cm_send(id, &m);
}

int vfab_cm_reject(struct vfab_cm_id *id, uint8_t reason, const uint8_t *pd, uint8_t len)
{
	struct vfab_cm_msg m;
	int type = id->qp.ud ? VFAB_CM_SIDR_REP : VFAB_CM_REJ;

	if (id->state != VFAB_CS_REQ_RCVD)
		return -EINVAL;
	if (len > vfab_cm_pd_limit(type))
		return -EINVAL;
	vfab_cm_msg_init(id, &m, type);
	m.reason = id->qp.ud ? IB_SIDR_REJECT : (reason ? reason : VFAB_CM_REJ_CONSUMER_DEFINED);
	m.pd_len = len;
	memcpy(m.pd, pd, len);
	id->state = VFAB_CS_IDLE;
	return vfab_cm_send(id, &m);
}

int vfab_cm_disconnect(struct vfab_cm_id *id)
{
	struct vfab_cm_msg m;

	switch (id->state) {
	case VFAB_CS_ESTABLISHED:
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
		break;
	case VFAB_CS_DREQ_SENT:
	case VFAB_CS_DISCONNECTED:
		return 0;
	default:
		return -EINVAL;
	}
	if (id->qp.ud) /* SIDR leaves nothing to disconnect (ib_send_cm_dreq refuses) */
		return 0;
	id->state = VFAB_CS_DREQ_SENT;
	/* A peer known gone: what its kernel would answer (a DREP), at once. */
	if (vfab_cm_gone_check(id)) {
		vfab_cm_gone(id);
		return 0;
	}
	vfab_cm_msg_init(id, &m, VFAB_CM_DREQ);
	return vfab_cm_send_tracked(id, &m, VFAB_CM_TRY_MS);
}

int vfab_cm_notify(struct vfab_cm_id *id, int event)
{
	if (event == IBV_EVENT_COMM_EST && id->state == VFAB_CS_REP_SENT) {
		id->state = VFAB_CS_ESTABLISHED;
		id->resend_ns = 0;
		vfab_cm_peer_watch(id);
		vfab_cm_ev(id, VFAB_EV_ESTABLISHED, 0);
	}
	return 0;
}

void vfab_cm_destroy(struct vfab_cm_id *id)
{
	struct vfab_cm_msg m;

	switch (id->state) {
	case VFAB_CS_ESTABLISHED:
		if (id->qp.ud)
			break;
		vfab_cm_msg_init(id, &m, VFAB_CM_DREQ);
		vfab_cm_send(id, &m);
		break;
	case VFAB_CS_REQ_SENT:
	case VFAB_CS_REQ_RCVD:
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
		/* A REQ still waiting for its window never left: nobody to tell. */
		if (id->qp.ud || !id->remote_cm_qpn || id->win == VFAB_WIN_WAITING)
			break;
		vfab_cm_msg_init(id, &m, VFAB_CM_REJ);
		m.reason = id->state == VFAB_CS_REQ_SENT ? VFAB_CM_REJ_TIMEOUT
							 : VFAB_CM_REJ_CONSUMER_DEFINED;
		/* What it rejects, as a MAD says: the peer's REP, once one came. */
		if (id->state == VFAB_CS_REP_RCVD)
			m.mraed = VFAB_CM_REP;
		vfab_cm_send(id, &m);
		break;
	default:
		break;
	}
	vfab_cm_unlisten(id);
	vfab_cm_dbg("destroy id %u state %d", id->handle, id->state);
	vfab_cm_id_free(id);
}

void vfab_cm_conn_forget(struct vfab_cm_id *id)
{
	vfab_cm_window_done(id);
	vfab_cm_msg_release(id);
}
