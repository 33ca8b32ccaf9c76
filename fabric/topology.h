/* SPDX-License-Identifier: MIT */
/*
 * From a parsed config to the region's topology tables (nodes, HCAs, ports,
 * GID tables, links), plus the naming schemes other components must agree on.
 * * MAC of a node's netdev: 02:76:66:<fabric byte>:<node index>:<low>, where
 *   node index = the node's place in the config file, on whichever host of
 *   a multi-host cluster it runs (so MACs and GUIDs stay unique there), and
 *   low = hca index within the node + 0x10 * (port - 1) for a netdev bound to
 *         an HCA port (so port 1 of HCA h is ...:<h>), and
 *   low = 0x80 | netdev index for a netdev no HCA port is bound to;
 *   fabric byte = low byte of the FNV-1a hash of the fabric name;
 *   the gateway of a leaf that spans hosts: 02:76:66:<vni, 16 bits>:ff.
 * node_guid = sys_image_guid = the MAC-48 -> EUI-64 mapping of port 1's MAC
 *   without the U/L flip: 02:76:66:FB:NN:HH -> 0276:66ff:feFB:NNHH (printed
 *   as sysfs does). Each HCA is its own adapter, so both GUIDs are equal.
 * Links (in this order in links[]): per node, each HCA port's up link
 *   (port -> leaf) and down link (leaf -> port), then the node's loopback;
 *   after all nodes, per leaf its uplink (leaf -> spine) and downlink (spine
 *   -> leaf) when there is a spine. A shaped inter_node class gives the port
 *   links its bandwidth; its one-way latency is split over up + down (up gets
 *   the odd nanosecond) so that two nodes on one leaf see exactly latency_us;
 *   its loss sits on the up link only, so each attempt is lost with
 *   probability `loss`. A leaf's uplink and downlink carry (sum of the rates
 *   of the HCA ports on the leaf) / inter_node.oversubscription, and split
 *   fabric.spine.latency_us the same way, so crossing the spine adds exactly
 *   that. The loopback link (a message between two ports of one node, or a
 *   port and itself) is the intra_node class. Unshaped: rate 0, latency 0.
 * Leaves: leaves[k] is config leaf k (config_leaves.c): port.segment = the
 *   leaf of the port's netdev, port.subnet = that leaf's IPv4 network (network
 *   byte order); nodes[].netdevs[] name the leaf each veth joins.
 */
#ifndef VFAB_TOPOLOGY_H
#define VFAB_TOPOLOGY_H

#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "fabric/gid.h"
#include "fabric/region.h"

#define VFAB_MAC_OUI0 0x02 /* locally administered, unicast */
#define VFAB_MAC_OUI1 0x76
#define VFAB_MAC_OUI2 0x66

/*
 * Fills an empty region (nnodes == 0) from cfg (as the loader returned it:
 * leaves planned, defaults applied), then sets r->ready = 1. -EEXIST if the
 * region already has a topology, -E2BIG if cfg exceeds the region's tables.
 */
int vfab_topology_fill(struct vfab_region *r, const struct vfab_config *cfg);

/*
 * A private topology (topology_private.c): a heap struct vfab_region whose
 * header (fabric, rundir) and topology tables are filled from cfg by the
 * caller itself, so that every name, path, index and count a root process
 * uses comes from the config it parsed, never from the shared region (which
 * every local user may write). Free it with vfab_topology_private_free.
 */
int vfab_topology_private(const char *fabric, const char *rundir, const struct vfab_config *cfg,
			  struct vfab_region **out);
void vfab_topology_private_free(struct vfab_region *t);
/*
 * Copies the topology tables of private t into the empty shared region r
 * (vfabd, once, before anyone may use it) and sets r->ready. -EEXIST if r
 * already has a topology.
 */
int vfab_topology_publish(struct vfab_region *r, const struct vfab_region *t);

/*
 * (Re)publishes a port's GID table from its netdev's addresses, in order
 * (vfab_gid_table_build_ordered), and bumps gid_gen: for the fill, and for
 * whoever follows address changes at run time (raise IBV_EVENT_GID_CHANGE
 * after it). -ENOSPC when the addresses do not fit VFAB_PORT_GIDS.
 */
int vfab_topology_port_gids(struct vfab_port *port, const struct vfab_gid_addr *addrs, size_t n);

uint8_t vfab_topology_fabric_byte(const char *fabric);
/*
 * The one-way latencies the config gives each HCA port's links (node -> leaf,
 * leaf -> node: latency_us is node to node on one leaf, half per hop, up
 * gets the odd ns) and each leaf's to and from the spine: what the links of
 * a node on any host of the cluster start with.
 */
struct vfab_class_lat {
	uint32_t port_up_ns, port_down_ns;
	uint32_t leaf_up_ns, leaf_down_ns;
};
void vfab_topology_class_lat(const struct vfab_config *cfg, struct vfab_class_lat *out);

/* MAC of netdev `netdev` of node `node_idx` (scheme above); -ENOENT if unknown. */
int vfab_topology_netdev_mac(const char *fabric, const struct vfab_config *cfg, uint32_t node_idx,
			     const char *netdev, uint8_t mac[6]);

/*
 * The gateway MAC of a leaf that spans hosts (config vni): the same on every
 * host, whose routers all answer for the leaf's gateway address (an anycast
 * gateway). Its last byte, 0xff, is no netdev's.
 */
void vfab_topology_gateway_mac(uint32_t vni, uint8_t mac[6]);

/* enum ibv_mtu (1..5 = 256..4096) for a netdev MTU, as the kernel's iboe_get_mtu. */
uint32_t vfab_topology_active_mtu(uint32_t netdev_mtu);
/* The real width x lane-speed combination closest to mbps (ibverbs encoding). */
void vfab_topology_encode_speed(uint32_t mbps, uint8_t *active_width, uint8_t *active_speed);
/*
 * The sysfs ports/N/rate text without the newline, e.g. "100 Gb/sec (4X EDR)".
 * Returns its length or -ENOSPC / -EINVAL (unknown width).
 */
int vfab_topology_sysfs_rate(const struct vfab_port *p, char *buf, size_t len);

#endif /* VFAB_TOPOLOGY_H */
