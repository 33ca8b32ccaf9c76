/* SPDX-License-Identifier: MIT */
/*
 * The mount namespace of a node (DESIGN.md "Node sandbox"): for a node with
 * GPUs of its own, a /dev and /proc/driver/nvidia/gpus showing only those
 * (node_gpus.h); a sysfs of the
 * node's network namespace on /sys whose class/infiniband* come from the run
 * dir views, /dev/infiniband from the run dir, an overlay on /etc, and a
 * private /var/cache/ldconfig (ldconfig in a node must not write the host's),
 * and the host's /proc once more under the run dir (vfab_host_proc_dir).
 */
#ifndef VFAB_NETNS_NODE_MOUNTS_H
#define VFAB_NETNS_NODE_MOUNTS_H

#include <stddef.h>

/*
 * Run inside the freshly unshared namespaces of the holder (mount and
 * network). Returns 0 or -errno with `err` naming the step that failed.
 */
int vfab_node_mounts_setup(const char *rundir, const char *node, const char *region_path, char *err,
			   size_t errlen);

/*
 * No peer memory client in a node: vfab's HCAs reach host memory only.
 * NCCL and UCX take nvidia_peermem's (or MOFED's nv_mem) sysfs entry as
 * GPUDirect RDMA through the HCA, and would then register GPU memory with
 * it. Where the host has one loaded, an empty read-only tmpfs covers each
 * such directory under `sys` (the node's fresh sysfs), as on a host with a
 * ConnectX and no peer memory module. 0 or -errno.
 */
int vfab_node_hide_peer_memory(const char *sys);

#endif /* VFAB_NETNS_NODE_MOUNTS_H */
