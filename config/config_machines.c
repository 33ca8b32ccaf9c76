/* SPDX-License-Identifier: MIT */
/*
 * Several hosts (configs/README.md "Several hosts"). hosts[].uplink makes a
 * hosts[] entry a machine of a multi-host cluster, nodes[].host (or a host's
 * pods) puts each node on one, and `vfab up --host ID` keeps that machine's
 * share. The other hosts' leaves stay reachable through their uplinks: one
 * route per leaf subnet via the owning host's uplink address, as a spine
 * learns its peers' prefixes. A leaf whose nodes are on several hosts is one
 * L2 segment stretched over the uplinks (netns/uplink.c: a VXLAN per leaf);
 * its nodes on other hosts get host routes via their hosts' uplinks.
 */
#include "config_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "base/fsutil.h"
#include "fabric/ipnet.h"

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

static size_t addr_len(int family)
{
	return family == AF_INET ? 4 : 16;
}

static int parse_uplink_netdev(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_netdev_name(c, v, path, ((struct vfab_cfg_host *)obj)->uplink_netdev);
}

static int parse_uplink_addresses(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_host *h = obj;
	bool ipv4 = false;
	size_t n;

	if (cfg_expect_sequence(c, v, path, "addresses such as 198.19.255.1/24"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n || n > VFAB_CFG_MAX_UPLINK_ADDRS)
		return cfg_fail(c, v, path, "%zu addresses (one IPv4, optionally one IPv6)", n);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		struct vfab_cfg_addr a;
		char sub[CFG_PATH_MAX], why[192];

		cfg_path_index(sub, path, i);
		if (it->type != YAML_SCALAR_NODE)
			return cfg_fail(c, it, sub, "expected an address such as 198.19.255.1/24");
		if (cfg_parse_addr((const char *)it->data.scalar.value, &a, why, sizeof(why)))
			return cfg_fail(c, it, sub, "%s", why);
		if (!strchr((const char *)it->data.scalar.value, '/'))
			return cfg_fail(
			    c, it, sub,
			    "give the prefix length: the hosts' uplinks share one subnet");
		for (uint32_t k = 0; k < h->nuplink_addrs; k++)
			if (h->uplink_addrs[k].family == a.family)
				return cfg_fail(c, it, sub, "one address per family");
		a.line = cfg_line(it);
		ipv4 |= a.family == AF_INET;
		h->uplink_addrs[h->nuplink_addrs++] = a;
	}
	return ipv4 ? 0 : cfg_fail(c, v, path, "an uplink needs an IPv4 address");
}

int cfg_parse_uplink(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"netdev", parse_uplink_netdev},
					      {"addresses", parse_uplink_addresses}};
	struct vfab_cfg_host *h = obj;
	uint32_t seen;

	if (cfg_mapping(c, v, path, keys, NKEYS(keys), false, h, &seen))
		return -EINVAL;
	if (seen != 3)
		return cfg_fail(c, v, path, "an uplink needs netdev and addresses");
	h->uplink_line = cfg_line(v);
	h->has_uplink = true;
	return 0;
}

static int host_by_id(const struct vfab_config *cfg, const char *id)
{
	for (uint32_t i = 0; i < cfg->nhosts; i++)
		if (!strcmp(cfg->hosts[i].id, id))
			return (int)i;
	return -1;
}

