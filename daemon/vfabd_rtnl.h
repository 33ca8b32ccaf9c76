/* SPDX-License-Identifier: MIT */
/*
 * vfabd's NETLINK_ROUTE plumbing for the address watcher (vfabd_addrwatch.c):
 * sockets created inside a node's network namespace, link and address
 * dumps, and the address notifications, turned into plain records.
 */
#ifndef VFAB_VFABD_RTNL_H
#define VFAB_VFABD_RTNL_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/gid.h"

#define VFABD_RTNL_ADDRS 64 /* addresses of a namespace considered */
#define VFABD_RTNL_LINKS 64 /* netdevs of a namespace */

/* An interface address as the kernel's RoCE GID code sees it. */
struct vfabd_rtnl_addr {
	int ifindex;
	struct vfab_gid_addr a;
};

struct vfabd_rtnl_link {
	int ifindex;
	bool up; /* IFF_UP */
	char name[IFNAMSIZ];
};

struct vfabd_rtnl_dump {
	size_t naddrs, nlinks;
	struct vfabd_rtnl_addr addrs[VFABD_RTNL_ADDRS]; /* in the kernel's dump order */
	struct vfabd_rtnl_link links[VFABD_RTNL_LINKS];
};

/*
 * Two sockets inside the network namespace nsfd (vfab_netns_run):
 * *ev_fd (non-blocking) subscribed to the IPv4/IPv6 address and link
 * groups, *dump_fd for requests. 0, or -errno (-EINVAL: nsfd is no network
 * namespace, e.g. a netns file not bound yet).
 */
int vfabd_rtnl_open(int nsfd, int *ev_fd, int *dump_fd);

/* The namespace's links and addresses into *dump (zeroed first). 0 or -errno. */
int vfabd_rtnl_dump(int dump_fd, uint32_t *seq, struct vfabd_rtnl_dump *dump);

/*
 * Reads every queued notification of ev_fd. The RTM_NEWADDRs are appended to
 * added[*nadded..max) in arrival order. True when any address or link
 * changed, or notifications were lost (the kernel's queue overflowed).
 */
bool vfabd_rtnl_read(int ev_fd, struct vfabd_rtnl_addr *added, size_t *nadded, size_t max);

#endif /* VFAB_VFABD_RTNL_H */
