/* SPDX-License-Identifier: MIT */
/*
 * Address and route resolution as the kernel's rdma_resolve_addr does it,
 * from inside the node: the source address the node's routing table picks,
 * the next hop's neighbour entry (an address nothing answers fails), and the
 * HCA port and RoCE v2 GID index of an IP address of the node.
 */
#ifndef VFAB_CM_ROUTE_H
#define VFAB_CM_ROUTE_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/socket.h>

/* The node's source address toward dst (port 0). */
int vfab_cm_route_src(const struct sockaddr *dst, struct sockaddr_storage *src);

/*
 * Wait until the next hop toward dst has a complete neighbour entry, or
 * timeout_ms passed (-EHOSTUNREACH); a local address resolves at once.
 */
int vfab_cm_route_neigh(const struct sockaddr *dst, int timeout_ms);

/* Where an IP address of this node lives: device, port, RoCE v2 GID index, MTU. */
struct vfab_cm_local {
	int dev; /* index into the caller's contexts */
	uint8_t port;
	uint8_t gid_index;
	uint8_t gid[16];
	int mtu; /* enum ibv_mtu: min(port active MTU, netdev's) */
};

/* Look addr up in the GID tables of n open contexts; -EADDRNOTAVAIL when no HCA has it. */
int vfab_cm_route_local(struct ibv_context *const *ctxs, int n, const struct sockaddr *addr,
			struct vfab_cm_local *out);

/*
 * What the kernel's cma_bind_loopback takes for a destination that is a
 * wildcard or loopback address: the first ACTIVE port (the first port when
 * none is), GID index 0. -ENODEV without a context.
 */
int vfab_cm_route_loopback(struct ibv_context *const *ctxs, int n, struct vfab_cm_local *out);

/*
 * Whether addr binds to no device, as the kernel's cma_any_addr says: the
 * wildcard address or a loopback one (127/8, ::1). Binding there succeeds
 * without an HCA and listening there covers every address of the node;
 * libfabric's verbs provider binds "localhost" to probe for devices.
 */
int vfab_cm_addr_any(const struct sockaddr *addr);

#endif /* VFAB_CM_ROUTE_H */
