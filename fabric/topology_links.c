/* SPDX-License-Identifier: MIT */
/* Links, leaves and the spine of the topology fill (scheme in topology.h). */
#include "fabric/topology_links.h"
#include "fabric/ipnet.h"
#include "fabric/topology.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

uint32_t topo_links_needed(const struct vfab_config *cfg)
{
	uint32_t links = cfg->nnodes + (cfg->spine ? 2 * cfg->nleaves : 0);

	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t h = 0; h < cfg->nodes[i].nhcas; h++)
			links += 2 * cfg->nodes[i].hcas[h].nports;
	return links;
}

static uint32_t add_link(struct vfab_region *r, enum vfab_link_kind kind, const char *name,
			 uint64_t rate_bps, uint32_t latency_ns, uint32_t loss_ppm)
{
	uint32_t idx = r->nlinks++;
	struct vfab_link *l = &r->links[idx];

	size_t len = strnlen(name, sizeof(l->name) - 1); /* long names are cut, not refused */

	l->in_use = 1;
	l->kind = kind;
	memcpy(l->name, name, len);
	l->name[len] = '\0';
	l->rate_bps = rate_bps;
	l->latency_ns = latency_ns;
	l->loss_ppm = loss_ppm;
	return idx;
}

static uint64_t class_rate(const struct vfab_cfg_link *l)
{
	return l->has_bandwidth ? (uint64_t)llround(l->bandwidth_gbps * 1e9) : 0;
}

static uint32_t us_to_ns(double us)
{
	return (uint32_t)lround(us * 1e3);
}

void vfab_topology_class_lat(const struct vfab_config *cfg, struct vfab_class_lat *out)
{
	const struct vfab_cfg_link *l = &cfg->inter_node;
	uint32_t lat = l->has_latency ? us_to_ns(l->latency_us) : 0;
	uint32_t spine = us_to_ns(cfg->spine_latency_us);

	out->port_up_ns = lat - lat / 2;
	out->port_down_ns = lat / 2;
	out->leaf_up_ns = spine - spine / 2;
	out->leaf_down_ns = spine / 2;
}

void topo_port_links(struct vfab_region *r, const struct vfab_config *cfg, const char *node,
		     const char *hca, uint32_t port_no, struct vfab_port *port)
{
	const struct vfab_cfg_link *l = &cfg->inter_node;
	uint32_t loss = (uint32_t)lround(l->loss * 1e6);
	char name[VFAB_NAME_MAX * 3];
	struct vfab_class_lat lat;

	vfab_topology_class_lat(cfg, &lat);
	snprintf(name, sizeof(name), "%s/%s/%u/up", node, hca, port_no);
	port->link_up = add_link(r, VFAB_LINK_NODE_UP, name, class_rate(l), lat.port_up_ns, loss);
	snprintf(name, sizeof(name), "%s/%s/%u/down", node, hca, port_no);
	port->link_down =
	    add_link(r, VFAB_LINK_NODE_DOWN, name, class_rate(l), lat.port_down_ns, 0);
}

uint32_t topo_node_loopback(struct vfab_region *r, const struct vfab_config *cfg, const char *node)
{
	const struct vfab_cfg_link *l = &cfg->intra_node;
	char name[VFAB_NAME_MAX * 2];

	snprintf(name, sizeof(name), "%s/loopback", node);
	return add_link(r, VFAB_LINK_LOOPBACK, name, class_rate(l),
			l->has_latency ? us_to_ns(l->latency_us) : 0,
			(uint32_t)lround(l->loss * 1e6));
}

static uint32_t v4_nbo(const struct vfab_cfg_addr *a)
{
	uint32_t v;

	memcpy(&v, a->addr, 4);
	return v;
}

/* Node-facing capacity of a leaf: the rates of the HCA ports on its netdevs. */
static uint64_t node_capacity(const struct vfab_region *r, uint32_t leaf)
{
	uint64_t sum = 0;

	for (uint32_t h = 0; h < r->nhcas; h++)
		for (uint32_t p = 0; p < r->hcas[h].nports; p++) {
			const struct vfab_port *pt = &r->hcas[h].ports[p];

			if (pt->segment != leaf)
				continue;
			if (!r->links[pt->link_down].rate_bps)
				return 0; /* an unshaped port: the leaf is unshaped too */
			sum += r->links[pt->link_down].rate_bps;
		}
	return sum;
}

