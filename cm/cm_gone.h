/* SPDX-License-Identifier: MIT */
/*
 * A peer process that is gone cannot answer: on a real host its kernel
 * answers for it, at once (a DREP to a DREQ; when the process's file is
 * released, a REJ for each connection being set up and a DREQ for each
 * one established). vfab has no kernel on the peer's side, so the CM
 * gives the ID the event that answer would have brought, as soon as it
 * sees the process gone (before it sends to the peer, and on the liveness
 * timer, every VFAB_CM_ALIVE_MS of cm_peer.h). The caller holds the agent's lock.
 */
#ifndef VFAB_CM_GONE_H
#define VFAB_CM_GONE_H

#include "cm/cm_id.h"

/* Whether id waits for a peer that is gone (its pid and start time, cm_peer.h). */
int vfab_cm_gone_check(struct vfab_cm_id *id);

/* id's peer is gone: the event its kernel's answer would bring, for id's state. */
void vfab_cm_gone(struct vfab_cm_id *id);

#endif /* VFAB_CM_GONE_H */
