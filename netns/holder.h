/* SPDX-License-Identifier: MIT */
/*
 * The holder process of a node: it owns the node's network, UTS and mount
 * namespaces so they outlive every user process, and sleeps until SIGTERM.
 */
#ifndef VFAB_NETNS_HOLDER_H
#define VFAB_NETNS_HOLDER_H

#include <stddef.h>
#include <sys/types.h>

/* The holder's comm, which `down` checks before it kills a recorded pid. */
#define VFAB_HOLDER_COMM "vfab-holder"

/*
 * Fork the holder of `node`: it detaches (setsid, fds closed), unshares
 * net+uts+mnt, sets the hostname, mounts the node's views (node_mounts.h),
 * writes <rundir>/nodes/<node>/holder.pid and reports back. Returns 0 with
 * *pid set once the holder is ready, or -errno with `err` saying what failed
 * (the holder is then gone and reaped).
 */
int vfab_holder_start(const char *rundir, const char *node, const char *region_path, pid_t *pid,
		      char *err, size_t errlen);

/* True when pid is alive and is a holder (its comm says so). */
int vfab_holder_is_alive(pid_t pid);

#endif /* VFAB_NETNS_HOLDER_H */
