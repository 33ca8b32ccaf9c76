/* SPDX-License-Identifier: MIT */
/*
 * Which host GPUs each node gets (DESIGN.md "Node sandbox", configs/README.md
 * "GPUs"). Two steps:
 *   vfab_host_gpus_scan (gpu_host.c) the host's NVIDIA GPUs, in PCI order,
 *                       each with its /dev/nvidia<minor>;
 *   vfab_gpu_plan       (gpu_plan.c, pure) nodes[].gpus -> per node the
 *                       host GPUs it sees.
 * Host GPU k is the k-th in PCI order: nvidia-smi's index, CUDA's order for
 * identical GPUs (and with CUDA_DEVICE_ORDER=PCI_BUS_ID), the order the PCI
 * view numbers hcas[].gpu in. The driver's minor numbers usually follow it
 * but need not (minors are handed out in probe order): the device node is
 * carried per GPU, never derived from k.
 */
#ifndef VFAB_NETNS_GPU_PLAN_H
#define VFAB_NETNS_GPU_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "fabric/region.h"
#include "netns/pci_view.h"

#define VFAB_HOST_DEV "/dev"
#define VFAB_HOST_PROC "/proc"
/* Below /proc: the driver's <bus id>/information per GPU. */
#define VFAB_NVIDIA_PROC_GPUS "driver/nvidia/gpus"
/* /dev/nvidia<minor> */
#define VFAB_NVIDIA_DEV_PREFIX "nvidia"
/* Host GPUs considered: as many as the PCI view enumerates. */
#define VFAB_GPU_MAX VFAB_PCI_MAX_GPUS
/* GPU minors: 254 is nvidia-modeset, 255 nvidiactl. */
#define VFAB_GPU_MAX_MINOR 253
/* The driver's fixed major (NV_MAJOR_DEVICE_NUMBER). */
#define VFAB_GPU_NVIDIA_MAJOR 195

struct vfab_host_gpu {
	uint32_t minor; /* /dev/nvidia<minor> */
	char busid[16]; /* "0000:1b:00.0"; "" when the host does not say */
	int pci_index;	/* its index among the PCI view's GPUs (hcas[].gpu); -1: none */
};

struct vfab_host_gpus {
	uint32_t n;
	struct vfab_host_gpu gpu[VFAB_GPU_MAX]; /* PCI order */
	bool minors_unordered;			/* the minors do not rise with PCI order */
};

struct vfab_gpu_node {
	bool all;	 /* no gpus list (or no GPU on the host): nothing hidden */
	uint32_t wanted; /* entries of its gpus list */
	uint32_t n;	 /* distinct host GPUs it gets (< wanted only past the host's count) */
	uint8_t host[VFAB_GPU_MAX]; /* host GPU indices; cuda:k in the node is host[k] */
};

struct vfab_gpu_plan {
	struct vfab_host_gpus host;
	uint32_t nnodes;
	struct vfab_gpu_node node[VFAB_MAX_NODES]; /* config order */

	bool listed;	/* some node lists gpus */
	uint32_t asked; /* sum of the lists */
	bool wrapped;	/* asked > host.n > 0: the lists wrap, nodes share GPUs */
};

/*
 * Plans the GPUs of cfg's nodes on `host`: nodes with a gpus list take host
 * GPUs in node order, consecutively, wrapping around past the last; a node
 * without one sees them all. On a host without GPUs every node is `all`
 * (the lists only count ranks). Returns 0 or -EINVAL (too many nodes).
 */
int vfab_gpu_plan(const struct vfab_host_gpus *host, const struct vfab_config *cfg,
		  struct vfab_gpu_plan *p);

/*
 * The host GPU (index into host.gpu[]) behind the node's GPU k (hcas[].gpu),
 * or -1 when the node has no GPU k. A node that sees every host GPU: k.
 */
int vfab_gpu_plan_node_gpu(const struct vfab_gpu_plan *p, uint32_t node, uint32_t k);

/*
 * The host's GPUs: the entries of <procroot>/driver/nvidia/gpus (the nvidia
 * driver's, "Device Minor: N" in each one's information file) sorted by bus
 * id, each matched with the PCI view's GPUs under `sysroot`; without that
 * directory, the /dev/nvidia<N> character devices of `devdir` in minor order.
 * A host without either has none. Returns 0 or -errno.
 */
int vfab_host_gpus_scan(const char *sysroot, const char *procroot, const char *devdir,
			struct vfab_host_gpus *h);

/* The /dev/nvidia<N> character devices of `devdir`, in minor order (no bus ids). */
int vfab_dev_gpus_scan(const char *devdir, struct vfab_host_gpus *h);

/* The minor in a driver information file ("Device Minor: N"). 0, -ENODATA or -errno. */
int vfab_nvidia_info_minor(const char *path, uint32_t *minor);

#endif /* VFAB_NETNS_GPU_PLAN_H */