/* One uplink address against the leaves and the first host's uplinks. */
static int check_uplink_addr(struct cfg_parse *p, uint32_t i, const struct vfab_cfg_addr *a)
{
	const struct vfab_config *cfg = p->cfg;
	const struct vfab_cfg_addr *first = vfab_config_uplink_addr(&cfg->hosts[0], a->family);
	size_t len = addr_len(a->family);
	char path[CFG_PATH_MAX];

	snprintf(path, sizeof(path), "hosts[%u].uplink.addresses", i);
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		const struct vfab_cfg_addr *net =
		    a->family == AF_INET ? &cfg->leaves[k].ipv4 : &cfg->leaves[k].ipv6;

		if (net->family == a->family &&
		    vfab_ipnet_overlap(net->addr, net->prefix, a->addr, a->prefix, len))
			return cfg_fail_line(
			    &p->ctx, a->line, path,
			    "%s overlaps %s's subnet %s: the uplinks need a subnet "
			    "of their own",
			    a->text, cfg->leaves[k].name, net->text);
	}
	if (!first || first == a)
		return first ? 0
			     : cfg_fail_line(&p->ctx, a->line, path,
					     "hosts[0] has no uplink address of this family: every "
					     "host's uplink has the same families");
	if (first->prefix != a->prefix ||
	    !vfab_ipnet_contains(first->addr, first->prefix, a->addr, len))
		return cfg_fail_line(&p->ctx, a->line, path,
				     "%s is not in the subnet of %s (hosts[0]): the uplinks share "
				     "one segment",
				     a->text, first->text);
	for (uint32_t j = 0; j < i; j++) {
		const struct vfab_cfg_addr *b = vfab_config_uplink_addr(&cfg->hosts[j], a->family);

		if (b && !memcmp(b->addr, a->addr, len))
			return cfg_fail_line(&p->ctx, a->line, path, "%s is hosts[%u]'s too",
					     a->text, j);
	}
	return 0;
}

static int check_uplinks(struct cfg_parse *p)
{
	const struct vfab_config *cfg = p->cfg;
	bool ipv6_leaves = false;

	for (uint32_t k = 0; k < cfg->nleaves; k++)
		ipv6_leaves |= cfg->leaves[k].ipv6.family != 0;
	for (uint32_t i = 0; i < cfg->nhosts; i++) {
		const struct vfab_cfg_host *h = &cfg->hosts[i];
		char path[CFG_PATH_MAX];
		int ret;

		snprintf(path, sizeof(path), "hosts[%u].uplink", i);
		if (!h->has_uplink)
			return cfg_fail_line(&p->ctx, h->line, path,
					     "missing: once one host has an uplink, the hosts are "
					     "machines of one cluster and each needs one");
		if (ipv6_leaves && !vfab_config_uplink_addr(h, AF_INET6))
			return cfg_fail_line(
			    &p->ctx, h->uplink_line, path,
			    "the leaves have IPv6 prefixes: give the uplink an IPv6 "
			    "address too");
		if (cfg->hosts[0].nuplink_addrs != h->nuplink_addrs)
			return cfg_fail_line(&p->ctx, h->uplink_line, path,
					     "every host's uplink has the same families");
		for (uint32_t k = 0; k < h->nuplink_addrs; k++) {
			ret = check_uplink_addr(p, i, &h->uplink_addrs[k]);
			if (ret)
				return ret;
		}
	}
	return 0;
}

/* Each node's machine. */
static int place_nodes(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;

	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		struct vfab_cfg_node *n = &cfg->nodes[i];
		char path[CFG_PATH_MAX];

		snprintf(path, sizeof(path), "nodes[%u].host", i);
		if (n->host[0]) {
			int h = host_by_id(cfg, n->host);

			if (h < 0)
				return cfg_fail_line(&p->ctx, n->line, path,
						     "no host '%s' (hosts[].id)", n->host);
			if (n->k8s_host && n->k8s_host != (uint32_t)h + 1)
				return cfg_fail_line(&p->ctx, n->line, path,
						     "node '%s' is a pod of host '%s'", n->id,
						     cfg->hosts[n->k8s_host - 1].id);
			n->machine = (uint32_t)h + 1;
		} else {
			n->machine = n->k8s_host;
		}
		if (!n->machine)
			return cfg_fail_line(
			    &p->ctx, n->line, path,
			    "missing: node '%s' is on no host (give nodes[].host or "
			    "list it in a host's pods)",
			    n->id);
	}
	return 0;
}

int cfg_check_machines(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;
	bool any = false;
	int ret;

	for (uint32_t i = 0; i < cfg->nhosts; i++)
		any |= cfg->hosts[i].has_uplink;
	if (!any)
		return 0;
	ret = check_uplinks(p);
	if (ret == 0)
		ret = place_nodes(p);
	cfg->multihost = ret == 0;
	return ret;
}

