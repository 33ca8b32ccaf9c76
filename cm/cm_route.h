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

/* Whether addr is the wildcard address of its family. */
int vfab_cm_addr_any(const struct sockaddr *addr);

#endif /* VFAB_CM_ROUTE_H */
