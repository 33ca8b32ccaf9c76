/* SPDX-License-Identifier: MIT */
/*
 * The `hosts` section: Kubernetes hosts and the pods (nodes) on them. A host
 * in shared RDMA netns mode (the RDMA shared device plugin) has one HCA that
 * all its pods see; each pod's HCA netdev (net1) is a macvlan of the host's
 * PF. The pods stay ordinary `nodes` entries, so every node setting works for
 * them; a host only names them, in the order they came up (which orders the
 * shared GID table). configs/README.md documents the schema.
 */
#include "config_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

static int parse_id(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_host *h = obj;

	if (cfg_string(c, v, path, h->id, sizeof(h->id)))
		return -EINVAL;
	if (!h->id[0] || !cfg_name_ok(h->id, "-"))
		return cfg_fail(c, v, path, "'%s' may only contain letters, digits, '_' and '-'",
				h->id);
	return 0;
}

static int parse_netns(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_host *h = obj;
	char mode[16];

	if (cfg_string(c, v, path, mode, sizeof(mode)))
		return -EINVAL;
	if (strcmp(mode, "shared") && strcmp(mode, "exclusive"))
		return cfg_fail(c, v, path, "'%s': expected shared or exclusive", mode);
	h->shared = !strcmp(mode, "shared");
	return 0;
}

static int parse_hca_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_host *h = obj;

	if (cfg_string(c, v, path, h->hca, sizeof(h->hca)))
		return -EINVAL;
	if (!h->hca[0] || !cfg_name_ok(h->hca, ""))
		return cfg_fail(c, v, path, "'%s' may only contain letters, digits and '_'",
				h->hca);
	return 0;
}

static int parse_hca_netdev(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_netdev_name(c, v, path, ((struct vfab_cfg_host *)obj)->netdev);
}

static int parse_hca(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"name", parse_hca_name},
					      {"netdev", parse_hca_netdev}};
	uint32_t seen;

	return cfg_mapping(c, v, path, keys, NKEYS(keys), false, obj, &seen);
}

static int parse_pods(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct vfab_cfg_host *h = obj;
	size_t n;

	if (cfg_expect_sequence(c, v, path, "pod (node) ids"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n || n > VFAB_MAX_NODES)
		return cfg_fail(c, v, path, "%zu pods (1..%d)", n, VFAB_MAX_NODES);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		char sub[CFG_PATH_MAX];

		if (cfg_string(c, it, cfg_path_index(sub, path, i), h->pod_ids[i],
			       sizeof(h->pod_ids[i])))
			return -EINVAL;
		h->pod_lines[i] = cfg_line(it);
	}
	h->npods = (uint32_t)n;
	return 0;
}

int cfg_parse_hosts(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"id", parse_id},
					      {"rdma_netns", parse_netns},
					      {"hca", parse_hca},
					      {"pods", parse_pods},
					      {"uplink", cfg_parse_uplink}};
	struct cfg_parse *p = obj;
	size_t n;

	if (cfg_expect_sequence(c, v, path, "hosts"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n > VFAB_MAX_NODES)
		return cfg_fail(c, v, path, "too many hosts (%zu; at most %d)", n, VFAB_MAX_NODES);
	p->cfg->hosts = calloc(n ? n : 1, sizeof(*p->cfg->hosts));
	if (!p->cfg->hosts)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		struct vfab_cfg_host *h = &p->cfg->hosts[i];
		char sub[CFG_PATH_MAX];
		uint32_t seen;

		p->cfg->nhosts = (uint32_t)i + 1;
		h->line = cfg_line(it);
		cfg_path_index(sub, path, i);
		if (cfg_mapping(c, it, sub, keys, NKEYS(keys), false, h, &seen))
			return -EINVAL;
		if (!(seen & 1))
			return cfg_fail(c, it, sub, "a host needs an id");
		/* A machine of several (uplink) may run plain nodes; a Kubernetes host runs pods.
		 */
		if (!(seen & 16) && (!(seen & 2) || !(seen & 8)))
			return cfg_fail(
			    c, it, sub,
			    "a host needs rdma_netns and pods (Kubernetes), or an uplink "
			    "(one of several machines)");
		if (h->shared && (!h->hca[0] || !h->netdev[0]))
			return cfg_fail(c, it, sub,
					"a shared host needs hca: {name: HCA, netdev: PF netdev}");
	}
	return 0;
}