/* ---- one host's share ---- */

/* Where each leaf's nodes are, seen from host h (0-based). */
struct leaf_place {
	uint32_t machine; /* hosts[] index + 1 of its first node's machine; 0: no node */
	bool spans;	  /* nodes on more than one machine */
	bool local;	  /* a node on h */
	uint32_t index;	  /* its index in h's share when local */
};

static void place_leaves(const struct vfab_config *cfg, uint32_t h, struct leaf_place *lp)
{
	uint32_t nl = 0;

	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++) {
			struct leaf_place *l = &lp[cfg->nodes[i].netdevs[d].leaf];
			uint32_t m = cfg->nodes[i].machine;

			l->spans |= l->machine && l->machine != m;
			if (!l->machine)
				l->machine = m;
			l->local |= m == h + 1;
		}
	for (uint32_t k = 0; k < cfg->nleaves; k++)
		if (lp[k].local)
			lp[k].index = nl++;
}

static struct vfab_cfg_route *add_route(struct vfab_config *cfg, const struct vfab_cfg_addr *dst,
					uint32_t machine, uint32_t k)
{
	const struct vfab_cfg_addr *via =
	    vfab_config_uplink_addr(&cfg->hosts[machine - 1], dst->family);
	struct vfab_cfg_route *rt = &cfg->routes[cfg->nroutes];

	if (!via)
		return NULL; /* the loader made every host's families alike */
	*rt = (struct vfab_cfg_route){.dst = *dst,
				      .via = *via,
				      .host = machine - 1,
				      .leaf_group = cfg->leaves[k].group,
				      .leaf = -1};
	cfg->nroutes++;
	return rt;
}

/*
 * Host routes to the nodes of spanning leaf k that are on other machines
 * than h: the routers reach them through the uplinks, so a router's frames
 * never cross the leaf's tunnel (each host's router is the leaf's gateway).
 */
static void plan_host_routes(struct vfab_config *cfg, uint32_t h, uint32_t k,
			     const struct leaf_place *lp)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *n = &cfg->nodes[i];

		if (n->machine == h + 1)
			continue;
		for (uint32_t d = 0; d < n->nnetdevs; d++)
			for (uint32_t a = 0; n->netdevs[d].leaf == k && a < n->netdevs[d].naddrs;
			     a++) {
				struct vfab_cfg_addr one = n->netdevs[d].addrs[a];
				struct vfab_cfg_route *rt;

				one.prefix = one.family == AF_INET ? 32 : 128;
				cfg_addr_format(&one);
				rt = add_route(cfg, &one, n->machine, k);
				if (rt && lp[k].local)
					rt->leaf = (int32_t)lp[k].index;
			}
	}
}

/* The routes to what other hosts than h (0-based) hold. */
static int plan_routes(struct vfab_config *cfg, uint32_t h, const struct leaf_place *lp)
{
	size_t max = 2 * (size_t)cfg->nleaves + 1;

	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++)
			max += cfg->nodes[i].netdevs[d].naddrs;
	cfg->routes = calloc(max, sizeof(*cfg->routes));
	if (!cfg->routes)
		return -ENOMEM;
	for (uint32_t k = 0; k < cfg->nleaves; k++) {
		const struct vfab_cfg_leaf *l = &cfg->leaves[k];

		if (lp[k].spans)
			plan_host_routes(cfg, h, k, lp);
		else if (lp[k].machine && !lp[k].local) {
			if (l->ipv4.family)
				add_route(cfg, &l->ipv4, lp[k].machine, k);
			if (l->ipv6.family)
				add_route(cfg, &l->ipv6, lp[k].machine, k);
		}
	}
	return 0;
}

