/* SPDX-License-Identifier: MIT */
/*
 * `vfab up`'s part in nodes[].gpus (netns/gpu_plan.h): plan the nodes' GPUs
 * against this host, and say what each node got.
 */
#ifndef VFAB_TOOLS_UP_GPUS_H
#define VFAB_TOOLS_UP_GPUS_H

#include <stdio.h>

#include "config/config.h"
#include "netns/gpu_plan.h"

/* The host's GPUs (/sys, /proc, /dev), then the plan. 0 or -errno. */
int vfab_up_gpus_plan(const struct vfab_config *cfg, struct vfab_gpu_plan *p);

/*
 * When some node lists gpus: one line per node with the host GPUs it sees,
 * and a line when the lists wrap around or the host has no NVIDIA GPU.
 */
void vfab_up_gpus_print(FILE *f, const struct vfab_config *cfg, const struct vfab_gpu_plan *p);

#endif /* VFAB_TOOLS_UP_GPUS_H */
