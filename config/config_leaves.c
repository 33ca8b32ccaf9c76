/* SPDX-License-Identifier: MIT */
/*
 * Leaves (configs/README.md, "Leaves and addressing"): the netdevs with one
 * name on the nodes of one leaf group form an L2 segment, a leaf. Each leaf
 * gets an IPv4 subnet, the network of the first IPv4 address configured on it
 * or else the next free block of fabric.subnet's size, and an IPv6 prefix the
 * same way (derived ones only with fabric.ipv6). With more than one leaf a
 * spine routes between them from the last-but-one address of every subnet
 * (the gateway). Netdevs without addresses get subnet + (position + 1).
 */
#include "config_parse.h"
#include "fabric/ipnet.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

/* Where a leaf's subnet was learned from; derived ones have none. */
struct origin {
	bool set;
	uint32_t node, netdev, addr;
};

struct plan {
	struct cfg_parse *p;
	struct vfab_config *cfg;
	uint32_t nplanes;
	char plane[VFAB_MAX_LEAVES][VFAB_IFNAME_MAX];
	struct origin v4[VFAB_MAX_LEAVES], v6[VFAB_MAX_LEAVES];
};

static bool is_link_local(const struct vfab_cfg_addr *a)
{
	return a->family == AF_INET6 && a->addr[0] == 0xfe && (a->addr[1] & 0xc0) == 0x80;
}

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static const struct vfab_cfg_addr *origin_addr(const struct plan *pl, const struct origin *o)
{
	return &pl->cfg->nodes[o->node].netdevs[o->netdev].addrs[o->addr];
}

static int fail_at_addr(struct plan *pl, uint32_t node, uint32_t d, uint32_t a, const char *fmt,
			const char *x, const char *y, const char *z)
{
	char path[CFG_PATH_MAX], msg[256];

	snprintf(msg, sizeof(msg), fmt, x, y, z);
	return cfg_fail_line(&pl->p->ctx, pl->cfg->nodes[node].netdevs[d].addrs[a].line,
			     cfg_addr_path(path, pl->p, node, d, a), "%s", msg);
}

/* ---- groups, planes, leaves ---- */

static int assign_groups(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;
	bool used[VFAB_CFG_MAX_GROUPS] = {false};
	uint32_t i, g;

	cfg->ngroups = 0;
	for (i = 0; i < cfg->nnodes; i++) {
		struct vfab_cfg_node *n = &cfg->nodes[i];

		if (!pl->p->lines[i].leaf)
			n->group = cfg->leaf_size ? i / cfg->leaf_size : 0;
		used[n->group] = true;
		if (n->group + 1 > cfg->ngroups)
			cfg->ngroups = n->group + 1;
	}
	for (g = 0; g < cfg->ngroups; g++) {
		if (used[g])
			continue;
		for (i = 0; i < cfg->nnodes; i++)
			if (cfg->nodes[i].group > g && pl->p->lines[i].leaf) {
				char path[CFG_PATH_MAX];

				snprintf(path, sizeof(path), "nodes[%u].leaf", i);
				return cfg_fail_line(&pl->p->ctx, pl->p->lines[i].leaf, path,
						     "leaf %u has no nodes: leaves are numbered "
						     "from 0 without gaps",
						     g);
			}
	}
	return 0;
}

static int plane_of(struct plan *pl, const char *name)
{
	for (uint32_t k = 0; k < pl->nplanes; k++)
		if (!strcmp(pl->plane[k], name))
			return (int)k;
	if (pl->nplanes == VFAB_MAX_LEAVES)
		return -E2BIG;
	snprintf(pl->plane[pl->nplanes], VFAB_IFNAME_MAX, "%s", name);
	return (int)pl->nplanes++;
}

static int too_many_leaves(struct plan *pl, uint32_t node)
{
	char path[CFG_PATH_MAX];

	snprintf(path, sizeof(path), "nodes[%u]", node);
	return cfg_fail_line(&pl->p->ctx, pl->cfg->nodes[node].line, path,
			     "too many leaves (at most %d: one per netdev name per leaf group)",
			     VFAB_MAX_LEAVES);
}

/* One L2 segment carries one VLAN for RoCE: its members must agree. */
static int vlan_mismatch(struct plan *pl, uint32_t node, const struct vfab_cfg_leaf *l)
{
	char path[CFG_PATH_MAX];

	snprintf(path, sizeof(path), "nodes[%u].netdevs", node);
	return cfg_fail_line(&pl->p->ctx, pl->cfg->nodes[node].line, path,
			     "%s: the nodes of %s differ in their vlan (%u elsewhere): one VLAN "
			     "per leaf",
			     l->netdev, l->name[0] ? l->name : "this leaf", (unsigned)l->vlan);
}

