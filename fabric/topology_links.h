/* SPDX-License-Identifier: MIT */
/*
 * The link tables of the topology fill (internal to topology*.c): every link
 * direction the link model can reserve time on, with the rate, latency and
 * loss the config gives it. The scheme is documented in topology.h.
 */
#ifndef VFAB_TOPOLOGY_LINKS_H
#define VFAB_TOPOLOGY_LINKS_H

#include "config/config.h"
#include "fabric/region.h"

/* Links a config needs: 2 per HCA port, 1 loopback per node, 2 per leaf with a spine. */
uint32_t topo_links_needed(const struct vfab_config *cfg);

/* The up (port -> leaf) and down (leaf -> port) links of one HCA port. */
void topo_port_links(struct vfab_region *r, const struct vfab_config *cfg, const char *node,
		     const char *hca, uint32_t port_no, struct vfab_port *port);

/* The node's loopback link (intra_node class); returns its index. */
uint32_t topo_node_loopback(struct vfab_region *r, const struct vfab_config *cfg, const char *node);

/* leaves[] and the spine, with uplinks sized by oversubscription. Needs the ports filled. */
void topo_fill_leaves(struct vfab_region *r, const struct vfab_config *cfg);

#endif /* VFAB_TOPOLOGY_LINKS_H */
