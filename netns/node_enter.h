/* SPDX-License-Identifier: MIT */
/*
 * Joining a running node: its network, UTS and mount namespaces (held open by
 * the node's holder process), then a seccomp filter that hides the kernel's
 * RDMA netlink family so libibverbs always discovers the node's sysfs view,
 * and in a node with GPUs of its own one that keeps the others' device nodes
 * from being made again.
 */
#ifndef VFAB_NETNS_NODE_ENTER_H
#define VFAB_NETNS_NODE_ENTER_H

#include <stdint.h>

/*
 * Enter node `node` of the fabric whose run dir is `rundir`. On success the
 * calling process (single-threaded: setns of a mount namespace requires it)
 * lives in the node, with its previous working directory if that exists
 * there, else "/". Returns 0 or -errno (-ENOENT: no such node; -ESRCH: its
 * holder is gone).
 */
int vfab_node_enter(const char *rundir, const char *node);

/*
 * Install the filter making socket(AF_NETLINK, *, NETLINK_RDMA) fail with
 * EPROTONOSUPPORT, inherited by every child. Exposed for tests.
 */
int vfab_node_block_rdma_netlink(void);

/*
 * In a node with GPUs of its own (node_gpus.h): the filter making mknod and
 * mknodat of a GPU device node (character device 195:0..253) fail with EPERM
 * unless its minor is one of keep[]. nvidia-modprobe, which CUDA and NVML run
 * (setuid) to make missing /dev/nvidia<N> nodes, would otherwise make the
 * other GPUs' again in the node's /dev. Inherited by every child. 0 or -errno.
 */
int vfab_node_block_gpu_mknod(const uint32_t *keep, uint32_t nkeep);

#endif /* VFAB_NETNS_NODE_ENTER_H */