/* Plane-major: leaf index = group on a single-plane fabric. */
static int build_leaves(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;

	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++)
			if (plane_of(pl, cfg->nodes[i].netdevs[d].name) < 0)
				return too_many_leaves(pl, i);
	cfg->leaves = calloc(VFAB_MAX_LEAVES, sizeof(*cfg->leaves));
	if (!cfg->leaves)
		return -ENOMEM;
	for (uint32_t k = 0; k < pl->nplanes; k++) {
		for (uint32_t g = 0; g < cfg->ngroups; g++) {
			struct vfab_cfg_leaf *l = NULL;

			for (uint32_t i = 0; i < cfg->nnodes; i++) {
				struct vfab_cfg_node *n = &cfg->nodes[i];
				int d = vfab_config_netdev_index(n, pl->plane[k]);

				if (n->group != g || d < 0)
					continue;
				if (!l) {
					if (cfg->nleaves == VFAB_MAX_LEAVES)
						return too_many_leaves(pl, i);
					l = &cfg->leaves[cfg->nleaves++];
					l->group = g;
					l->plane = k;
					snprintf(l->netdev, sizeof(l->netdev), "%s", pl->plane[k]);
					if (pl->nplanes == 1)
						snprintf(l->name, sizeof(l->name), "leaf%u", g);
					else
						snprintf(l->name, sizeof(l->name), "leaf%u-%s", g,
							 pl->plane[k]);
				}
				if (l->nmembers && n->netdevs[d].vlan != l->vlan)
					return vlan_mismatch(pl, i, l);
				l->vlan = n->netdevs[d].vlan;
				n->netdevs[d].leaf = cfg->nleaves - 1;
				l->nmembers++;
				if (n->netdevs[d].mtu > l->mtu)
					l->mtu = n->netdevs[d].mtu;
			}
		}
	}
	cfg->spine = cfg->nleaves > 1;
	return 0;
}

/* ---- subnets learned from configured addresses ---- */

static void set_net(struct vfab_cfg_addr *net, const struct vfab_cfg_addr *a)
{
	*net = *a;
	net->line = a->line;
	vfab_ipnet_mask(net->addr, a->prefix, addr_len(a->family));
	cfg_addr_format(net);
}

static struct vfab_cfg_addr *leaf_net(struct vfab_cfg_leaf *l, int family)
{
	return family == AF_INET ? &l->ipv4 : &l->ipv6;
}

/* The first global address of `family` on a leaf's netdevs names its subnet. */
static int learn(struct plan *pl, int family)
{
	struct vfab_config *cfg = pl->cfg;
	struct origin *orig = family == AF_INET ? pl->v4 : pl->v6;

	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++) {
			struct vfab_cfg_netdev *nd = &cfg->nodes[i].netdevs[d];
			struct vfab_cfg_leaf *l = &cfg->leaves[nd->leaf];

			for (uint32_t a = 0; a < nd->naddrs && !orig[nd->leaf].set; a++) {
				if (nd->addrs[a].family != family || is_link_local(&nd->addrs[a]))
					continue;
				set_net(leaf_net(l, family), &nd->addrs[a]);
				orig[nd->leaf] = (struct origin){true, i, d, a};
			}
		}
	}
	/* A subnet on two segments could not be routed: the spine needs one way. */
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		struct vfab_cfg_addr *nk = leaf_net(&cfg->leaves[k], family);

		for (uint32_t j = 0; orig[k].set && j < k; j++) {
			struct vfab_cfg_addr *nj = leaf_net(&cfg->leaves[j], family);

			if (!orig[j].set || !vfab_ipnet_overlap(nj->addr, nj->prefix, nk->addr,
								nk->prefix, addr_len(family)))
				continue;
			return fail_at_addr(pl, orig[k].node, orig[k].netdev, orig[k].addr,
					    "%s overlaps %s, the subnet of %s: every leaf (L2 "
					    "segment) needs its own subnet",
					    origin_addr(pl, &orig[k])->text, nj->text,
					    cfg->leaves[j].name);
		}
	}
	return 0;
}

/* ---- derived subnets ---- */

static bool net_free(const struct vfab_config *cfg, int family, const uint8_t *net, unsigned prefix)
{
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		const struct vfab_cfg_addr *o = leaf_net(&cfg->leaves[k], family);

		if (o->family &&
		    vfab_ipnet_overlap(o->addr, o->prefix, net, prefix, addr_len(family)))
			return false;
	}
	return true;
}

/*
 * Leaf (plane k, group g) would naturally take block k * ngroups + g after the
 * base; blocks taken by learned subnets are skipped, so defaults never clash.
 */
