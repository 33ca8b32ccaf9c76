/* SPDX-License-Identifier: MIT */
/*
 * A connection's messages: built from its ID, sent to the peer's CM QP
 * from the ID's port, kept for resending until the answer comes (with the
 * kernel's timing), and the receives reserved on the port for the answers
 * the ID may get. The caller holds the agent's lock.
 */
#ifndef VFAB_CM_MSG_H
#define VFAB_CM_MSG_H

#include <stdint.h>

#include "cm/cm_id.h"
#include "cm/cm_port.h"
#include "cm/cm_wire.h"

/*
 * The kernel's RDMA CM timing: response timeout 2^20 * 4.096 us
 * (CMA_CM_RESPONSE_TIMEOUT) plus twice the packet lifetime per try, 15
 * retries (CMA_MAX_CM_RETRIES). After an MRA (rdma_cm sends service
 * timeout 24, CMA_CM_MRA_SETTING) a try lasts cm_convert_to_ms(24) plus
 * the address vector's 512 ms.
 */
#define VFAB_CM_TRY_MS (4096 + 2 * 256)
#define VFAB_CM_RETRIES 15
#define VFAB_CM_MRA_TIMEOUT 24
#define VFAB_CM_MRA_TRY_MS (65536 + 512)
#define VFAB_CM_NS_PER_MS 1000000ull

/*
 * Receives an ID reserves on its port while it may hear from a peer: at
 * most two messages are ever due at once (an MRA and the REP or REJ after
 * a REQ, a DREQ crossing a DREP), so a burst of N connections finds 2N
 * receives posted.
 */
#define VFAB_CM_RECVS_PER_ID 2

/* m as id sends a message of type: its IDs, ports, addresses, GID, pid and start time. */
void vfab_cm_msg_init(const struct vfab_cm_id *id, struct vfab_cm_msg *m, int type);

/* Send m to id's peer (its CM QP at its GID). */
int vfab_cm_send(struct vfab_cm_id *id, const struct vfab_cm_msg *m);

/* Send m and resend it every try_ms (VFAB_CM_RETRIES times) until the answer comes. */
int vfab_cm_send_tracked(struct vfab_cm_id *id, const struct vfab_cm_msg *m, unsigned try_ms);

/* Wait try_ms from now before the next resend (an MRA came). */
void vfab_cm_retrack(struct vfab_cm_id *id, unsigned try_ms);

/* A try ran out: resend what is tracked (1), or 0 when the retries are spent. */
int vfab_cm_resend(struct vfab_cm_id *id, uint64_t now);

/* Tell the peer that its REQ or REP (mraed) reached the consumer: wait for the answer. */
void vfab_cm_send_mra(struct vfab_cm_id *id, int mraed);

/* Answer a message whose sender has no ID here (REJ, DREP, SIDR REP), from port p. */
void vfab_cm_send_stray(struct vfab_cm_port *p, const struct vfab_cm_msg *in, int type,
			uint8_t reason);

/* Reserve id's receives on its port (once); released when the ID is freed. */
int vfab_cm_msg_reserve(struct vfab_cm_id *id);
void vfab_cm_msg_release(struct vfab_cm_id *id);

/* Messages resent since the process started (VFAB_DEBUG reports each). */
uint64_t vfab_cm_msg_resends(void);

#endif /* VFAB_CM_MSG_H */
