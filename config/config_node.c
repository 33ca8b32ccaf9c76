/* SPDX-License-Identifier: MIT */
/*
 * The `nodes` section: ids, the seed's ranks and gpus, and the extensions
 * (leaf group, HCAs with their netdev bindings; netdevs and addresses are in
 * config_netdev.c).
 */
#include "config_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CFG_MAX_RANKS (1u << 20)
#define CFG_MAX_GPUS 1024
#define NKEYS(t) (sizeof(t) / sizeof((t)[0]))

struct node_obj {
	struct cfg_parse *p;
	struct vfab_cfg_node *n;
	struct cfg_node_lines *lines;
	/* Walked after the mapping, in a fixed order (see parse_node). */
	yaml_node_t *hcas, *netdevs, *addresses;
};

struct hca_obj {
	struct cfg_parse *p;
	struct vfab_cfg_hca *h;
	yaml_node_t *netdev; /* resolved after the walk: depends on ports */
};

/* ---- nodes[] ---- */

static int parse_node_id(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct node_obj *o = obj;

	o->lines->id = cfg_line(v);
	if (v->type == YAML_SCALAR_NODE && v->data.scalar.length > VFAB_CFG_NODE_ID_MAX)
		return cfg_fail(c, v, path,
				"'%s' is too long (at most %d characters: it becomes a hostname "
				"and a netns name)",
				(const char *)v->data.scalar.value, VFAB_CFG_NODE_ID_MAX);
	if (cfg_string(c, v, path, o->n->id, sizeof(o->n->id)))
		return -EINVAL;
	if (!o->n->id[0] || !cfg_name_ok(o->n->id, "-"))
		return cfg_fail(c, v, path, "'%s' may only contain letters, digits, '_' and '-'",
				o->n->id);
	return 0;
}

static int parse_host(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct node_obj *o = obj;

	return cfg_string(c, v, path, o->n->host, sizeof(o->n->host));
}

static int parse_ranks(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct node_obj *o = obj;
	size_t n, i;

	if (cfg_expect_sequence(c, v, path, "integers"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	o->lines->ranks = cfg_line(v);
	o->n->ranks = calloc(n ? n : 1, sizeof(*o->n->ranks));
	o->lines->rank = calloc(n ? n : 1, sizeof(*o->lines->rank));
	if (!o->n->ranks || !o->lines->rank)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		char sub[CFG_PATH_MAX];

		if (it->type != YAML_SCALAR_NODE)
			return cfg_fail(c, it, path, "expected a sequence of integers");
		if (cfg_uint(c, it, cfg_path_index(sub, path, i), 0, CFG_MAX_RANKS - 1,
			     &o->n->ranks[i]))
			return -EINVAL;
		o->lines->rank[i] = cfg_line(it);
		o->n->nranks++;
	}
	return 0;
}

static int parse_gpu_profile(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	return cfg_string(c, v, path, obj, VFAB_CFG_TEXT_MAX);
}

static int parse_gpus(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	static const struct cfg_key keys[] = {{"profile", parse_gpu_profile}};
	struct node_obj *o = obj;
	size_t n, i;

	o->lines->gpus = cfg_line(v);
	o->n->has_gpus = true;
	if (v->type == YAML_SCALAR_NODE) { /* a plain count */
		if (cfg_uint(c, v, path, 0, CFG_MAX_GPUS, &o->n->ngpus))
			return -EINVAL;
		o->n->gpu_profiles = calloc(o->n->ngpus ? o->n->ngpus : 1, VFAB_CFG_TEXT_MAX);
		return o->n->gpu_profiles ? 0 : -ENOMEM;
	}
	if (cfg_expect_sequence(c, v, path, "{profile: NAME} entries (or a count)"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n > CFG_MAX_GPUS)
		return cfg_fail(c, v, path, "too many gpus (at most %u)", CFG_MAX_GPUS);
	o->n->gpu_profiles = calloc(n ? n : 1, VFAB_CFG_TEXT_MAX);
	if (!o->n->gpu_profiles)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		char sub[CFG_PATH_MAX];
		uint32_t seen;

		cfg_path_index(sub, path, i);
		if (it->type == YAML_SCALAR_NODE) {
			if (cfg_string(c, it, sub, o->n->gpu_profiles[i], VFAB_CFG_TEXT_MAX))
				return -EINVAL;
		} else if (cfg_mapping(c, it, sub, keys, NKEYS(keys), false, o->n->gpu_profiles[i],
				       &seen)) {
			return -EINVAL;
		}
		o->n->ngpus++;
	}
	return 0;
}

/*
 * cpus: "0-3,8" (a cpuset list), a single number, or a sequence of numbers
 * and lists. Whether the host has them is checked when the node comes up.
 */
static int parse_cpus(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct node_obj *o = obj;
	size_t n = 1;

	if (v->type == YAML_SEQUENCE_NODE)
		n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	else if (v->type != YAML_SCALAR_NODE)
		return cfg_fail(c, v, path, "expected a CPU list such as \"0-3,8\" or [0, 1]");
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *it = v->type == YAML_SEQUENCE_NODE
				      ? cfg_node(c, v->data.sequence.items.start[i])
				      : v;
		char sub[CFG_PATH_MAX], text[VFAB_CFG_TEXT_MAX];
		struct vfab_cpus one;
		int ret;

		if (v->type == YAML_SEQUENCE_NODE)
			cfg_path_index(sub, path, i);
		else
			snprintf(sub, sizeof(sub), "%s", path);
		if (it->type != YAML_SCALAR_NODE)
			return cfg_fail(c, it, sub, "expected a CPU number or list");
		if (cfg_string(c, it, sub, text, sizeof(text)))
			return -EINVAL;
		ret = vfab_cpus_parse(text, &one);
		if (ret == -ERANGE)
			return cfg_fail(c, it, sub, "'%s': CPU numbers must be below %d", text,
					VFAB_CPUS_MAX);
		if (ret)
			return cfg_fail(c, it, sub,
					"'%s' is not a CPU list (numbers and ranges A-B, "
					"separated by commas)",
					text);
		for (unsigned w = 0; w < VFAB_CPUS_WORDS; w++)
			o->n->cpus.bits[w] |= one.bits[w];
	}
	if (vfab_cpus_count(&o->n->cpus) == 0)
		return cfg_fail(c, v, path, "at least one CPU is needed");
	o->n->has_cpus = true;
	return 0;
}

