/* SPDX-License-Identifier: MIT */
#include "cm/cm_recv.h"

#include <string.h>

#include "cm/cm_addr.h"
#include "cm/cm_event.h"
#include "cm/cm_listen.h"
#include "cm/cm_local.h"
#include "cm/cm_log.h"
#include "cm/cm_msg.h"
#include "cm/cm_peer.h"
#include "cm/cm_window.h"

/* The passive ID of a REQ: addresses, path and the QP parameters the REQ carries. */
static struct vfab_cm_id *passive_id(struct vfab_cm_id *l, const struct vfab_cm_msg *m, int ud)
{
	struct vfab_cm_id *c = vfab_cm_id_new(l->file, 0, l->ps, l->qp_type);

	if (!c)
		return NULL;
	vfab_cm_sa_make(&c->src, m->family, m->daddr, m->dport);
	vfab_cm_sa_make(&c->dst, m->family, m->saddr, m->sport);
	if (vfab_cm_local_find((struct sockaddr *)&c->src, &c->loc)) {
		vfab_cm_id_free(c);
		return NULL;
	}
	c->have_dev = 1;
	c->route = 1;
	c->listener = l->handle;
	c->state = VFAB_CS_REQ_RCVD;
	vfab_cm_id_set_remote(c, m->local_id, (pid_t)m->pid);
	c->remote_cm_qpn = m->cm_qpn;
	c->remote_start = m->start;
	memcpy(c->remote_gid, m->sgid, 16);
	memcpy(c->dgid, m->sgid, 16);
	c->tos = m->tclass;
	c->qp = (struct vfab_cm_qp_params){
	    .ud = ud,
	    .connected = 1,
	    .port = c->loc.port,
	    .sgid_index = c->loc.gid_index,
	    .hop_limit = VFAB_CM_HOP_LIMIT,
	    .tclass = m->tclass,
	    .mtu = m->mtu < c->loc.mtu ? m->mtu : c->loc.mtu,
	    .qkey = VFAB_CM_UDP_QKEY,
	    .remote_qpn = m->qpn,
	    .remote_psn = m->psn,
	    .local_psn = vfab_cm_random24(),
	    .resp_res = m->init_depth,
	    .init_depth = m->resp_res,
	    .retry = m->retry,
	    .rnr_retry = m->rnr_retry,
	    .timeout = VFAB_CM_PACKET_LIFETIME + 2,
	};
	memcpy(c->qp.dgid, m->sgid, 16);
	return c;
}

static void on_req(struct vfab_cm_port *p, const struct vfab_cm_msg *m)
{
	int ud = m->type == VFAB_CM_SIDR_REQ;
	/* A REQ we already made an ID for (a resent one) */
	struct vfab_cm_id *l, *c = vfab_cm_id_by_remote(m->local_id, (pid_t)m->pid);

	if (c) { /* our answer was lost: say it again (cm_dup_req_handler) */
		if (c->state == VFAB_CS_REP_SENT)
			vfab_cm_send(c, &c->sent);
		else if (c->state == VFAB_CS_REQ_RCVD && c->mra)
			vfab_cm_send_mra(c, VFAB_CM_REQ);
		return;
	}
	l = vfab_cm_listener_find(m->ps, m->family, m->daddr, m->dport);
	if (!l) {
		vfab_cm_send_stray(p, m, ud ? VFAB_CM_SIDR_REP : VFAB_CM_REJ,
				   ud ? VFAB_CM_SIDR_UNSUPPORTED : VFAB_CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	c = passive_id(l, m, ud);
	if (!c)
		return;
	vfab_cm_msg_reserve(c);
	if (ud) {
		vfab_cm_ev_ud(c, l, l->uid, c->handle, VFAB_EV_CONNECT_REQUEST, m, m->qkey);
		return;
	}
	vfab_cm_ev_conn(l, l->uid, c->handle, VFAB_EV_CONNECT_REQUEST, 0, m);
	/* The request waits for the consumer: the kernel's rdma_cm says so (MRA). */
	vfab_cm_send_mra(c, VFAB_CM_REQ);
	vfab_cm_peer_watch(c);
}

static void on_mra(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id)
		return;
	if (m->mraed == VFAB_CM_REQ && id->state == VFAB_CS_REQ_SENT && !id->qp.ud) {
		id->mra = 1;
		id->remote_pid = (pid_t)m->pid;
		id->remote_start = m->start;
		vfab_cm_window_done(id);
		vfab_cm_retrack(id, VFAB_CM_MRA_TRY_MS);
	} else if (m->mraed == VFAB_CM_REP && id->state == VFAB_CS_REP_SENT &&
		   id->remote_id == m->local_id) {
		id->mra = 1;
		vfab_cm_retrack(id, VFAB_CM_MRA_TRY_MS);
	}
}

static void on_rep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id)
		return;
	if (id->remote_id == m->local_id && id->state == VFAB_CS_ESTABLISHED) {
		struct vfab_cm_msg rtu;

		vfab_cm_msg_init(id, &rtu, VFAB_CM_RTU); /* our RTU was lost */
		vfab_cm_send(id, &rtu);
		return;
	}
	if (id->remote_id == m->local_id && id->state == VFAB_CS_REP_RCVD) {
		vfab_cm_send_mra(id, VFAB_CM_REP); /* our MRA was lost */
		return;
	}
	if (id->state != VFAB_CS_REQ_SENT || id->qp.ud)
		return;
	vfab_cm_window_done(id);
	id->remote_id = m->local_id;
	id->remote_cm_qpn = m->cm_qpn;
	id->remote_pid = (pid_t)m->pid;
	id->remote_start = m->start;
	id->qp.connected = 1;
	id->qp.remote_qpn = m->qpn;
	id->qp.remote_psn = m->psn;
	id->qp.resp_res = m->init_depth;
	id->qp.init_depth = m->resp_res;
	id->qp.rnr_retry = m->rnr_retry;
	id->qp.mtu = m->mtu < id->qp.mtu ? m->mtu : id->qp.mtu;
	id->state = VFAB_CS_REP_RCVD;
	id->resend_ns = 0;
	id->mra = 0;
	vfab_cm_ev_conn(id, id->uid, id->handle, VFAB_EV_CONNECT_RESPONSE, 0, m);
	/* The consumer answers with its RTU: the kernel's rdma_cm says it will (MRA). */
	vfab_cm_send_mra(id, VFAB_CM_REP);
	vfab_cm_peer_watch(id);
}

