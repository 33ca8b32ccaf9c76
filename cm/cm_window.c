/* SPDX-License-Identifier: MIT */
#include "cm/cm_window.h"

#include <stdlib.h>
#include <string.h>

#include "cm/cm_addr.h"
#include "cm/cm_agent.h"
#include "cm/cm_dir.h"
#include "cm/cm_event.h"
#include "cm/cm_far.h"
#include "cm/cm_log.h"
#include "cm/cm_mad.h"
#include "cm/cm_msg.h"
#include "cm/cm_peer.h"

#define RECHECK_NS 100000ull /* a REQ still "on its way" looks again after 100 us */

/* One listener's CM QP: the REQs out at it and those waiting, oldest first. */
struct dest {
	struct dest *next;
	uint8_t gid[16];
	uint32_t qpn;
	int out;
	struct vfab_cm_id *head, *tail;
};

static struct dest *dests;

static struct dest *dest_of(const struct vfab_cm_id *id, int create)
{
	struct dest *d;

	for (d = dests; d; d = d->next)
		if (d->qpn == id->remote_cm_qpn && !memcmp(d->gid, id->remote_gid, 16))
			return d;
	if (!create || !(d = calloc(1, sizeof(*d))))
		return NULL;
	memcpy(d->gid, id->remote_gid, 16);
	d->qpn = id->remote_cm_qpn;
	d->next = dests;
	dests = d;
	return d;
}

static void dest_drop_if_idle(struct dest *d)
{
	struct dest **pp;

	if (d->out || d->head)
		return;
	for (pp = &dests; *pp && *pp != d; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = d->next;
	free(d);
}

static void send_out(struct dest *d, struct vfab_cm_id *id)
{
	d->out++;
	id->win = VFAB_WIN_OUT;
	vfab_cm_send_tracked(id, &id->sent, VFAB_CM_TRY_MS);
}

void vfab_cm_window_send(struct vfab_cm_id *id)
{
	struct dest *d = dest_of(id, 1);

	if (!d) { /* no memory for the bookkeeping: send without it */
		vfab_cm_send_tracked(id, &id->sent, VFAB_CM_TRY_MS);
		return;
	}
	if (d->out < VFAB_CM_REQ_WINDOW && !d->head) {
		send_out(d, id);
		return;
	}
	id->win = VFAB_WIN_WAITING;
	id->resend_ns = 0;
	id->win_next = NULL;
	if (d->tail)
		d->tail->win_next = id;
	else
		d->head = id;
	d->tail = id;
}

void vfab_cm_window_done(struct vfab_cm_id *id)
{
	struct dest *d = id->win != VFAB_WIN_NONE ? dest_of(id, 0) : NULL;

	if (!d) {
		id->win = VFAB_WIN_NONE;
		return;
	}
	if (id->win == VFAB_WIN_OUT) {
		d->out--;
	} else {
		struct vfab_cm_id **pp, *prev = NULL;

		for (pp = &d->head; *pp && *pp != id; pp = &(*pp)->win_next)
			prev = *pp;
		if (*pp)
			*pp = id->win_next;
		if (d->tail == id)
			d->tail = prev;
	}
	id->win = VFAB_WIN_NONE;
	id->win_next = NULL;
	while (d->out < VFAB_CM_REQ_WINDOW && d->head) {
		struct vfab_cm_id *next = d->head;

		d->head = next->win_next;
		if (!d->head)
			d->tail = NULL;
		next->win_next = NULL;
		send_out(d, next);
	}
	dest_drop_if_idle(d);
}

/* Nobody listens: what cm_match_req's REJ (or the SIDR REP) would report. */
static void nobody_listens(struct vfab_cm_id *id)
{
	vfab_cm_dbg("connect: nobody listens on ps %04x port %u", id->ps,
		    vfab_cm_sa_port(&id->dst));
	id->state = VFAB_CS_ROUTE_RESOLVED;
	id->resend_ns = 0;
	if (id->qp.ud)
		vfab_cm_ev(id, VFAB_EV_UNREACHABLE, VFAB_CM_SIDR_UNSUPPORTED);
	else
		vfab_cm_ev_conn(id, id->uid, id->handle, VFAB_EV_REJECTED,
				VFAB_CM_REJ_INVALID_SERVICE_ID,
				&(struct vfab_cm_msg){.type = VFAB_CM_REJ});
}

/* Whether id's destination is on another machine (asked once per connect). */
static bool far(const struct vfab_cm_id *id)
{
	int n;
	struct ibv_context *const *ctxs = vfab_cm_agent_ctxs(&n);

	return id->have_dev && id->loc.dev < n &&
	       vfab_cm_far(ctxs[id->loc.dev], id->loc.port, id->loc.gid_index, id->remote_gid);
}

void vfab_cm_window_req(struct vfab_cm_id *id, uint64_t now)
{
	struct vfab_cm_entry e;
	char name[128];

	if (far(id)) { /* its CM is QP1 of its machine: whoever listens there answers */
		id->remote_cm_qpn = VFAB_CM_MAD_QPN;
		id->remote_pid = 0;
		id->remote_start = 0;
		vfab_cm_window_send(id);
		return;
	}
	if (vfab_cm_dir_name(name, sizeof(name), id->ps, (struct sockaddr *)&id->dst,
			     vfab_cm_sa_port(&id->dst)) ||
	    vfab_cm_dir_check(vfab_cm_agent_dir(), name, &e)) {
		if (now >= id->req_deadline_ns) {
			nobody_listens(id);
			return;
		}
		id->resend_ns = now + RECHECK_NS; /* still on its way */
		vfab_cm_agent_arm(id->resend_ns);
		return;
	}
	id->remote_cm_qpn = e.cm_qpn;
	id->remote_pid = e.pid;
	id->remote_start = e.start;
	id->alive_check_ns = vfab_cm_peer_due(now);
	vfab_cm_agent_arm(id->alive_check_ns);
	vfab_cm_window_send(id);
}