static int derive(struct plan *pl, int family)
{
	struct vfab_config *cfg = pl->cfg;
	const struct vfab_cfg_addr *base = family == AF_INET ? &cfg->subnet : &cfg->ipv6_prefix;
	unsigned prefix = family == AF_INET ? base->prefix : 64;
	uint64_t nblocks, first = 0;

	if (family == AF_INET) {
		nblocks = 1ull << (base->prefix - CFG_SUBNET_PREFIX);
		first = (cfg_addr_v4(base) - CFG_SUBNET_BASE) >> (32 - base->prefix);
	} else {
		nblocks = 64 - base->prefix >= 16 ? 1ull << 16 : 1ull << (64 - base->prefix);
	}
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		struct vfab_cfg_leaf *l = &cfg->leaves[k];
		struct vfab_cfg_addr *net = leaf_net(l, family);
		uint64_t natural = first + (uint64_t)l->plane * cfg->ngroups + l->group, t;

		if (net->family)
			continue;
		for (t = 0; t < nblocks; t++) {
			uint64_t b = (natural + t) % nblocks;
			struct vfab_cfg_addr cand = {.family = family, .prefix = (uint8_t)prefix};

			if (family == AF_INET) {
				uint32_t v = CFG_SUBNET_BASE + (uint32_t)(b << (32 - prefix));

				cand.addr[0] = (uint8_t)(v >> 24);
				cand.addr[1] = (uint8_t)(v >> 16);
				cand.addr[2] = (uint8_t)(v >> 8);
				cand.addr[3] = (uint8_t)v;
			} else {
				memcpy(cand.addr, base->addr, 16);
				vfab_ipnet_add(cand.addr, 8, b);
			}
			if (net_free(cfg, family, cand.addr, prefix)) {
				cfg_addr_format(&cand);
				*net = cand;
				break;
			}
		}
		if (t == nblocks)
			return cfg_fail_line(
			    &pl->p->ctx, family == AF_INET ? pl->p->subnet_line : 0,
			    family == AF_INET ? "fabric.subnet" : "fabric.ipv6_prefix",
			    "no free /%u left for %s (%u leaves)", prefix, l->name, cfg->nleaves);
	}
	return 0;
}

/* ---- rules for the configured addresses ---- */

static int check_members(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;

	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++) {
			const struct vfab_cfg_netdev *nd = &cfg->nodes[i].netdevs[d];
			const struct vfab_cfg_leaf *l = &cfg->leaves[nd->leaf];

			for (uint32_t a = 0; a < nd->naddrs; a++) {
				const struct vfab_cfg_addr *ad = &nd->addrs[a];

				if (ad->family == AF_INET &&
				    !vfab_ipnet_contains(l->ipv4.addr, l->ipv4.prefix, ad->addr, 4))
					return fail_at_addr(pl, i, d, a,
							    "%s is not in %s, the subnet of %s "
							    "(one IPv4 subnet per leaf)",
							    ad->text, l->ipv4.text, l->name);
				if (ad->family != AF_INET6 || is_link_local(ad))
					continue;
				/* Several IPv6 prefixes may share a leaf, never the reverse. */
				for (uint32_t k = 0; k < cfg->nleaves; k++) {
					const struct vfab_cfg_addr *o = &cfg->leaves[k].ipv6;

					if (k == nd->leaf || !o->family ||
					    !vfab_ipnet_overlap(o->addr, o->prefix, ad->addr,
								ad->prefix, 16))
						continue;
					return fail_at_addr(pl, i, d, a,
							    "%s overlaps %s, the IPv6 prefix of "
							    "%s: a prefix cannot span two leaves",
							    ad->text, o->text, cfg->leaves[k].name);
				}
			}
		}
	}
	return 0;
}

/* The last-but-one address of a network: all host bits set but the lowest. */
static void gateway_of(const struct vfab_cfg_addr *net, struct vfab_cfg_addr *gw)
{
	size_t len = addr_len(net->family);

	*gw = *net;
	for (size_t i = 0; i < len; i++) {
		unsigned keep = net->prefix > 8 * i ? net->prefix - 8 * i : 0;

		if (keep < 8)
			gw->addr[i] |= (uint8_t)(0xff >> keep);
	}
	gw->addr[len - 1] &= 0xfe;
	gw->line = 0;
	cfg_addr_format(gw);
}

static int gateways(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;

	for (uint32_t k = 0; cfg->spine && k < cfg->nleaves; k++) {
		struct vfab_cfg_leaf *l = &cfg->leaves[k];

		/*
		 * The router's leg on a leaf is its untagged bridge: a VLAN leaf
		 * gets no gateway, so its subnet is reached on-link only.
		 */
		if (l->vlan)
			continue;
		if (l->ipv4.prefix > 30) {
			const struct origin *o = &pl->v4[k];

			return fail_at_addr(pl, o->node, o->netdev, o->addr,
					    "%s: a /%s subnet leaves no address for the spine "
					    "(%s needs a gateway)",
					    origin_addr(pl, o)->text,
					    l->ipv4.prefix == 31 ? "31" : "32", l->name);
		}
		gateway_of(&l->ipv4, &l->ipv4_gw);
		if (l->ipv6.family && l->ipv6.prefix <= 126)
			gateway_of(&l->ipv6, &l->ipv6_gw);
	}
	return 0;
}

