/* SPDX-License-Identifier: MIT */
/*
 * Binding and resolution, as the kernel's rdma_bind_addr,
 * rdma_resolve_addr and rdma_resolve_route do them for RoCE: an address of
 * the node takes its HCA port and RoCE v2 GID (cm_local.h), a port below
 * 1024 needs CAP_NET_BIND_SERVICE, a destination is resolved from inside
 * the node (cm_route.h) on a thread of its own and answered with
 * ADDR_RESOLVED or ADDR_ERROR. Called with the agent's lock held; 0 or
 * -errno as the kernel's commands return.
 */
#ifndef VFAB_CM_RESOLVE_H
#define VFAB_CM_RESOLVE_H

#include <sys/socket.h>

#include "cm/cm_id.h"

int vfab_cm_bind(struct vfab_cm_id *id, const struct sockaddr *addr);
int vfab_cm_resolve_addr(struct vfab_cm_id *id, const struct sockaddr *src,
			 const struct sockaddr *dst, int timeout_ms);
int vfab_cm_resolve_route(struct vfab_cm_id *id);

#endif /* VFAB_CM_RESOLVE_H */