/* ---- nodes[].hcas[] ---- */

static int parse_hca_name(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct hca_obj *o = obj;

	if (cfg_string(c, v, path, o->h->name, sizeof(o->h->name)))
		return -EINVAL;
	if (!o->h->name[0] || !cfg_name_ok(o->h->name, ""))
		return cfg_fail(c, v, path, "'%s' may only contain letters, digits and '_'",
				o->h->name);
	return 0;
}

static int parse_hca_netdev_key(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	(void)c;
	(void)path;
	((struct hca_obj *)obj)->netdev = v;
	return 0;
}

static int parse_hca_ports(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct hca_obj *o = obj;

	return cfg_uint(c, v, path, 1, VFAB_MAX_PORTS, &o->h->nports);
}

static int parse_hca_copy_engines(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct hca_obj *o = obj;

	return cfg_uint(c, v, path, 1, VFAB_MAX_COPY_ENGINES, &o->h->copy_engines);
}

/*
 * The node's GPU (its own K-th with a gpus list, else host GPU K) the HCA
 * shares a PCIe switch with in the node's /sys (NCCL then sees them as a
 * DGX's GPU/NIC pair). Checked against the host only at
 * `vfab up`: a config stays valid on a machine without GPUs.
 */
static int parse_hca_gpu(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct hca_obj *o = obj;

	if (cfg_uint(c, v, path, 0, VFAB_CFG_MAX_GPU_INDEX, &o->h->gpu))
		return -EINVAL;
	o->h->has_gpu = true;
	return 0;
}

