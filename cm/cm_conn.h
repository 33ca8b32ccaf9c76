/* SPDX-License-Identifier: MIT */
/*
 * The connection state machine's operations, as the kernel's rdma_connect,
 * rdma_accept, rdma_reject, rdma_disconnect, rdma_notify and
 * rdma_destroy_id drive it (messages that arrive: cm_recv.h; timers:
 * cm_timer.h). Called with the agent's lock held; 0 or -errno as the
 * kernel's ucma commands return.
 */
#ifndef VFAB_CM_CONN_H
#define VFAB_CM_CONN_H

#include <rdma/rdma_user_cm.h>
#include <stdint.h>

#include "cm/cm_id.h"

int vfab_cm_connect(struct vfab_cm_id *id, const struct rdma_ucm_conn_param *cp);
int vfab_cm_accept(struct vfab_cm_id *id, uint64_t uid, const struct rdma_ucm_conn_param *cp);
int vfab_cm_reject(struct vfab_cm_id *id, uint8_t reason, const uint8_t *pd, uint8_t len);
int vfab_cm_disconnect(struct vfab_cm_id *id);
int vfab_cm_notify(struct vfab_cm_id *id, int event);

/* Leave the connection as destroying an ID does (REJ, DREQ), unpublish, free. */
void vfab_cm_destroy(struct vfab_cm_id *id);

/* What an ID holds beyond itself (its place in a REQ window, its receives): for cm_id's free hook.
 */
void vfab_cm_conn_forget(struct vfab_cm_id *id);

#endif /* VFAB_CM_CONN_H */
