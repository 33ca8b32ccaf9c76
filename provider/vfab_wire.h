/* SPDX-License-Identifier: MIT */
/*
 * An RC QP whose peer is on another machine (issue 25): its messages go as
 * RoCE v2 packets through vfabd (fabric/roce_wire.h), and its requester,
 * completer and responder are the RC state machines of fabric/roce_rc.h,
 * run in this process as rxe runs them in the kernel. The in-host path is
 * untouched: a QP takes the wire only when, at RTR, its destination GID
 * belongs to no port of the fabric's region and vfabd binds it.
 *
 * Threads: the application's post_send hands WRs to the requester
 * (vfab_wire_attempt, under sq.lock); one thread per process (the engine's
 * wire thread, vfab_engine.c) waits in vfab_wire_wait: it reads every wire
 * QP's connection, runs the responder (receive CQEs, as an HCA writes them
 * without the application) and the completer, and fires the ACK and RNR
 * timers. What the completer decides waits in the wire QP until the send
 * queue takes it (vfab_wire_reap, from vfab_sq_advance under sq.lock); the
 * waiting thread is told which QP has news. That thread never takes a send
 * queue's lock, so the lock order stays sq.lock -> wire.
 */
#ifndef VFAB_PROVIDER_WIRE_H
#define VFAB_PROVIDER_WIRE_H

#include "provider/vfab.h"

/*
 * At RTR (sq.lock held, attributes applied): binds an RC QP to the wire
 * when its destination is not in the fabric's region, a UD QP always (its
 * datagrams to other machines go there). 0 when it now uses the wire;
 * -ENOENT when the destination is local (nothing changes); another -errno
 * when the wire is not there (one host, refused): the QP then stays on the
 * in-host path, where such a destination never answers.
 */
int vfab_wire_rtr(struct vfab_qp *qp);
/* At RTS (sq.lock held): the requester starts from the QP's sq_psn. */
void vfab_wire_rts(struct vfab_qp *qp);
/* ERR, RESET or destroy (sq.lock held or the QP idle): unbinds; the wire state goes. */
void vfab_wire_close(struct vfab_qp *qp);

/*
 * A WR of a wire QP (sq.lock held), its local segments gathered: handed to the requester,
 * VFAB_ST_WIRE; VFAB_ST_QUEUED while the requester holds as many WRs as it can (it is tried again
 * once one completes); VFAB_ST_FAILED with its status.
 */
enum vfab_stage vfab_wire_attempt(struct vfab_qp *qp, struct vfab_swqe *w, const struct iovec *iov,
				  unsigned int n, uint64_t len);
/*
 * A UD QP's datagram (sq.lock held, its bytes gathered) when its AH's GID
 * is on another machine: sent as one RoCE v2 packet; true. False when the
 * GID is in the region (the in-host path's) or the datagram cannot go.
 */
bool vfab_wire_ud_send(struct vfab_qp *qp, const struct vfab_swqe *w, const struct iovec *iov,
		       unsigned int n, uint64_t len);
/* The completer's decisions into the send queue's WRs, oldest first (sq.lock held). */
void vfab_wire_reap(struct vfab_qp *qp);

/*
 * One round of the wire thread: packets of every wire QP, then the timers
 * (at most 100 ms apart). news(qp) is called, with the QP held open, when
 * its send queue has completions to take. The first vfab_wire_rtr must
 * have returned 0 before.
 */
void vfab_wire_wait(void (*news)(struct vfab_qp *qp));
/*
 * In a forked child: the parent's wire QPs are not the child's (as the
 * engine forgets the parent's QPs), so their connections are closed here and
 * the child's own wire QPs get an epoll set of their own. The inherited one
 * is the parent's, whose thread would be woken by the child's connections.
 */
void vfab_wire_atfork_child(void);

#endif /* VFAB_PROVIDER_WIRE_H */
