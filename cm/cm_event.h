/* SPDX-License-Identifier: MIT */
/*
 * What the application hears: rdma_cm events built from the CM's state and
 * messages (private data at the lengths the kernel reports, the peer's
 * resources seen from this side, address handles of UD peers, ECE), queued
 * on the ID's file (cm_id.h). The caller holds the agent's lock.
 */
#ifndef VFAB_CM_EVENT_H
#define VFAB_CM_EVENT_H

#include <stdint.h>

#include "cm/cm_id.h"
#include "cm/cm_wire.h"

/*
 * Time wait after a disconnect, as the kernel's CM keeps it on RoCE: the
 * path's packet lifetime is CMA_IBOE_PACKET_LIFETIME (16), the address
 * vector's timeout one more, and cm_enter_timewait waits
 * cm_convert_to_ms(17) = 1 << (17 - 8) ms before TIMEWAIT_EXIT.
 */
#define VFAB_CM_TIMEWAIT_MS 512

/* An event of id that carries no message: ev with status. */
void vfab_cm_ev(struct vfab_cm_id *id, int ev, int status);

/*
 * An event that carries connection message m (NULL: none) on owner's
 * queue, for the ID with this uid and handle (a CONNECT_REQUEST is the
 * listener's event about the new ID).
 */
void vfab_cm_ev_conn(struct vfab_cm_id *owner, uint64_t uid, uint32_t handle, int ev, int status,
		     const struct vfab_cm_msg *m);

/* A UD event on owner's queue: the address handle (from id's port), QPN and Q_Key of the peer. */
void vfab_cm_ev_ud(struct vfab_cm_id *id, struct vfab_cm_id *owner, uint64_t uid, uint32_t handle,
		   int ev, const struct vfab_cm_msg *m, uint32_t qkey);

/*
 * The connection is over: DISCONNECTED now, TIMEWAIT_EXIT once the kernel's
 * CM would leave time wait (the ID may be destroyed before).
 */
void vfab_cm_ev_disconnected(struct vfab_cm_id *id);

#endif /* VFAB_CM_EVENT_H */
