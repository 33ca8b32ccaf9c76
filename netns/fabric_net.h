/* SPDX-License-Identifier: MIT */
/*
 * The network of a fabric, built with libnl-route and never touching the
 * host's own namespace: one fabric namespace (/run/netns/vfab-<F>-fab) holding
 * bridge vfbr0 and the host ends of the veths, and per node a namespace whose
 * netdevs (eth0, ...) are the other ends.
 */
#ifndef VFAB_NETNS_FABRIC_NET_H
#define VFAB_NETNS_FABRIC_NET_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "fabric/config.h"
#include "netns/netns_file.h"

#define VFAB_BRIDGE_NAME "vfbr0"
#define VFAB_NET_MAX_IFACES VFAB_CFG_MAX_NETDEVS

/* One netdev of a node and the host end of its veth. */
struct vfab_net_iface {
	char name[VFAB_IFNAME_MAX];	/* inside the node: eth0, ... */
	char host_end[VFAB_IFNAME_MAX]; /* in the fabric namespace: <node>-v */
	uint8_t mac[6];
	uint32_t mtu;
	uint32_t naddrs;
	const struct vfab_cfg_addr *addrs;
};

struct vfab_net_node {
	const char *id;
	uint32_t niface;
	struct vfab_net_iface iface[VFAB_NET_MAX_IFACES];
};

/*
 * Name of the host end of a node's netdev number k: "<node>-v" for eth0,
 * "<node>-v<k>" for the others; "vfn<node index>-<k>" when that would not fit
 * IFNAMSIZ (that form never ends in "-v..." so it cannot collide).
 */
int vfab_net_host_end_name(char *buf, size_t len, const char *node, uint32_t node_index,
			   uint32_t k);

/* Create the fabric namespace with vfbr0 (up, `mtu`) and lo up. */
int vfab_net_fabric_create(const char *fabric, uint32_t mtu, char *err, size_t errlen);

/*
 * Give a node (whose namespace is already published) its netdevs: veth pairs
 * made in the fabric namespace with the node end created straight in the
 * node, MAC, MTU, addresses, IPv6 link-local by EUI-64 without DAD, all up.
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
