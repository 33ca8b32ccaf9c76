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

#include <stdbool.h>
#include <stdint.h>

#include "vfabd_wirepkt.h"

/* Connections (one per bound QP, or binding) at most; VFABD_CONNS_PER_USER of a user's. */
#define VFABD_WIRE_MAX_CONNS 4096

struct vfabd;
struct vfabd_wire; /* vfabd_wire.c */

/* What the wire did since vfabd started (REPORT's `wire`, docs/REPORT_SCHEMA.md). */
struct vfabd_wire_counts {
	bool open; /* a fabric with routes to other machines: wire.sock is served */
	uint64_t binds, refused, sent, received, delivered;
	uint64_t dropped[VFABD_WIRE_DROP_REASONS];
};

/* Listens on <rundir>/wire.sock and starts the wire's thread. 0 or -errno (nothing left). */
int vfabd_wire_init(struct vfabd *d);
/*
 * Stops the thread, logs what the wire did (binds, packets, drops by
 * reason), closes every connection and endpoint, removes wire.sock.
 */
void vfabd_wire_free(struct vfabd *d);
/* The counters now (all 0 and !open without a wire), while the thread runs. */
void vfabd_wire_counts(const struct vfabd *d, struct vfabd_wire_counts *out);

#endif /* VFAB_DAEMON_VFABD_WIRE_H */
