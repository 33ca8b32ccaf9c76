/* SPDX-License-Identifier: MIT */
/*
 * What makes a node a host of its own to software that asks "are we on the
 * same machine?" (UCX and MPICH choose shared memory and CMA between
 * processes that share a boot_id and an IPC namespace; NCCL hashes the
 * boot_id into its host identity; systemd tools read /etc/machine-id):
 *   - /proc/sys/kernel/random/boot_id: a random UUID per node, bound over the
 *     kernel's file in the node's mount namespace;
 *   - /etc/machine-id: 32 random hex digits per node (the /etc overlay);
 *   - an IPC namespace per node (System V shared memory, message queues and
 *     semaphores; made by the holder, entered by node_enter);
 *   - a private /dev/shm (POSIX shared memory), in which the fabric's region
 *     file is the only entry: the provider finds it at the same path as on
 *     the host, and nothing else is shared between nodes.
 * The hostname and /etc/hosts are the holder's and etc_view's.
 */
#ifndef VFAB_NODE_IDENTITY_H
#define VFAB_NODE_IDENTITY_H

#include <stddef.h>

#define VFAB_NODE_BOOT_ID_FILE "boot_id" /* in the node dir */
#define VFAB_HOST_BOOT_ID "/proc/sys/kernel/random/boot_id"
#define VFAB_HOST_SHM "/dev/shm"

/* New identities: <node_dir>/boot_id and <etc_upper>/machine-id. */
int vfab_node_identity_write(const char *node_dir, const char *etc_upper);

/*
 * In the node's (new, private) mount namespace: the node's boot_id over the
 * kernel's, a fresh /dev/shm holding only the region file.
 */
int vfab_node_identity_mount(const char *node_dir, const char *region_path, char *err,
			     size_t errlen);

#endif
