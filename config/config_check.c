/* SPDX-License-Identifier: MIT */
/*
 * Rules that span fields or nodes, checked once the whole document is read
 * (the YAML may list `fabric` after `nodes`): unique node ids, the seed's
 * rank rules, fabric-wide limits, netdev MTUs, then the leaves and default
 * addresses (config_leaves.c) and duplicate addresses.
 */
#include "config_parse.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

static int check_ids(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;
	char path[CFG_PATH_MAX];
	uint32_t i, j;

	for (i = 0; i < cfg->nnodes; i++)
		for (j = 0; j < i; j++)
			if (!strcmp(cfg->nodes[i].id, cfg->nodes[j].id)) {
				snprintf(path, sizeof(path), "nodes[%u].id", i);
				return cfg_fail_line(&p->ctx, p->lines[i].id, path,
						     "duplicate node id '%s' (also nodes[%u])",
						     cfg->nodes[i].id, j);
			}
	return 0;
}

/* The seed tool's rules: ranks unique and contiguous from 0; one GPU per rank. */
static int check_ranks(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;
	char path[CFG_PATH_MAX];
	uint32_t total = 0, i, k;
	int32_t *owner;

	for (i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *n = &cfg->nodes[i];

		if (p->lines[i].ranks && p->lines[i].gpus && n->nranks != n->ngpus) {
			snprintf(path, sizeof(path), "nodes[%u].gpus", i);
			return cfg_fail_line(&p->ctx, p->lines[i].gpus, path,
					     "%u gpus for %u ranks: each node must list the same "
					     "number of ranks and gpus",
					     n->ngpus, n->nranks);
		}
		total += n->nranks;
	}
	owner = malloc((total ? total : 1) * sizeof(*owner));
	if (!owner)
		return -ENOMEM;
	memset(owner, 0xff, (total ? total : 1) * sizeof(*owner));
	for (i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *n = &cfg->nodes[i];

		for (k = 0; k < n->nranks; k++) {
			uint32_t r = n->ranks[k];

			snprintf(path, sizeof(path), "nodes[%u].ranks[%u]", i, k);
			if (r >= total) {
				free(owner);
				return cfg_fail_line(&p->ctx, p->lines[i].rank[k], path,
						     "rank %u leaves a gap: ranks must be "
						     "contiguous from 0 (%u ranks: 0..%u)",
						     r, total, total - 1);
			}
			if (owner[r] >= 0) {
				int prev = owner[r];

				free(owner);
				return cfg_fail_line(&p->ctx, p->lines[i].rank[k], path,
						     "rank %u is used twice (also nodes[%d]): "
						     "ranks must be unique",
						     r, prev);
			}
			owner[r] = (int32_t)i;
		}
	}
	free(owner);
	return 0;
}

/* IPv4 addresses written without a prefix take the subnet's. */
static void apply_subnet_prefix(struct vfab_config *cfg)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++)
			for (uint32_t a = 0; a < cfg->nodes[i].netdevs[d].naddrs; a++) {
				struct vfab_cfg_addr *ad = &cfg->nodes[i].netdevs[d].addrs[a];

				if (ad->family == AF_INET && !ad->prefix) {
					ad->prefix = cfg->subnet.prefix;
					cfg_addr_format(ad);
				}
			}
}

/* Netdevs without their own MTU take fabric.mtu (which may come after nodes). */
static void apply_mtu(struct vfab_config *cfg)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		for (uint32_t d = 0; d < cfg->nodes[i].nnetdevs; d++)
			if (!cfg->nodes[i].netdevs[d].mtu)
				cfg->nodes[i].netdevs[d].mtu = cfg->mtu;
}

static bool host_part_ok(const struct vfab_cfg_addr *a)
{
	uint32_t host_mask, v;

	if (a->family != AF_INET || a->prefix > 30)
		return true;
	host_mask = ~0u >> a->prefix;
	v = cfg_addr_v4(a) & host_mask;
	return v != 0 && v != host_mask;
}

struct addr_ref {
	const struct vfab_cfg_addr *a;
	uint32_t node, netdev, idx;
};

/* Every address once in the whole fabric: the spine routes between the leaves. */
static int check_addresses(struct cfg_parse *p)
{
	struct vfab_config *cfg = p->cfg;
	struct addr_ref *refs;
	char path[CFG_PATH_MAX];
	size_t n = 0, i, j, cap = (size_t)cfg->nnodes * VFAB_CFG_MAX_NETDEVS * VFAB_CFG_MAX_ADDRS;
	int rc = 0;

	refs = calloc(cap ? cap : 1, sizeof(*refs));
	if (!refs)
		return -ENOMEM;
	for (uint32_t k = 0; k < cfg->nnodes; k++)
		for (uint32_t d = 0; d < cfg->nodes[k].nnetdevs; d++)
			for (uint32_t a = 0; a < cfg->nodes[k].netdevs[d].naddrs; a++)
				refs[n++] =
				    (struct addr_ref){&cfg->nodes[k].netdevs[d].addrs[a], k, d, a};
	for (i = 0; i < n && !rc; i++) {
		const struct addr_ref *r = &refs[i];

		cfg_addr_path(path, p, r->node, r->netdev, r->idx);
		if (!host_part_ok(r->a)) {
			rc = cfg_fail_line(&p->ctx, r->a->line, path,
					   "%s is the network or broadcast address of its prefix",
					   r->a->text);
			break;
		}
		for (j = 0; j < i; j++) {
			const struct addr_ref *q = &refs[j];
			const struct addr_ref *blame = r->a->line ? r : q;

			if (q->a->family != r->a->family || memcmp(q->a->addr, r->a->addr, 16))
				continue;
			cfg_addr_path(path, p, blame->node, blame->netdev, blame->idx);
			rc = cfg_fail_line(&p->ctx, blame->a->line, path,
					   "address %s is used twice (nodes %s and %s)", r->a->text,
					   cfg->nodes[q->node].id, cfg->nodes[r->node].id);
			break;
		}
	}
	free(refs);
	return rc;
}

static int check_limits(struct cfg_parse *p)
{
	uint32_t total = 0;

	for (uint32_t i = 0; i < p->cfg->nnodes; i++) {
		total += p->cfg->nodes[i].nhcas;
		if (total > VFAB_MAX_HCAS) {
			char path[CFG_PATH_MAX];

			snprintf(path, sizeof(path), "nodes[%u].hcas", i);
			return cfg_fail_line(&p->ctx, p->cfg->nodes[i].line, path,
					     "too many HCAs in the fabric (at most %d)",
					     VFAB_MAX_HCAS);
		}
	}
	return 0;
}

int cfg_check(struct cfg_parse *p)
{
	int rc = check_ids(p);

	if (!rc)
		rc = check_ranks(p);
	if (!rc)
		rc = check_limits(p);
	if (!rc) {
		apply_subnet_prefix(p->cfg);
		apply_mtu(p->cfg);
		rc = cfg_plan_leaves(p);
	}
	if (!rc)
		rc = check_addresses(p);
	return rc;
}
