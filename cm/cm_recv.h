/* SPDX-License-Identifier: MIT */
/*
 * The CM messages that arrive, after Linux cm.c and cma.c: a REQ makes a
 * passive ID and a CONNECT_REQUEST on its listener and is acknowledged
 * with an MRA at once (as rdma_cm does when it hands a request to user
 * space); REP, RTU, REJ, DREQ, DREP, MRA and SIDR REP move the ID they
 * name and raise the events the kernel raises. Duplicates (the peer
 * resent because our answer was lost) are answered again. The agent
 * thread calls it with the lock held.
 */
#ifndef VFAB_CM_RECV_H
#define VFAB_CM_RECV_H

#include "cm/cm_port.h"
#include "cm/cm_wire.h"

/* Message m arrived on port p. */
void vfab_cm_recv(struct vfab_cm_port *p, const struct vfab_cm_msg *m);

#endif /* VFAB_CM_RECV_H */
