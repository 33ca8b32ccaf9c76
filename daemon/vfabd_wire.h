/* SPDX-License-Identifier: MIT */
/*
 * vfabd's side of the RoCE wire between machines (fabric/roce_wire.h,
 * docs/DESIGN.md "Beyond one host"): <rundir>/wire.sock, where a process
 * binds each QP whose peer is on another machine and then sends and
 * receives that QP's RoCE v2 packets through vfabd, which alone holds the
 * raw sockets in the nodes' network namespaces (vfabd_wire_ep.h) and checks
 * every packet a process sends (vfabd_wirepkt.h).
 *
 * It runs in a thread of its own with its own epoll: packets never wait
 * for the control loop (vfabd_server.c), nor it for them. The thread reads
 * vfabd's private topology (d->t) and the object table (d->k) only, never
 * the shared region.
 */
#ifndef VFAB_DAEMON_VFABD_WIRE_H
#define VFAB_DAEMON_VFABD_WIRE_H

#include <stdint.h>

#include "vfabd_wirepkt.h"

struct vfabd;
struct vfabd_wire; /* vfabd_wire.c */

/* What the wire did since vfabd started. */
struct vfabd_wire_counts {
	uint64_t binds;	    /* BINDs accepted */
	uint64_t refused;   /* BINDs refused, and connections past the table */
	uint64_t sent;	    /* TX packets put on the wire */
	uint64_t received;  /* frames the ports' filters let in */
	uint64_t delivered; /* RX messages handed to a bound process */
	uint64_t dropped[VFABD_WIRE_DROP_REASONS]; /* by reason; [VFABD_WIRE_PASS] unused */
};

/* Listens on <rundir>/wire.sock and starts the wire's thread. 0 or -errno (nothing left). */
int vfabd_wire_init(struct vfabd *d);
/* Stops the thread, closes every connection and endpoint, removes wire.sock. */
void vfabd_wire_free(struct vfabd *d);
/* A snapshot of the counters (zero when the wire is not running). */
void vfabd_wire_counts(const struct vfabd *d, struct vfabd_wire_counts *out);

#endif /* VFAB_DAEMON_VFABD_WIRE_H */
