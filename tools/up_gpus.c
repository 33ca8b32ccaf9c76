/* SPDX-License-Identifier: MIT */
#include "tools/up_gpus.h"

#include "base/paths.h"

int vfab_up_gpus_plan(const struct vfab_config *cfg, struct vfab_gpu_plan *p)
{
	struct vfab_host_gpus host;
	int ret = vfab_host_gpus_scan(VFAB_HOST_SYSFS, VFAB_HOST_PROC, VFAB_HOST_DEV, &host);

	return ret ? ret : vfab_gpu_plan(&host, cfg, p);
}

/* "0,1 (/dev/nvidia0 /dev/nvidia1)": host indices, then the device nodes. */
static void print_list(FILE *f, const struct vfab_gpu_plan *p, const struct vfab_gpu_node *g)
{
	for (uint32_t k = 0; k < g->n; k++)
		fprintf(f, "%s%u", k ? "," : "", (unsigned)g->host[k]);
	fprintf(f, " (");
	for (uint32_t k = 0; k < g->n; k++)
		fprintf(f, "%s" VFAB_HOST_DEV "/" VFAB_NVIDIA_DEV_PREFIX "%u", k ? " " : "",
			p->host.gpu[g->host[k]].minor);
	fprintf(f, ")");
}

void vfab_up_gpus_print(FILE *f, const struct vfab_config *cfg, const struct vfab_gpu_plan *p)
{
	if (!p->listed)
		return;
	if (p->host.n == 0) {
		fprintf(f, "  gpus: the host has no NVIDIA GPU: nodes[].gpus only count ranks, "
			   "every node sees the host's /dev as is\n");
		return;
	}
	for (uint32_t i = 0; i < p->nnodes && i < cfg->nnodes; i++) {
		const struct vfab_gpu_node *g = &p->node[i];

		fprintf(f, "  %-15s gpus: ", cfg->nodes[i].id);
		if (g->all)
			fprintf(f, "every host GPU (no gpus list)\n");
		else if (g->n == 0)
			fprintf(f, "none (gpus: 0)\n");
		else {
			fprintf(f, "host GPU ");
			print_list(f, p, g);
			if (g->n < g->wanted)
				fprintf(f, "; %u asked for, the host has %u", g->wanted, p->host.n);
			fprintf(f, "\n");
		}
	}
	if (p->wrapped)
		fprintf(f,
			"  gpus: the nodes list %u GPUs, the host has %u: the lists wrap around, "
			"so nodes share GPUs\n",
			p->asked, p->host.n);
	if (p->host.minors_unordered)
		fprintf(f, "  gpus: GPU numbers are PCI order (nvidia-smi's and CUDA's); the "
			   "host's /dev/nvidia minors are not in that order\n");
}
