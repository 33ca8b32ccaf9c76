/* SPDX-License-Identifier: MIT */
/*
 * nodes[].gpus -> the host GPUs of each node (gpu_plan.h). Pure: the host's
 * GPUs come in as a list, so the unit tests can plan for any host.
 */
#include "netns/gpu_plan.h"

#include <errno.h>
#include <string.h>

int vfab_gpu_plan(const struct vfab_host_gpus *host, const struct vfab_config *cfg,
		  struct vfab_gpu_plan *p)
{
	uint32_t next = 0;

	memset(p, 0, sizeof(*p));
	if (cfg->nnodes > VFAB_MAX_NODES || host->n > VFAB_GPU_MAX)
		return -EINVAL;
	p->host = *host;
	p->nnodes = cfg->nnodes;
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		const struct vfab_cfg_node *cn = &cfg->nodes[i];
		struct vfab_gpu_node *g = &p->node[i];
		bool taken[VFAB_GPU_MAX] = {false};

		g->all = !cn->has_gpus || host->n == 0;
		g->wanted = cn->ngpus;
		if (!cn->has_gpus)
			continue;
		p->listed = true;
		p->asked += cn->ngpus;
		if (host->n == 0)
			continue;
		/* Consecutive from where the previous node stopped, around the end. */
		for (uint32_t k = 0; k < cn->ngpus; k++, next = (next + 1) % host->n)
			taken[next] = true;
		/* Each GPU once, in PCI order: how CUDA and nvidia-smi number them in the node. */
		for (uint32_t h = 0; h < host->n; h++)
			if (taken[h])
				g->host[g->n++] = (uint8_t)h;
	}
	p->wrapped = host->n > 0 && p->asked > host->n;
	return 0;
}

int vfab_gpu_plan_node_gpu(const struct vfab_gpu_plan *p, uint32_t node, uint32_t k)
{
	const struct vfab_gpu_node *g;

	if (node >= p->nnodes)
		return -1;
	g = &p->node[node];
	if (g->all)
		return k < p->host.n ? (int)k : -1;
	return k < g->n ? g->host[k] : -1;
}