static void on_sidr_rep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || id->state != VFAB_CS_REQ_SENT || !id->qp.ud)
		return;
	vfab_cm_window_done(id);
	id->state = VFAB_CS_ROUTE_RESOLVED;
	id->resend_ns = 0;
	if (m->reason) {
		vfab_cm_ev(id, VFAB_EV_UNREACHABLE, m->reason);
		return;
	}
	vfab_cm_ev_ud(id, id, id->uid, id->handle, VFAB_EV_ESTABLISHED, m, m->qkey);
}

static void on_rtu(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id || id->state != VFAB_CS_REP_SENT || id->remote_id != m->local_id)
		return;
	id->state = VFAB_CS_ESTABLISHED;
	id->resend_ns = 0;
	vfab_cm_peer_watch(id);
	vfab_cm_ev(id, VFAB_EV_ESTABLISHED, 0);
}

static void on_rej(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (!id)
		return;
	switch (id->state) {
	case VFAB_CS_REQ_SENT: /* the REJ of a REQ comes before we know the peer's ID */
		if (id->qp.ud)
			return;
		break;
	case VFAB_CS_REQ_RCVD: /* the active side gave up */
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
		if (id->remote_id != m->local_id)
			return;
		break;
	default:
		return;
	}
	vfab_cm_window_done(id);
	id->state = VFAB_CS_ROUTE_RESOLVED;
	id->resend_ns = 0;
	vfab_cm_ev_conn(id, id->uid, id->handle, VFAB_EV_REJECTED, m->reason, m);
}

static void on_dreq(struct vfab_cm_port *p, const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);
	struct vfab_cm_msg drep;

	if (!id || id->remote_id != m->local_id) {
		vfab_cm_send_stray(p, m, VFAB_CM_DREP, 0); /* gone already: still answer */
		return;
	}
	vfab_cm_msg_init(id, &drep, VFAB_CM_DREP);
	vfab_cm_send(id, &drep);
	if (id->state == VFAB_CS_ESTABLISHED || id->state == VFAB_CS_REP_SENT ||
	    id->state == VFAB_CS_DREQ_SENT)
		vfab_cm_ev_disconnected(id);
}

static void on_drep(const struct vfab_cm_msg *m)
{
	struct vfab_cm_id *id = vfab_cm_id_by_local(m->remote_id);

	if (id && id->state == VFAB_CS_DREQ_SENT)
		vfab_cm_ev_disconnected(id);
}

void vfab_cm_recv(struct vfab_cm_port *p, const struct vfab_cm_msg *m)
{
	vfab_cm_dbg("recv %s from pid %u ids %08x->%08x ps %04x port %u->%u reason %u",
		    vfab_cm_msg_name(m->type), m->pid, m->local_id, m->remote_id, m->ps, m->sport,
		    m->dport, m->reason);
	switch (m->type) {
	case VFAB_CM_REQ:
	case VFAB_CM_SIDR_REQ:
		on_req(p, m);
		break;
	case VFAB_CM_MRA:
		on_mra(m);
		break;
	case VFAB_CM_REP:
		on_rep(m);
		break;
	case VFAB_CM_SIDR_REP:
		on_sidr_rep(m);
		break;
	case VFAB_CM_RTU:
		on_rtu(m);
		break;
	case VFAB_CM_REJ:
		on_rej(m);
		break;
	case VFAB_CM_DREQ:
		on_dreq(p, m);
		break;
	case VFAB_CM_DREP:
		on_drep(m);
		break;
	default:
		break;
	}
}