static void leaf_links(struct vfab_region *r, const struct vfab_config *cfg, struct vfab_leaf *l)
{
	double ratio = cfg->inter_node.oversubscription;
	uint64_t up =
	    l->node_capacity_bps ? (uint64_t)llround((double)l->node_capacity_bps / ratio) : 0;
	char name[VFAB_NAME_MAX * 2];
	struct vfab_class_lat lat;

	l->oversub_milli = (uint32_t)lround(ratio * 1000.0);
	l->uplink = l->downlink = VFAB_LINK_NONE;
	if (!cfg->spine)
		return; /* nothing leaves a lone leaf */
	vfab_topology_class_lat(cfg, &lat);
	snprintf(name, sizeof(name), "%s/up", l->name);
	l->uplink = add_link(r, VFAB_LINK_LEAF_UP, name, up, lat.leaf_up_ns, 0);
	snprintf(name, sizeof(name), "%s/down", l->name);
	l->downlink = add_link(r, VFAB_LINK_LEAF_DOWN, name, up, lat.leaf_down_ns, 0);
}

/* Folds an IPv6 prefix into the spine's aggregate (the first one starts it). */
static void fold_ipv6(struct vfab_spine *s, const uint8_t *net, uint8_t prefix)
{
	unsigned common;

	if (!s->has_ipv6) {
		memcpy(s->ipv6_net, net, 16);
		s->ipv6_prefix = prefix;
		s->has_ipv6 = 1;
		return;
	}
	common = vfab_ipnet_common(s->ipv6_net, net, 16);
	if (common < s->ipv6_prefix)
		s->ipv6_prefix = (uint8_t)common;
	vfab_ipnet_mask(s->ipv6_net, s->ipv6_prefix, 16);
}

/*
 * A router is there when leaves must be joined, or when other hosts' leaves
 * (cfg->routes, multi-host) are reached through it: the aggregate the nodes
 * route to it then covers those leaves too.
 */
static void fill_spine(struct vfab_region *r, const struct vfab_config *cfg)
{
	struct vfab_spine *s = &r->spine;
	const uint8_t v4base[4] = {198, 18, 0, 0};

	memset(s, 0, sizeof(*s));
	s->present = r->nleaves > 1 || cfg->nroutes > 0;
	if (!s->present)
		return;
	memcpy(&s->ipv4_net, v4base, 4);
	s->ipv4_prefix = 15; /* the config keeps every IPv4 address in 198.18.0.0/15 */
	for (uint32_t k = 0; k < r->nleaves; k++)
		if (r->leaves[k].ipv6_prefix)
			fold_ipv6(s, r->leaves[k].ipv6_net, r->leaves[k].ipv6_prefix);
	for (uint32_t k = 0; k < cfg->nroutes; k++)
		if (cfg->routes[k].dst.family == AF_INET6)
			fold_ipv6(s, cfg->routes[k].dst.addr, cfg->routes[k].dst.prefix);
}

void topo_fill_leaves(struct vfab_region *r, const struct vfab_config *cfg)
{
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		const struct vfab_cfg_leaf *cl = &cfg->leaves[k];
		struct vfab_leaf *l = &r->leaves[k];

		l->group = cl->group;
		snprintf(l->name, sizeof(l->name), "%s", cl->name);
		snprintf(l->netdev, sizeof(l->netdev), "%s", cl->netdev);
		snprintf(l->bridge, sizeof(l->bridge), "vfbr%u", k);
		l->mtu = cl->mtu;
		l->nmembers = cl->nmembers;
		l->ipv4_net = v4_nbo(&cl->ipv4);
		l->ipv4_prefix = cl->ipv4.prefix;
		l->ipv4_gw = cl->ipv4_gw.family ? v4_nbo(&cl->ipv4_gw) : 0;
		if (cl->ipv6.family) {
			memcpy(l->ipv6_net, cl->ipv6.addr, 16);
			l->ipv6_prefix = cl->ipv6.prefix;
		}
		if (cl->ipv6_gw.family)
			memcpy(l->ipv6_gw, cl->ipv6_gw.addr, 16);
		l->node_capacity_bps = node_capacity(r, k);
		leaf_links(r, cfg, l);
		l->in_use = 1;
	}
	r->nleaves = cfg->nleaves;
	fill_spine(r, cfg);
}
