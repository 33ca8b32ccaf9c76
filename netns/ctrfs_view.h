/* SPDX-License-Identifier: MIT */
/*
 * The counters file system as the nodes and the host tools see it: vfabd
 * serves <rundir>/counters/<node>/<hca>/<port>/{counters,hw_counters}/
 * (daemon/vfabd_countersfs.h), each node binds its own ports' directories
 * over its view's at the same paths, and `vfab down` removes the mount,
 * also after vfabd was killed.
 */
#ifndef VFAB_NETNS_CTRFS_VIEW_H
#define VFAB_NETNS_CTRFS_VIEW_H

#include <stddef.h>

/*
 * In the node's fresh mount namespace (node_mounts.c), once `cls` holds the
 * node's /sys/class with class/infiniband bound from its view: binds
 * <rundir>/counters/<node>/<hca>/<p>/<sub> read-only over
 * <cls>/infiniband/<hca>/ports/<p>/<sub> for every such directory both
 * have. Nothing to do (0) where vfabd serves no counters file system: the
 * view's files stay, refreshed on vfabd's tick. 0 or -errno with `err`.
 */
int vfab_ctrfs_bind_node(const char *rundir, const char *node, const char *cls, char *err,
			 size_t errlen);

/* Detaches the host's mount at <rundir>/counters, live or left by a killed vfabd. */
int vfab_ctrfs_unmount(const char *rundir);

/*
 * Which way the fabric of `rundir` keeps its counters, from the host's
 * mount table (never touching the mount: a stopped vfabd would hang the
 * caller): 1 the file system is mounted (exact at every read), 0 it is not
 * (the view's files, refreshed on a tick), -errno.
 */
int vfab_ctrfs_mounted(const char *rundir);

#endif /* VFAB_NETNS_CTRFS_VIEW_H */
