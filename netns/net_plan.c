/* SPDX-License-Identifier: MIT */
/*
 * What a node's network must look like (fabric_net.h vfab_net_plan_node):
 * a pure function of region and config, so that it is checked without
 * namespaces, and so that the veths, MACs and MTUs are exactly those the
 * region's GID tables and ports were derived from.
 */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "base/fsutil.h"
#include "fabric/ipnet.h"
#include "netns/fabric_net.h"

int vfab_net_host_end_name(char *buf, size_t len, const char *node, uint32_t node_index, uint32_t k)
{
	char name[64];

	if (k == 0)
		snprintf(name, sizeof(name), "%s-v", node);
	else
		snprintf(name, sizeof(name), "%s-v%u", node, k);
	if (strlen(name) >= IFNAMSIZ)
		snprintf(name, sizeof(name), "vfn%u-%u", node_index, k);
	return vfab_pathf(buf, len, "%s", name);
}

static const struct vfab_cfg_netdev *config_netdev(const struct vfab_cfg_node *cn, const char *name)
{
	int d = vfab_config_netdev_index(cn, name);

	return d < 0 ? NULL : &cn->netdevs[d];
}

/* Does the interface hold an address of `family` inside net/prefix? */
static int has_addr_in(const struct vfab_net_iface *ifc, int family, const uint8_t *net,
		       unsigned prefix)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (uint32_t a = 0; a < ifc->naddrs; a++)
		if (ifc->addrs[a].family == family &&
		    vfab_ipnet_contains(net, prefix, ifc->addrs[a].addr, len))
			return 1;
	return 0;
}

int vfab_net_addr_is_zero(const uint8_t *p, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (p[i])
			return 0;
	return 1;
}

/*
 * The route of one family towards the spine's aggregate: via the gateway of
 * the first netdev (in the node's order: eth0 first) whose leaf is routed
 * and on which the node has an address of that leaf (a gateway is only
 * reachable from an address on its subnet). None when the aggregate is the
 * leaf's own subnet (a lone IPv6 leaf): that is on-link already.
 */
static void plan_route(const struct vfab_region *r, const struct vfab_node *rn,
		       struct vfab_net_node *out, int family)
{
	const struct vfab_spine *s = &r->spine;
	size_t len = family == AF_INET ? 4 : 16;
	const uint8_t *agg = family == AF_INET ? (const uint8_t *)&s->ipv4_net : s->ipv6_net;
	unsigned agg_prefix = family == AF_INET ? s->ipv4_prefix : s->ipv6_prefix;

	for (uint32_t d = 0; d < out->niface; d++) {
		const struct vfab_leaf *l = &r->leaves[rn->netdevs[d].leaf];
		const uint8_t *net =
		    family == AF_INET ? (const uint8_t *)&l->ipv4_net : l->ipv6_net;
		const uint8_t *gw = family == AF_INET ? (const uint8_t *)&l->ipv4_gw : l->ipv6_gw;
		unsigned prefix = family == AF_INET ? l->ipv4_prefix : l->ipv6_prefix;
		struct vfab_net_route *rt;

		if (prefix == 0 || vfab_net_addr_is_zero(gw, len) ||
		    !has_addr_in(&out->iface[d], family, net, prefix))
			continue;
		if (agg_prefix >= prefix && vfab_ipnet_contains(net, prefix, agg, len))
			return;
		rt = &out->route[out->nroutes++];
		rt->family = family;
		memcpy(rt->dst, agg, len);
		rt->prefix = (uint8_t)agg_prefix;
		memcpy(rt->gw, gw, len);
		rt->iface = d;
		return;
	}
}

int vfab_net_netdev_port(const struct vfab_region *r, uint32_t node, const char *netdev,
			 uint32_t *hca, uint32_t *port)
{
	for (uint32_t h = 0; h < r->nhcas && h < VFAB_MAX_HCAS; h++) {
		const struct vfab_hca *x = &r->hcas[h];

		if (!x->in_use || x->shared || x->node != node)
			continue;
		for (uint32_t p = 0; p < x->nports && p < VFAB_MAX_PORTS; p++)
			if (strcmp(x->ports[p].netdev, netdev) == 0) {
				*hca = h;
				*port = p + 1;
				return 0;
			}
	}
	return -ENOENT;
}

int vfab_net_plan_node(const struct vfab_region *r, uint32_t node, const struct vfab_cfg_node *cn,
		       uint32_t cfg_index, struct vfab_net_node *out)
{
	const struct vfab_node *rn;
	uint32_t hca, port;
	int ret;

	if (node >= r->nnodes || node >= VFAB_MAX_NODES)
		return -EINVAL;
	rn = &r->nodes[node];
	if (rn->nnetdevs > VFAB_NET_MAX_IFACES)
		return -E2BIG;
	memset(out, 0, sizeof(*out));
	out->id = cn->id;
	for (uint32_t d = 0; d < rn->nnetdevs; d++) {
		const struct vfab_node_netdev *nd = &rn->netdevs[d];
		const struct vfab_cfg_netdev *cd = config_netdev(cn, nd->name);
		struct vfab_net_iface *ifc = &out->iface[out->niface++];

		if (!cd || nd->leaf >= r->nleaves || nd->leaf >= VFAB_MAX_LEAVES)
			return -EINVAL; /* region and config disagree */
		snprintf(ifc->name, sizeof(ifc->name), "%s", nd->name);
		ret = vfab_net_host_end_name(ifc->host_end, sizeof(ifc->host_end), cn->id,
					     cfg_index, d);
		if (ret)
			return ret;
		snprintf(ifc->bridge, sizeof(ifc->bridge), "%s", r->leaves[nd->leaf].bridge);
		memcpy(ifc->mac, nd->mac, sizeof(ifc->mac));
		ifc->mtu = nd->mtu;
		ifc->vlan = nd->vlan;
		ifc->naddrs = cd->naddrs;
		ifc->addrs = cd->addrs;
		if (!vfab_net_netdev_port(r, node, nd->name, &hca, &port)) {
			const struct vfab_port *pt = &r->hcas[hca].ports[port - 1];

			if (pt->link_up < r->nlinks && pt->link_down < r->nlinks) {
				vfab_ip_shape_of_link(&r->links[pt->link_up], &ifc->ip_up);
				vfab_ip_shape_of_link(&r->links[pt->link_down], &ifc->ip_down);
			}
		}
	}
	if (!r->spine.present)
		return 0;
	plan_route(r, rn, out, AF_INET);
	if (r->spine.has_ipv6)
		plan_route(r, rn, out, AF_INET6);
	return 0;
}
