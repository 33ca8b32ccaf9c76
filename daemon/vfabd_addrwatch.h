/* SPDX-License-Identifier: MIT */
/*
 * Addresses added to or removed from a node's netdev at run time (`ip addr`
 * inside the node) change the GID table of the HCA ports bound to it.
 * NETLINK_ROUTE sockets per node (vfabd_rtnl.c), opened inside the node's
 * network namespace once it exists; all of them behind one epoll fd that
 * the event loop polls.
 */
#ifndef VFAB_DAEMON_VFABD_ADDRWATCH_H
#define VFAB_DAEMON_VFABD_ADDRWATCH_H

struct vfabd;
/* Per-node netlink watchers of address changes; see vfabd_addrwatch.c. */
struct vfabd_addrwatch;

int vfabd_addrwatch_init(struct vfabd *d);
/* The fd to poll for POLLIN (-1 when not watching). */
int vfabd_addrwatch_fd(const struct vfabd *d);
/* Reads the notifications that arrived and updates the GID tables they touch. */
void vfabd_addrwatch_run(struct vfabd *d);
/* Every tick: attaches to nodes whose namespace appeared, syncs ports not yet synced. */
void vfabd_addrwatch_tick(struct vfabd *d);
void vfabd_addrwatch_free(struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_ADDRWATCH_H */