/* Explicit netdev bindings: a name, or one name per port. */
static int hca_explicit_netdevs(struct cfg_ctx *c, struct hca_obj *o, const char *path)
{
	yaml_node_t *v = o->netdev;
	size_t n, i;

	if (v->type == YAML_SCALAR_NODE) {
		if (o->h->nports != 1)
			return cfg_fail(c, v, path, "a %u-port HCA needs a list of %u netdevs",
					o->h->nports, o->h->nports);
		return cfg_netdev_name(c, v, path, o->h->netdev[0]);
	}
	if (cfg_expect_sequence(c, v, path, "interface names (one per port)"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (n != o->h->nports)
		return cfg_fail(c, v, path, "%zu netdevs for %u port(s)", n, o->h->nports);
	for (i = 0; i < n; i++) {
		char sub[CFG_PATH_MAX];

		if (cfg_netdev_name(c, cfg_node(c, v->data.sequence.items.start[i]),
				    cfg_path_index(sub, path, i), o->h->netdev[i]))
			return -EINVAL;
	}
	return 0;
}

static bool netdev_bound(const struct vfab_cfg_node *n, const char *name)
{
	for (uint32_t h = 0; h < n->nhcas; h++)
		for (uint32_t p = 0; p < n->hcas[h].nports; p++)
			if (!strcmp(n->hcas[h].netdev[p], name))
				return true;
	return false;
}

static int parse_hcas(struct cfg_ctx *c, yaml_node_t *v, const char *path, struct node_obj *no)
{
	static const struct cfg_key keys[] = {{"name", parse_hca_name},
					      {"netdev", parse_hca_netdev_key},
					      {"ports", parse_hca_ports},
					      {"copy_engines", parse_hca_copy_engines},
					      {"gpu", parse_hca_gpu}};
	struct vfab_cfg_node *n = no->n;
	struct vfab_cfg_hca tmp[VFAB_CFG_MAX_HCAS];
	size_t count, i;

	if (v->type == YAML_SCALAR_NODE) { /* a count: mlx5_0..N-1 on eth0..N-1 */
		uint32_t k;

		if (cfg_uint(c, v, path, 0, VFAB_CFG_MAX_HCAS, &n->nhcas))
			return -EINVAL;
		for (k = 0; k < n->nhcas; k++) {
			memset(&n->hcas[k], 0, sizeof(n->hcas[k]));
			snprintf(n->hcas[k].name, sizeof(n->hcas[k].name), "mlx5_%u", k);
			n->hcas[k].nports = 1;
		}
		return 0;
	}
	if (cfg_expect_sequence(c, v, path, "{name, netdev, ports} entries (or a count)"))
		return -EINVAL;
	count = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (count > VFAB_CFG_MAX_HCAS)
		return cfg_fail(c, cfg_node(c, v->data.sequence.items.start[VFAB_CFG_MAX_HCAS]),
				path, "too many HCAs on one node (at most %d)", VFAB_CFG_MAX_HCAS);
	memset(tmp, 0, sizeof(tmp));
	n->nhcas = 0;
	for (i = 0; i < count; i++) {
		yaml_node_t *it = cfg_node(c, v->data.sequence.items.start[i]);
		struct hca_obj o = {.p = no->p, .h = &tmp[i]};
		char sub[CFG_PATH_MAX], sub2[CFG_PATH_MAX];
		uint32_t seen, j, port;

		cfg_path_index(sub, path, i);
		snprintf(tmp[i].name, sizeof(tmp[i].name), "mlx5_%zu", i);
		tmp[i].nports = 1;
		if (cfg_mapping(c, it, sub, keys, NKEYS(keys), false, &o, &seen))
			return -EINVAL;
		for (j = 0; j < i; j++)
			if (!strcmp(tmp[j].name, tmp[i].name))
				return cfg_fail(c, it, cfg_path_key(sub2, sub, "name"),
						"duplicate HCA name '%s' on node %s", tmp[i].name,
						n->id[0] ? n->id : "?");
		if (o.netdev && hca_explicit_netdevs(c, &o, cfg_path_key(sub2, sub, "netdev")))
			return -EINVAL;
		for (port = 0; o.netdev && port < tmp[i].nports; port++) {
			bool twice = netdev_bound(n, tmp[i].netdev[port]);

			for (j = 0; j < port; j++)
				twice |= !strcmp(tmp[i].netdev[j], tmp[i].netdev[port]);
			if (twice)
				return cfg_fail(c, o.netdev, sub2,
						"%s is bound to another HCA port already",
						tmp[i].netdev[port]);
		}
		n->hcas[n->nhcas++] = tmp[i];
	}
	return 0;
}

/*
 * Ports without an explicit netdev get the lowest free ethN, after all the
 * explicit bindings are known: mlx5_0 -> eth0, mlx5_1 -> eth1 by default.
 */
static int assign_netdevs(struct cfg_ctx *c, struct node_obj *no, const char *path)
{
	struct vfab_cfg_node *n = no->n;
	uint32_t h, p, k;

	for (h = 0; h < n->nhcas; h++) {
		for (p = 0; p < n->hcas[h].nports; p++) {
			char name[VFAB_IFNAME_MAX];

			if (n->hcas[h].netdev[p][0])
				continue;
			for (k = 0;; k++) {
				snprintf(name, sizeof(name), "eth%u", k);
				if (!netdev_bound(n, name))
					break;
			}
			snprintf(n->hcas[h].netdev[p], VFAB_IFNAME_MAX, "%s", name);
		}
	}
	for (h = 0; h < n->nhcas; h++)
		for (p = 0; p < n->hcas[h].nports; p++)
			if (cfg_node_netdev(c, no->hcas, path, n, n->hcas[h].netdev[p]) < 0)
				return -EINVAL;
	return 0;
}

static int parse_hcas_key(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	(void)c;
	(void)path;
	((struct node_obj *)obj)->hcas = v;
	return 0;
}

static int parse_netdevs_key(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	(void)c;
	(void)path;
	((struct node_obj *)obj)->netdevs = v;
	return 0;
}

static int parse_addresses_key(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	(void)c;
	(void)path;
	((struct node_obj *)obj)->addresses = v;
	return 0;
}

static int parse_leaf(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct node_obj *o = obj;

	o->lines->leaf = cfg_line(v);
	return cfg_uint(c, v, path, 0, VFAB_CFG_MAX_GROUPS - 1, &o->n->group);
}

static int parse_node(struct cfg_parse *p, yaml_node_t *v, const char *path, size_t idx)
{
	static const struct cfg_key keys[] = {
	    {"id", parse_node_id},	    {"host", parse_host},
	    {"ranks", parse_ranks},	    {"gpus", parse_gpus},
	    {"hcas", parse_hcas_key},	    {"addresses", parse_addresses_key},
	    {"netdevs", parse_netdevs_key}, {"leaf", parse_leaf},
	    {"cpus", parse_cpus},
	};
	struct vfab_cfg_node *n = &p->cfg->nodes[idx];
	struct node_obj o = {.p = p, .n = n, .lines = &p->lines[idx]};
	char sub[CFG_PATH_MAX];
	uint32_t seen;
	n->line = cfg_line(v);
	n->cluster_index = (uint32_t)idx;
	n->nnetdevs = 1; /* eth0 always exists: the node's socket interface */
	snprintf(n->netdevs[0].name, VFAB_IFNAME_MAX, "%s", VFAB_CFG_DEFAULT_NETDEV);
	if (cfg_mapping(&p->ctx, v, path, keys, NKEYS(keys), false, &o, &seen))
		return -EINVAL;
	if (!(seen & 1))
		return cfg_fail(&p->ctx, v, cfg_path_key(sub, path, "id"), "missing");
	/*
	 * Netdev order is eth0, the `netdevs` entries, the HCA ports' netdevs,
	 * then those only `addresses` names, whatever the key order in the file:
	 * leaves and default subnets follow the order netdev names first appear.
	 */
	if (o.netdevs &&
	    cfg_parse_netdevs(&p->ctx, o.netdevs, cfg_path_key(sub, path, "netdevs"), n, o.lines))
		return -EINVAL;
	if (o.hcas) {
		if (parse_hcas(&p->ctx, o.hcas, cfg_path_key(sub, path, "hcas"), &o))
			return -EINVAL;
	} else {
		n->nhcas = 1;
		snprintf(n->hcas[0].name, sizeof(n->hcas[0].name), "%s", VFAB_CFG_DEFAULT_HCA);
		n->hcas[0].nports = 1;
	}
	if (assign_netdevs(&p->ctx, &o, cfg_path_key(sub, path, "hcas")))
		return -EINVAL;
	if (o.addresses && cfg_parse_addresses(&p->ctx, o.addresses,
					       cfg_path_key(sub, path, "addresses"), n, o.lines))
		return -EINVAL;
	return 0;
}

int cfg_parse_nodes(struct cfg_ctx *c, yaml_node_t *v, const char *path, void *obj)
{
	struct cfg_parse *p = obj;
	size_t n, i;

	if (cfg_expect_sequence(c, v, path, "nodes"))
		return -EINVAL;
	n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	if (!n)
		return cfg_fail(c, v, path, "at least one node is needed");
	if (n > VFAB_MAX_NODES) {
		char sub[CFG_PATH_MAX];

		return cfg_fail(c, cfg_node(c, v->data.sequence.items.start[VFAB_MAX_NODES]),
				cfg_path_index(sub, path, VFAB_MAX_NODES),
				"too many nodes (%zu; at most %d)", n, VFAB_MAX_NODES);
	}
	p->cfg->nodes = calloc(n, sizeof(*p->cfg->nodes));
	p->lines = calloc(n, sizeof(*p->lines));
	if (!p->cfg->nodes || !p->lines)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		char sub[CFG_PATH_MAX];

		p->cfg->nnodes = (uint32_t)i + 1;
		if (parse_node(p, cfg_node(c, v->data.sequence.items.start[i]),
			       cfg_path_index(sub, path, i), i))
			return -EINVAL;
	}
	return 0;
}
