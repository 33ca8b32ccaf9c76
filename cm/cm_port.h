/* SPDX-License-Identifier: MIT */
/*
 * The CM's way onto the fabric: one UD QP per HCA port of a process (the
 * part QP1 plays on hardware), Q_Key 0x80010000. CM messages are datagrams
 * on it, so a port that is down or a lossy link drops them and the port
 * counters count them, as they do MADs.
 *
 * A datagram that finds no posted receive is dropped, as on hardware, so
 * the receive side follows demand: VFAB_CM_PORT_RECV_BASE receives at
 * first, and more (a chunk of buffers at a time, up to the QP's
 * VFAB_CM_PORT_RECV_MAX) as the agent reserves them for what it expects
 * (vfab_cm_port_reserve: the answers to its connections, docs/DESIGN.md
 * "RDMA CM") and when one drain finds more than half of them full (REQs
 * of many peers at once). Sends beyond the send queue wait in order
 * in the process until earlier ones complete.
 */
#ifndef VFAB_CM_PORT_H
#define VFAB_CM_PORT_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "cm/cm_wire.h"

#define VFAB_CM_PORT_RECV_BASE 256
#define VFAB_CM_PORT_RECV_CHUNK 256
#define VFAB_CM_PORT_RECV_MAX 16384
#define VFAB_CM_PORT_SENDS 256
#define VFAB_CM_PORT_AHS 32

struct vfab_cm_port_out; /* a send waiting for the send queue */

struct vfab_cm_port {
	struct ibv_context *ctx; /* borrowed */
	uint8_t port_num;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;  /* receives, on the channel */
	struct ibv_cq *scq; /* sends, on the channel while sends wait */
	struct ibv_qp *qp;
	/* receive buffers (GRH + message), VFAB_CM_PORT_RECV_CHUNK per chunk */
	uint8_t *rbuf[VFAB_CM_PORT_RECV_MAX / VFAB_CM_PORT_RECV_CHUNK];
	struct ibv_mr *rmr[VFAB_CM_PORT_RECV_MAX / VFAB_CM_PORT_RECV_CHUNK];
	unsigned recvs;	 /* buffers, each posted or being handled */
	unsigned demand; /* receives reserved beyond the base */
	uint8_t *sbuf;	 /* send buffers, one per send queue entry */
	struct ibv_mr *smr;
	unsigned send_next, sends_out;
	struct vfab_cm_port_out *wait_head, *wait_tail;
	struct {
		uint8_t dgid[16];
		uint8_t sgid_index;
		struct ibv_ah *ah;
	} ahs[VFAB_CM_PORT_AHS];
	unsigned nahs;
	uint64_t sent, received, dropped; /* messages, for VFAB_DEBUG */
};

/* Create the QP on ctx's port and post its receives; 0 or -errno. */
int vfab_cm_port_open(struct vfab_cm_port *p, struct ibv_context *ctx, uint8_t port_num);
void vfab_cm_port_close(struct vfab_cm_port *p);

/* The fd that turns readable when a message arrived or a send completed. */
int vfab_cm_port_fd(const struct vfab_cm_port *p);

/*
 * Change by delta (negative: give back) the receives the agent expects to
 * need beyond the base; posts more at once when the buffers fall short
 * (they are never taken back: a drop costs a resend, memory does not).
 */
int vfab_cm_port_reserve(struct vfab_cm_port *p, int delta);

/* Send m to the CM QP dqpn at dgid, from the port's GID sgid_index. */
int vfab_cm_port_send(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16],
		      uint32_t dqpn, const struct vfab_cm_msg *m);

/*
 * Take up to max arrived messages (re-arming the channel, posting waiting
 * sends whose turn came); returns how many, or -errno.
 */
int vfab_cm_port_recv(struct vfab_cm_port *p, struct vfab_cm_msg *out, int max);

/* One drain took `drained` messages: grow when they filled more than half the buffers. */
int vfab_cm_port_burst(struct vfab_cm_port *p, unsigned drained);

#endif /* VFAB_CM_PORT_H */
