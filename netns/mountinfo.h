/* SPDX-License-Identifier: MIT */
/*
 * The mounts sitting directly on a mount point, from /proc/self/mountinfo:
 * a node that covers /sys or /dev with a mount of its own puts them back on
 * top (node_mounts.c, node_gpus.c).
 */
#ifndef VFAB_NETNS_MOUNTINFO_H
#define VFAB_NETNS_MOUNTINFO_H

#define VFAB_MOUNTPOINT_MAX 256

/*
 * The mount points of the mounts whose parent is the visible mount at `mp`
 * ("/sys": /sys/fs/cgroup, /sys/kernel/debug ...), each once, at most `max`,
 * in mountinfo's order (parents before children). Longer paths are left out.
 * Returns how many, or -errno.
 */
int vfab_mount_children(const char *mp, char (*out)[VFAB_MOUNTPOINT_MAX], int max);

#endif /* VFAB_NETNS_MOUNTINFO_H */
