/* SPDX-License-Identifier: MIT */
#include "cm/cm_gone.h"

#include <errno.h>

#include "cm/cm_event.h"
#include "cm/cm_log.h"
#include "cm/cm_peer.h"
#include "cm/cm_window.h"

int vfab_cm_gone_check(struct vfab_cm_id *id)
{
	return id->remote_pid && !vfab_cm_peer_alive(id->remote_pid, id->remote_start);
}

/* The REJ the peer's CM sends when its ID goes (cm_destroy_id), reason by its state. */
static void rejected(struct vfab_cm_id *id, int reason)
{
	struct vfab_cm_msg m = {.type = VFAB_CM_REJ, .reason = (uint8_t)reason};

	vfab_cm_window_done(id);
	id->state = VFAB_CS_ROUTE_RESOLVED;
	id->resend_ns = 0;
	vfab_cm_ev_conn(id, id->uid, id->handle, VFAB_EV_REJECTED, reason, &m);
}

void vfab_cm_gone(struct vfab_cm_id *id)
{
	vfab_cm_dbg("id %u: peer pid %d is gone (state %d)", id->handle, (int)id->remote_pid,
		    id->state);
	switch (id->state) {
	case VFAB_CS_REQ_SENT:
		if (id->qp.ud) { /* no SIDR REP will come */
			vfab_cm_window_done(id);
			id->state = VFAB_CS_ROUTE_RESOLVED;
			id->resend_ns = 0;
			vfab_cm_ev(id, VFAB_EV_UNREACHABLE, -ETIMEDOUT);
			break;
		}
		/*
		 * Unanswered: its listener was gone and the REQ meets nobody
		 * (cm_match_req's REJ); after an MRA the passive ID existed and
		 * its destruction rejects.
		 */
		rejected(id,
			 id->mra ? VFAB_CM_REJ_CONSUMER_DEFINED : VFAB_CM_REJ_INVALID_SERVICE_ID);
		break;
	case VFAB_CS_REQ_RCVD:	/* the active ID went in REQ_SENT: REJ "timeout" */
		if (!id->qp.ud) /* SIDR has no answer to a request that is given up */
			rejected(id, VFAB_CM_REJ_TIMEOUT);
		break;
	case VFAB_CS_REP_SENT: /* it went in REP_RCVD */
	case VFAB_CS_REP_RCVD: /* it went in REP_SENT */
		rejected(id, VFAB_CM_REJ_CONSUMER_DEFINED);
		break;
	case VFAB_CS_ESTABLISHED: /* its DREQ */
	case VFAB_CS_DREQ_SENT:	  /* the DREP to ours */
		vfab_cm_ev_disconnected(id);
		break;
	default:
		break;
	}
}
