/* SPDX-License-Identifier: MIT */
/*
 * Address and route resolution as the kernel's rdma_resolve_addr does it,
 * from inside the node: the source address the node's routing table picks,
 * the next hop's neighbour entry (an address nothing answers fails), and the
 * RoCE v2 GIDs of the node's HCA ports.
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
	int ifindex; /* the GID's netdev */
	int mtu;     /* enum ibv_mtu: min(port active MTU, netdev's) */
};

/* The path MTU (enum ibv_mtu) of port p of ctx through netdev ifindex, as iboe_get_mtu says. */
int vfab_cm_route_mtu(struct ibv_context *ctx, uint8_t p, int ifindex);

/*
 * Every RoCE v2 GID of the n open contexts' ports, with where it lives:
 * fn(loc, arg) for each; returns how many. A scan reads the sysfs GID
 * tables (a run of empty slots ends a table), so callers cache it
 * (cm_local.h).
 */
int vfab_cm_route_scan(struct ibv_context *const *ctxs, int n,
		       void (*fn)(const struct vfab_cm_local *loc, void *arg), void *arg);

/*
 * What the kernel's cma_bind_loopback takes for a destination that is a
 * wildcard or loopback address: the first ACTIVE port (the first port when
 * none is), GID index 0. -ENODEV without a context.
 */
int vfab_cm_route_loopback(struct ibv_context *const *ctxs, int n, struct vfab_cm_local *out);

#endif /* VFAB_CM_ROUTE_H */
