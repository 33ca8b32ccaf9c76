/* SPDX-License-Identifier: MIT */
/*
 * A running node's interface addresses, seen and changed from the host
 * (`vfab addr`). Every netlink request is made inside the node's published
 * network namespace (vfab_netns_run, as `vfab up` configures nodes); a
 * namespace file that turns out to be the caller's own namespace is refused
 * rather than changing the host's network.
 */
#ifndef VFAB_NETNS_NODE_ADDR_H
#define VFAB_NETNS_NODE_ADDR_H

#include <net/if.h>
#include <stdint.h>

#define VFAB_ADDR_LIST_NETDEVS 16 /* netdevs a listing reports */
#define VFAB_ADDR_LIST_ADDRS 32	  /* addresses per netdev */

/* An interface address: IPv4 in the first 4 bytes, network byte order. */
struct vfab_ifaddr {
	int family; /* AF_INET or AF_INET6 */
	uint8_t addr[16];
	unsigned prefix;
};

struct vfab_netdev_addrs {
	char name[IF_NAMESIZE];
	char state[16]; /* operstate as `ip -br` prints it: UP, DOWN, UNKNOWN ... */
	unsigned naddrs;
	struct vfab_ifaddr addrs[VFAB_ADDR_LIST_ADDRS]; /* the kernel's dump order */
};

struct vfab_addr_list {
	unsigned nnetdevs;  /* ifindex order */
	unsigned truncated; /* netdevs or addresses left out: the arrays were full */
	struct vfab_netdev_addrs netdevs[VFAB_ADDR_LIST_NETDEVS];
};

/*
 * "a.b.c.d/N" (N <= 32) or "IPv6/N" (N <= 128); the prefix is required.
 * 0 or -EINVAL.
 */
int vfab_ifaddr_parse(const char *text, struct vfab_ifaddr *a);

/* "198.18.0.77/24", "2001:db8::1/64"; buf of at least VFAB_IFADDR_STR_LEN. */
#define VFAB_IFADDR_STR_LEN 52
void vfab_ifaddr_format(const struct vfab_ifaddr *a, char *buf);

/*
 * Add (`add` != 0) or delete `a` on `netdev` of node `node` of fabric
 * `fabric`. IPv6 addresses are added without DAD, as the node's configured
 * ones are, so their GIDs appear at once. Returns 0, 1 when after a delete
 * the same address stays on the netdev with another prefix length (its
 * GIDs stay too), or -errno: -ENODEV no such netdev in the node, -EEXIST
 * the address is there already, -EADDRNOTAVAIL (delete) it is not,
 * -ENOENT the node's namespace is not published, -EXDEV that namespace is
 * the caller's own.
 */
int vfab_node_addr_change(const char *fabric, const char *node, const char *netdev, int add,
			  const struct vfab_ifaddr *a);

/* Every netdev of the node with its addresses. 0 or -errno (as above). */
int vfab_node_addr_list(const char *fabric, const char *node, struct vfab_addr_list *out);

#endif /* VFAB_NETNS_NODE_ADDR_H */