/* Keeps host h's nodes and leaves; the leaf indices of its netdevs follow. */
static int keep_share(struct vfab_config *cfg, uint32_t h, const struct leaf_place *lp)
{
	struct vfab_cfg_node *nodes = calloc(cfg->nnodes, sizeof(*nodes));
	struct vfab_cfg_leaf *leaves = calloc(cfg->nleaves, sizeof(*leaves));
	uint32_t *node_to = calloc(cfg->nnodes, sizeof(*node_to));
	uint32_t nn = 0, nl = 0;

	if (!nodes || !leaves || !node_to) {
		free(nodes);
		free(leaves);
		free(node_to);
		return -ENOMEM;
	}
	for (uint32_t k = 0; k < cfg->nleaves; k++)
		if (lp[k].local) {
			leaves[nl] = cfg->leaves[k];
			leaves[nl++].vni = lp[k].spans ? k + 1 : 0;
		}
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		node_to[i] = UINT32_MAX;
		if (cfg->nodes[i].machine != h + 1)
			continue;
		node_to[i] = nn;
		nodes[nn] = cfg->nodes[i]; /* shares ranks and profiles with cluster[] */
		for (uint32_t d = 0; d < nodes[nn].nnetdevs; d++)
			nodes[nn].netdevs[d].leaf = lp[nodes[nn].netdevs[d].leaf].index;
		nn++;
	}
	/* Pods keep naming nodes of nodes[]: the others' drop out. */
	for (uint32_t i = 0; i < cfg->nhosts; i++) {
		struct vfab_cfg_host *ch = &cfg->hosts[i];
		uint32_t kept = 0;

		for (uint32_t k = 0; k < ch->npods; k++)
			if (node_to[ch->pods[k]] != UINT32_MAX)
				ch->pods[kept++] = node_to[ch->pods[k]];
		ch->npods = kept;
	}
	free(node_to);
	free(cfg->leaves);
	cfg->cluster = cfg->nodes;
	cfg->ncluster = cfg->nnodes;
	cfg->nodes = nodes;
	cfg->nnodes = nn;
	cfg->leaves = leaves;
	cfg->nleaves = nl;
	return 0;
}

int vfab_config_select_host(struct vfab_config *cfg, const char *id, char *err, size_t errlen)
{
	struct leaf_place *lp;
	uint32_t count = 0;
	char ids[256] = "";
	size_t used = 0;
	int h, ret;

	if (!cfg->multihost)
		return vfab_fail(
		    err, errlen, -EINVAL,
		    "%s: --host needs a config whose hosts[] have uplinks (a multi-host "
		    "cluster)",
		    cfg->source);
	if (cfg->cluster)
		return vfab_fail(err, errlen, -EINVAL, "a host is selected already");
	h = host_by_id(cfg, id);
	for (uint32_t i = 0; h < 0 && i < cfg->nhosts && used < sizeof(ids); i++)
		used += (size_t)snprintf(ids + used, sizeof(ids) - used, "%s%s", i ? ", " : "",
					 cfg->hosts[i].id);
	if (h < 0)
		return vfab_fail(err, errlen, -EINVAL, "%s: no host '%.64s' (hosts: %s)",
				 cfg->source, id, ids);
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		count += cfg->nodes[i].machine == (uint32_t)h + 1;
	if (!count)
		return vfab_fail(err, errlen, -EINVAL, "%s: host '%s' has no nodes", cfg->source,
				 id);
	lp = calloc(cfg->nleaves ? cfg->nleaves : 1, sizeof(*lp));
	if (!lp)
		return -ENOMEM;
	place_leaves(cfg, (uint32_t)h, lp);
	ret = plan_routes(cfg, (uint32_t)h, lp);
	if (ret == 0)
		ret = keep_share(cfg, (uint32_t)h, lp);
	free(lp);
	if (ret)
		return vfab_fail(err, errlen, ret, "select host '%s'", id);
	cfg->local_host = h;
	return 0;
}

int vfab_config_apply_host_file(struct vfab_config *cfg, const char *path, char *err, size_t errlen)
{
	char id[VFAB_CFG_NODE_ID_MAX + 2];
	ssize_t n = vfab_read_file(path, id, sizeof(id));

	if (n == -ENOENT)
		return 0;
	if (n < 0)
		return vfab_fail(err, errlen, (int)n, "read %s", path);
	id[strcspn(id, "\n")] = '\0';
	return vfab_config_select_host(cfg, id, err, errlen);
}