static int node_by_id(const struct vfab_config *cfg, const char *id)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		if (!strcmp(cfg->nodes[i].id, id))
			return (int)i;
	return -1;
}

static int hca_by_name(const struct vfab_cfg_node *n, const char *name)
{
	for (uint32_t h = 0; h < n->nhcas; h++)
		if (!strcmp(n->hcas[h].name, name))
			return (int)h;
	return -1;
}

/*
 * A pod of a shared host: its HCA is the host's (one port), bound to its
 * upper (the same name in every pod), on the host's leaf. Returns the GID
 * entries it adds: a pair per address and one for its upper's link-local.
 */
static int check_shared_pod(struct cfg_parse *p, const struct vfab_cfg_host *h, uint32_t k,
			    const char *path, int *leaf, const char **upper)
{
	const struct vfab_cfg_node *n = &p->cfg->nodes[h->pods[k]];
	int hi = hca_by_name(n, h->hca), d;
	const struct vfab_cfg_netdev *nd;

	if (hi < 0 || n->hcas[hi].nports != 1)
		return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
				     "pod '%s' has no one-port HCA '%s' (the host's shared HCA)",
				     n->id, h->hca);
	d = vfab_config_netdev_index(n, n->hcas[hi].netdev[0]);
	if (d < 0)
		return -EINVAL;
	nd = &n->netdevs[d];
	if (!strcmp(nd->name, h->netdev) || nd->vlan)
		return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
				     "pod '%s': its HCA netdev '%s' must be a plain upper (net1) "
				     "of the host's '%s'",
				     n->id, nd->name, h->netdev);
	/* Its place in the pod's list is its uverbsN: the first pod's, in every pod. */
	if (k && hi != hca_by_name(&p->cfg->nodes[h->pods[0]], h->hca))
		return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
				     "pod '%s' lists '%s' at another position than pod '%s' (the "
				     "shared HCA is one uverbs device: list it alike)",
				     n->id, h->hca, p->cfg->nodes[h->pods[0]].id);
	if (*upper && strcmp(*upper, nd->name))
		return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
				     "pod '%s' binds '%s' to '%s', another pod '%s': one network "
				     "attachment names every pod's upper alike",
				     n->id, h->hca, nd->name, *upper);
	if (*leaf >= 0 && (uint32_t)*leaf != nd->leaf)
		return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
				     "pod '%s' is on another leaf than the host's other pods (they "
				     "share its port: give them one `leaf`)",
				     n->id);
	*upper = nd->name;
	*leaf = (int)nd->leaf;
	return (int)(2 * nd->naddrs + 2);
}

int cfg_check_hosts(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;

	for (uint32_t i = 0; i < cfg->nhosts; i++) {
		struct vfab_cfg_host *h = &cfg->hosts[i];
		const char *upper = NULL;
		char path[CFG_PATH_MAX];
		int leaf = -1, gids = 2;

		snprintf(path, sizeof(path), "hosts[%u].pods", i);
		for (uint32_t j = 0; j < i; j++)
			if (!strcmp(cfg->hosts[j].id, h->id))
				return cfg_fail_line(&p->ctx, h->line, path,
						     "duplicate host id '%s'", h->id);
		for (uint32_t k = 0; k < h->npods; k++) {
			int ni = node_by_id(cfg, h->pod_ids[k]);

			if (ni < 0)
				return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
						     "no node '%s' (pods are `nodes` entries)",
						     h->pod_ids[k]);
			if (cfg->nodes[ni].k8s_host)
				return cfg_fail_line(&p->ctx, h->pod_lines[k], path,
						     "pod '%s' is already on host '%s'",
						     h->pod_ids[k],
						     cfg->hosts[cfg->nodes[ni].k8s_host - 1].id);
			cfg->nodes[ni].k8s_host = i + 1;
			h->pods[k] = (uint32_t)ni;
			if (h->shared) {
				int add = check_shared_pod(p, h, k, path, &leaf, &upper);

				if (add < 0)
					return add;
				gids += add;
			}
		}
		if (gids > VFAB_PORT_GIDS)
			return cfg_fail_line(
			    &p->ctx, h->line, path,
			    "the shared HCA's GID table needs %d entries (at most %d)", gids,
			    VFAB_PORT_GIDS);
	}
	return 0;
}
