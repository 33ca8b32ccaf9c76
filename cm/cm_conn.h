/* SPDX-License-Identifier: MIT */
/*
 * The CM agent of a process: what the kernel's rdma_cm and ib_cm do for a
 * RoCE port, in the process itself. It owns the lock every ucma object is
 * kept under, the process's HCA contexts and CM ports, and one thread that
 * receives CM messages and runs the retry and liveness timers. Operations
 * below are called with the lock held and return 0 or -errno, as the
 * kernel's ucma commands do.
 */
#ifndef VFAB_CM_CONN_H
#define VFAB_CM_CONN_H

#include <rdma/rdma_user_cm.h>
#include <stdint.h>
#include <sys/socket.h>

#include "cm/cm_id.h"

/*
 * The kernel's RDMA CM timing: response timeout 2^20 * 4.096 us
 * (CMA_CM_RESPONSE_TIMEOUT) plus twice the packet lifetime per try, 15
 * retries (CMA_MAX_CM_RETRIES); a connected peer's liveness every 500 ms.
 */
#define VFAB_CM_TRY_MS (4096 + 2 * 256)
#define VFAB_CM_RETRIES 15
#define VFAB_CM_ALIVE_MS 500
/*
 * Time wait after a disconnect, as the kernel's CM keeps it on RoCE: the
 * path's packet lifetime is CMA_IBOE_PACKET_LIFETIME (16), the address
 * vector's timeout one more, and cm_enter_timewait waits
 * cm_convert_to_ms(17) = 1 << (17 - 8) ms before TIMEWAIT_EXIT.
 */
#define VFAB_CM_TIMEWAIT_MS 512
/*
 * How long a REQ for a service nobody listens on waits for a listener
 * before the REJ: the time a REQ takes to reach the peer's CM on hardware
 * (the MAD path, and before it the active side's QP creation, ~1 ms on a
 * ConnectX). A server that listens again right after accepting a first
 * connection (perftest -R does) is found on hardware within it.
 */
#define VFAB_CM_REQ_ARRIVAL_NS 2000000ull

/* Start the agent once per process (contexts, thread); 0 or -errno. */
int vfab_cm_agent_start(void);
void vfab_cm_lock(void);
void vfab_cm_unlock(void);

int vfab_cm_bind(struct vfab_cm_id *id, const struct sockaddr *addr);
int vfab_cm_resolve_addr(struct vfab_cm_id *id, const struct sockaddr *src,
			 const struct sockaddr *dst, int timeout_ms);
int vfab_cm_resolve_route(struct vfab_cm_id *id);
int vfab_cm_listen(struct vfab_cm_id *id);
int vfab_cm_connect(struct vfab_cm_id *id, const struct rdma_ucm_conn_param *cp);
int vfab_cm_accept(struct vfab_cm_id *id, uint64_t uid, const struct rdma_ucm_conn_param *cp);
int vfab_cm_reject(struct vfab_cm_id *id, uint8_t reason, const uint8_t *pd, uint8_t len);
int vfab_cm_disconnect(struct vfab_cm_id *id);
int vfab_cm_notify(struct vfab_cm_id *id, int event);
/* Leave the connection as destroying an ID does (REJ, DREQ), unpublish, free. */
void vfab_cm_destroy(struct vfab_cm_id *id);

/* The node GUID (network order) of id's HCA, 0 when it has none yet. */
uint64_t vfab_cm_node_guid(const struct vfab_cm_id *id);

#endif /* VFAB_CM_CONN_H */
