/* SPDX-License-Identifier: MIT */
/*
 * The network of a fabric, built with libnl-route and never touching the
 * host's own namespace: one fabric namespace (/run/netns/vfab-<F>-fab) holding
 * a bridge per leaf (vfbr<k>), the host ends of the veths and, with more than
 * one leaf, the spine router (its gateway address on every bridge, forwarding
 * on); and per node a namespace whose netdevs (eth0, bond0, ...) are the
 * other ends. fabric_net.c builds the fabric namespace, node_net.c the nodes,
 * net_plan.c derives what a node's network must be from region and config.
 */
#ifndef VFAB_NETNS_FABRIC_NET_H
#define VFAB_NETNS_FABRIC_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"
#include "fabric/region.h"
#include "netns/ip_shape.h"
#include "netns/netns_file.h"

#define VFAB_NET_MAX_IFACES VFAB_CFG_MAX_NETDEVS
#define VFAB_NET_MAX_ROUTES 2 /* the spine's IPv4 and IPv6 aggregates */

/* One netdev of a node and the host end of its veth. */
struct vfab_net_iface {
	char name[VFAB_IFNAME_MAX];	/* inside the node: eth0, bond0, ... */
	char host_end[VFAB_IFNAME_MAX]; /* in the fabric namespace: <node>-v */
	char bridge[VFAB_IFNAME_MAX];	/* its leaf's bridge: vfbr<k> */
	uint8_t mac[6];
	uint32_t mtu;
	uint16_t vlan; /* the addresses go on the VLAN upper <name>.<vlan>; 0: on name */
	uint32_t naddrs;
	const struct vfab_cfg_addr *addrs; /* in the configured order */
	/* The links of the HCA port bound to it (ip_shape.h); zero: unshaped. */
	struct vfab_ip_shape ip_up, ip_down;
};

/* A route of a node towards the spine: dst/prefix via gw on iface[iface]. */
struct vfab_net_route {
	int family; /* AF_INET or AF_INET6 */
	uint8_t dst[16];
	uint8_t gw[16];
	uint8_t prefix;
	uint32_t iface;
};

struct vfab_net_node {
	const char *id;
	uint32_t niface;
	struct vfab_net_iface iface[VFAB_NET_MAX_IFACES];
	uint32_t nroutes;
	struct vfab_net_route route[VFAB_NET_MAX_ROUTES];
};

/*
 * Name of the host end of a node's netdev number k: "<node>-v" for eth0,
 * "<node>-v<k>" for the others; "vfn<node index>-<k>" when that would not fit
 * IFNAMSIZ (that form never ends in "-v..." so it cannot collide).
 */
int vfab_net_host_end_name(char *buf, size_t len, const char *node, uint32_t node_index,
			   uint32_t k);

/*
 * The first HCA port of node `node` (its own HCAs, not a shared one) bound
 * to netdev `netdev`: 0 with *hca and *port (from 1), or -ENOENT.
 */
int vfab_net_netdev_port(const struct vfab_region *r, uint32_t node, const char *netdev,
			 uint32_t *hca, uint32_t *port);

/* An unset address: every byte zero (net_plan.c). */
int vfab_net_addr_is_zero(const uint8_t *p, size_t len);

/*
 * The network of node `node` (index into r->nodes[]; cn is its config entry,
 * cfg_index its position in the config): its netdevs from the region (name,
 * MAC, MTU, leaf -> bridge) with the config's addresses, and, when the
 * spine is present, one route per family to the spine's aggregate via the
 * gateway of the first netdev that has an address on its leaf's routed
 * subnet. `out` points into cn (addresses): keep cn alive while using it.
 */
int vfab_net_plan_node(const struct vfab_region *r, uint32_t node, const struct vfab_cfg_node *cn,
		       uint32_t cfg_index, struct vfab_net_node *out);

/*
 * Create the fabric namespace: lo up, a bridge per leaf of the region (its
 * name and MTU) and, when the region has a spine, the router: each leaf's
 * gateway addresses on its bridge and IPv4/IPv6 forwarding.
 */
int vfab_net_fabric_create(const char *fabric, const struct vfab_region *r, char *err,
			   size_t errlen);

/*
 * Give a node (whose namespace is already published) its netdevs: veth pairs
 * made in the fabric namespace, each host end on its leaf's bridge and the
 * node end created straight in the node, MAC, MTU, addresses in order, IPv6
 * link-local by EUI-64 without DAD, all up; then its routes.
 */
int vfab_net_node_setup(const char *fabric, const struct vfab_net_node *node, char *err,
			size_t errlen);

/*
 * The addresses the kernel has on `ifname` in the node (link-local IPv6
 * omitted), "A/P,A/P", for `vfab status`.
 */
int vfab_net_node_addrs(const char *fabric, const char *node, const char *ifname, char *out,
			size_t len);

#endif /* VFAB_NETNS_FABRIC_NET_H */
