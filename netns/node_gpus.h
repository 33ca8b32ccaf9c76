/* SPDX-License-Identifier: MIT */
/*
 * A node's own GPUs (DESIGN.md "Node sandbox", step 0). `vfab up` writes the
 * node's share of the plan (gpu_plan.h) into <node dir>/gpus; the holder then
 * shows only those GPUs in the node, as nvidia-container-toolkit does in a
 * container, so that CUDA, NVML (nvidia-smi) and torch count just them:
 *   - /dev: an overlay whose lower layer is the host's /dev (everything else
 *     stays live) and whose upper layer, a small tmpfs, holds a whiteout for
 *     every other host GPU's nvidia<minor>; the mounts that were on /dev
 *     (pts, shm, mqueue, hugepages ...) are bound back on top;
 *   - /proc/driver/nvidia/gpus (where the driver has it): a read-only tmpfs
 *     holding only the node's GPUs' directories, bound from the driver's;
 *   - every process entering the node (node_enter.c) gets a seccomp filter
 *     refusing to create another GPU's device node (major 195): CUDA's
 *     setuid helper nvidia-modprobe would otherwise make the missing ones.
 * A node without the file (no gpus list, or a host without NVIDIA GPUs)
 * keeps the host's /dev and /proc as they are.
 */
#ifndef VFAB_NETNS_NODE_GPUS_H
#define VFAB_NETNS_NODE_GPUS_H

#include <stddef.h>
#include <stdint.h>

#include "netns/gpu_plan.h"

struct vfab_node_gpus {
	uint32_t nkeep, nhide;
	uint32_t keep[VFAB_GPU_MAX]; /* minors of the node's GPUs */
	uint32_t hide[VFAB_GPU_MAX]; /* minors of the host's other GPUs */
};

/*
 * <rundir>/nodes/<node>/gpus for config node `cfg_node` of the plan, or
 * nothing when that node sees every host GPU. Returns 0 or -errno.
 */
int vfab_node_gpus_write(const char *rundir, const char *node, const struct vfab_gpu_plan *p,
			 uint32_t cfg_node);

/* Reads it back. -ENOENT: the node keeps every host GPU; -EINVAL: malformed. */
int vfab_node_gpus_load(const char *rundir, const char *node, struct vfab_node_gpus *g);

/*
 * In the holder, in the node's fresh mount namespace, before anything else
 * mounts under /dev: the /dev overlay and /proc/driver/nvidia/gpus above.
 * Nothing without the file. Returns 0 or -errno with `err` saying what failed.
 */
int vfab_node_gpus_mount(const char *rundir, const char *node, char *err, size_t errlen);

#endif /* VFAB_NETNS_NODE_GPUS_H */
