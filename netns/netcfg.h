/* SPDX-License-Identifier: MIT */
/*
 * The primitives the fabric's network is built from: libnl-route requests
 * (links, addresses, routes) and /proc/sys/net settings. Each acts on the
 * network namespace the caller is in when it opens the socket or the file,
 * so callers enter a fabric or node namespace first (vfab_netns_run); none
 * of this may ever run in the host's own namespace.
 */
#ifndef VFAB_NETNS_NETCFG_H
#define VFAB_NETNS_NETCFG_H

#include <stdbool.h>
#include <stdint.h>

struct nl_sock;

/* libnl's error code (negative or not) as -errno. */
int vfab_nl_errno(int nlerr);

/* A NETLINK_ROUTE socket bound to the current network namespace. */
int vfab_nl_open(struct nl_sock **sk);

/* ifindex of `name` (> 0), or -errno (-ENODEV when there is none). */
int vfab_nl_ifindex(struct nl_sock *sk, const char *name);

int vfab_nl_link_up(struct nl_sock *sk, const char *name);
/* Sets or clears IFF_UP of ifindex (a veth end down drops its peer's carrier). */
int vfab_nl_link_set_up(struct nl_sock *sk, int ifindex, bool up);
/* The peer of a veth ifindex: its ifindex in the peer's namespace, or -errno. */
int vfab_nl_iflink(struct nl_sock *sk, int ifindex);

/*
 * The 802.1Q VLAN `name` (id `vlan`) on the netdev `lower_ifindex`, down;
 * it takes the lower's MAC and MTU.
 */
int vfab_nl_vlan_add(struct nl_sock *sk, const char *name, int lower_ifindex, uint16_t vlan);

/*
 * A bridge-mode macvlan `name` of lower_ifindex (in the current namespace),
 * created straight into the network namespace nsfd, down.
 */
int vfab_nl_macvlan_add(struct nl_sock *sk, const char *name, int lower_ifindex, int nsfd);

/* A veth pair `name` - `peer`, both in the current namespace, down. */
int vfab_nl_veth_add(struct nl_sock *sk, const char *name, const char *peer);

/*
 * A bridge, up, whose MTU stays what it was given when ports with a smaller
 * one join (a leaf's MTU is the largest of its members').
 */
int vfab_nl_bridge_add(struct nl_sock *sk, const char *name, uint32_t mtu);

/*
 * A VXLAN device `name` with network identifier vni on UDP 4789, its tunnels
 * from local4 (an IPv4 address of the current namespace, routed as any), of
 * MTU mtu, learning where each MAC is; a port of bridge master_ifindex, up.
 * A tunnel packet is VFAB_VXLAN_OVERHEAD bytes longer than its frame's IP
 * packet.
 */
#define VFAB_VXLAN_OVERHEAD 50 /* outer IPv4 20, UDP 8, VXLAN 8, inner Ethernet 14 */
int vfab_nl_vxlan_add(struct nl_sock *sk, const char *name, uint32_t vni, const uint8_t local4[4],
		      uint32_t mtu, int master_ifindex);

/*
 * Adds remote4 to the tunnels of VXLAN ifindex that frames for no known MAC
 * (broadcasts included) are copied to (the all-zero FDB entry, appended).
 */
int vfab_nl_vxlan_flood_add(struct nl_sock *sk, int ifindex, const uint8_t remote4[4]);

/* The MTU of ifindex, or -errno. */
int vfab_nl_link_mtu(struct nl_sock *sk, int ifindex);

/* Sets the MAC of `name`. */
int vfab_nl_link_set_mac(struct nl_sock *sk, const char *name, const uint8_t mac[6]);

/* An ifb device (the ingress side of a shaped link) called `name`, up. */
int vfab_nl_ifb_add(struct nl_sock *sk, const char *name);

/*
 * addr/prefix on ifindex (family AF_INET: 4 bytes, AF_INET6: 16). IPv6
 * addresses skip DAD: they become GIDs and gateways that must work at once.
 */
int vfab_nl_addr_add(struct nl_sock *sk, int ifindex, int family, const uint8_t *addr,
		     unsigned prefix);

/* dst/prefix via gw on ifindex, main table, static. */
int vfab_nl_route_add(struct nl_sock *sk, int ifindex, int family, const uint8_t *dst,
		      unsigned prefix, const uint8_t *gw);

/*
 * Writes /proc/sys/net/<key> ("ipv4/ip_forward") of the current namespace.
 * A key the kernel lacks (no IPv6, an older kernel) is not an error.
 */
int vfab_net_sysctl(const char *key, const char *value);

#endif /* VFAB_NETNS_NETCFG_H */
