/* SPDX-License-Identifier: MIT */
/*
 * The CM's way onto the fabric: one UD QP per HCA port of a process (the
 * part QP1 plays on hardware), Q_Key 0x80010000. CM messages are datagrams
 * on it, so a port that is down or a lossy link drops them and the port
 * counters count them, as they do MADs.
 */
#ifndef VFAB_CM_PORT_H
#define VFAB_CM_PORT_H

#include <infiniband/verbs.h>
#include <stdint.h>

#include "cm/cm_wire.h"

/* A burst of connections (ucmatose -c 100) must not overflow the receive queue. */
#define VFAB_CM_PORT_RECVS 256
#define VFAB_CM_PORT_SENDS 256
#define VFAB_CM_PORT_AHS 32

struct vfab_cm_port {
	struct ibv_context *ctx; /* borrowed */
	uint8_t port_num;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;  /* receives, on the channel */
	struct ibv_cq *scq; /* sends, reaped by the sender */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf; /* receives (GRH + message), then sends */
	unsigned send_next;
	struct {
		uint8_t dgid[16];
		uint8_t sgid_index;
		struct ibv_ah *ah;
	} ahs[VFAB_CM_PORT_AHS];
	unsigned nahs;
};

/* Create the QP on ctx's port and post its receives; 0 or -errno. */
int vfab_cm_port_open(struct vfab_cm_port *p, struct ibv_context *ctx, uint8_t port_num);
void vfab_cm_port_close(struct vfab_cm_port *p);

/* The fd that turns readable when a message arrived (its completion channel). */
int vfab_cm_port_fd(const struct vfab_cm_port *p);

/* Send m to the CM QP dqpn at dgid, from the port's GID sgid_index. */
int vfab_cm_port_send(struct vfab_cm_port *p, uint8_t sgid_index, const uint8_t dgid[16],
		      uint32_t dqpn, const struct vfab_cm_msg *m);

/* Take up to max arrived messages (and re-arm); returns how many, or -errno. */
int vfab_cm_port_recv(struct vfab_cm_port *p, struct vfab_cm_msg *out, int max);

#endif /* VFAB_CM_PORT_H */