/* ---- defaults ---- */

static int add_default(struct plan *pl, uint32_t node, struct vfab_cfg_netdev *nd,
		       const struct vfab_cfg_addr *net, uint32_t pos)
{
	const struct vfab_cfg_leaf *l = &pl->cfg->leaves[nd->leaf];
	struct vfab_cfg_addr *a;

	if (net->family == AF_INET) {
		uint64_t room = (1ull << (32 - net->prefix)) - 2 - (pl->cfg->spine ? 1 : 0);

		if (net->prefix > 30 || pos + 1 > room) {
			const struct origin *o = &pl->v4[nd->leaf];
			char path[CFG_PATH_MAX];

			if (o->set)
				return fail_at_addr(pl, o->node, o->netdev, o->addr,
						    "%s has no room for the default address of "
						    "node %s in %s",
						    net->text, pl->cfg->nodes[node].id, l->name);
			snprintf(path, sizeof(path), "fabric.subnet");
			return cfg_fail_line(&pl->p->ctx, pl->p->subnet_line, path,
					     "%s has room for %llu nodes, %s has %u",
					     pl->cfg->subnet.text, (unsigned long long)room,
					     l->name, l->nmembers);
		}
	}
	if (nd->naddrs == VFAB_CFG_MAX_ADDRS)
		return -E2BIG;
	a = &nd->addrs[nd->naddrs++];
	*a = *net;
	a->line = 0;
	vfab_ipnet_add(a->addr, addr_len(net->family), pos + 1);
	cfg_addr_format(a);
	return 0;
}

/* Position = how many earlier nodes have a netdev on that leaf. */
static int default_addresses(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;
	uint32_t pos[VFAB_MAX_LEAVES] = {0};

	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		const struct cfg_node_lines *ln = &pl->p->lines[i];

		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++) {
			struct vfab_cfg_netdev *nd = &cfg->nodes[i].netdevs[d];
			const struct vfab_cfg_leaf *l = &cfg->leaves[nd->leaf];
			uint32_t at = pos[nd->leaf]++;

			if (ln->has_addresses || ln->entry_addresses[d] || nd->naddrs)
				continue;
			if (add_default(pl, i, nd, &l->ipv4, at))
				return -EINVAL;
			if (cfg->ipv6 && l->ipv6.family && add_default(pl, i, nd, &l->ipv6, at))
				return -EINVAL;
		}
	}
	return 0;
}

static int check_gateway_use(struct plan *pl)
{
	struct vfab_config *cfg = pl->cfg;

	for (uint32_t i = 0; cfg->spine && i < cfg->nnodes; i++) {
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++) {
			const struct vfab_cfg_netdev *nd = &cfg->nodes[i].netdevs[d];
			const struct vfab_cfg_leaf *l = &cfg->leaves[nd->leaf];

			for (uint32_t a = 0; a < nd->naddrs; a++) {
				const struct vfab_cfg_addr *ad = &nd->addrs[a];
				const struct vfab_cfg_addr *gw =
				    ad->family == AF_INET ? &l->ipv4_gw : &l->ipv6_gw;

				if (gw->family && !memcmp(gw->addr, ad->addr, addr_len(ad->family)))
					return fail_at_addr(pl, i, d, a,
							    "%s is the spine's address on %s (its "
							    "gateway)%s",
							    ad->text, l->name, "");
			}
		}
	}
	return 0;
}

int cfg_plan_leaves(struct cfg_parse *p)
{
	struct plan *pl = calloc(1, sizeof(*pl));
	int rc;

	if (!pl)
		return -ENOMEM;
	pl->p = p;
	pl->cfg = p->cfg;
	rc = assign_groups(pl);
	if (!rc)
		rc = build_leaves(pl);
	if (!rc)
		rc = learn(pl, AF_INET);
	if (!rc)
		rc = learn(pl, AF_INET6);
	if (!rc)
		rc = derive(pl, AF_INET);
	if (!rc && p->cfg->ipv6)
		rc = derive(pl, AF_INET6);
	if (!rc)
		rc = check_members(pl);
	if (!rc)
		rc = gateways(pl);
	if (!rc)
		rc = default_addresses(pl);
	if (!rc)
		rc = check_gateway_use(pl);
	free(pl);
	return rc;
}
