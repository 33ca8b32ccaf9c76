/* SPDX-License-Identifier: MIT */
#include "cm/cm_timer.h"

#include <errno.h>

#include "cm/cm_event.h"
#include "cm/cm_gone.h"
#include "cm/cm_msg.h"
#include "cm/cm_peer.h"
#include "cm/cm_window.h"

/* A try ran out: resend, or give up as the kernel's CM does. */
static void expire(struct vfab_cm_id *id, uint64_t now)
{
	if (vfab_cm_resend(id, now))
		return;
	switch (id->state) {
	case VFAB_CS_REQ_SENT:
		vfab_cm_window_done(id);
		/* fall through */
	case VFAB_CS_REP_SENT:
		id->state = VFAB_CS_ROUTE_RESOLVED;
		vfab_cm_ev(id, VFAB_EV_UNREACHABLE, -ETIMEDOUT);
		break;
	case VFAB_CS_DREQ_SENT:
		vfab_cm_ev_disconnected(id);
		break;
	default:
		break;
	}
}

static int resends_in(const struct vfab_cm_id *id)
{
	return id->state == VFAB_CS_REQ_SENT || id->state == VFAB_CS_REP_SENT ||
	       id->state == VFAB_CS_DREQ_SENT;
}

/* Whether id waits on a peer process whose death its kernel would answer. */
static int watched(const struct vfab_cm_id *id)
{
	if (!id->remote_pid)
		return 0;
	if (id->qp.ud) /* SIDR: only the requester waits */
		return id->state == VFAB_CS_REQ_SENT;
	switch (id->state) {
	case VFAB_CS_REQ_SENT:
	case VFAB_CS_REQ_RCVD:
	case VFAB_CS_REP_SENT:
	case VFAB_CS_REP_RCVD:
	case VFAB_CS_ESTABLISHED:
	case VFAB_CS_DREQ_SENT:
		return 1;
	default:
		return 0;
	}
}

static void earliest(uint64_t *next, uint64_t t)
{
	if (t && (!*next || t < *next))
		*next = t;
}

uint64_t vfab_cm_timers(uint64_t now)
{
	struct vfab_cm_id *id = NULL;
	uint64_t next = 0;

	while ((id = vfab_cm_id_next(id)) != NULL) {
		if (resends_in(id) && id->resend_ns && now >= id->resend_ns) {
			if (id->state == VFAB_CS_REQ_SENT && !id->remote_cm_qpn)
				vfab_cm_window_req(id, now);
			else
				expire(id, now);
		}
		if (watched(id) && id->alive_check_ns && now >= id->alive_check_ns) {
			id->alive_check_ns = vfab_cm_peer_due(now);
			if (vfab_cm_gone_check(id))
				vfab_cm_gone(id);
		}
		if (id->timewait_ns && now >= id->timewait_ns) {
			id->timewait_ns = 0;
			vfab_cm_ev(id, VFAB_EV_TIMEWAIT_EXIT, 0);
		}
		if (resends_in(id))
			earliest(&next, id->resend_ns);
		if (watched(id))
			earliest(&next, id->alive_check_ns);
		earliest(&next, id->timewait_ns);
	}
	return next;
}
