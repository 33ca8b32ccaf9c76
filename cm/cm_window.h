/* SPDX-License-Identifier: MIT */
/*
 * Flow control of REQs: a REQ nobody asked for lands in the receives of
 * the listener's CM QP, which only the listener's agent can free. So a
 * process has at most VFAB_CM_REQ_WINDOW REQs unanswered at one CM QP; the
 * others wait here in order and leave as answers (MRA, REP, REJ) come back.
 * rdma_cm answers every REQ with an MRA as soon as the request is queued
 * for the consumer, so the window moves at the pace of the listener's
 * agent, not of its application. A burst of N connects costs N round trips
 * of that agent, never a dropped REQ and its 4.6 s resend. The caller holds
 * the agent's lock.
 */
#ifndef VFAB_CM_WINDOW_H
#define VFAB_CM_WINDOW_H

#include <stdint.h>

#include "cm/cm_id.h"

#define VFAB_CM_REQ_WINDOW 64

/*
 * How long a REQ for a service nobody listens on waits for a listener
 * before the REJ: the time a REQ takes to reach the peer's CM on hardware
 * (the MAD path, and before it the active side's QP creation, ~1 ms on a
 * ConnectX). A server that listens again right after accepting a first
 * connection (perftest -R does) is found on hardware within it.
 */
#define VFAB_CM_REQ_ARRIVAL_NS 2000000ull

/*
 * id's first REQ (id->sent): its listener's CM QP from the directory, then
 * the window; or, when nobody listens, a look again 100 us later until
 * id->req_deadline_ns, then the REJ (SIDR REP) the peer's CM would send.
 * Called by connect and by the timers; the answer always comes as an event.
 */
void vfab_cm_window_req(struct vfab_cm_id *id, uint64_t now);

/* Send id's REQ (id->sent) to its listener now, or once the window lets it. */
void vfab_cm_window_send(struct vfab_cm_id *id);

/* id's REQ was answered or given up (or id goes): the next one waiting may leave. */
void vfab_cm_window_done(struct vfab_cm_id *id);

#endif /* VFAB_CM_WINDOW_H */
