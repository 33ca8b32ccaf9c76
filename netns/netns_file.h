/* SPDX-License-Identifier: MIT */
/*
 * Published network namespaces: /run/netns/vfab-<fabric>-<suffix> bind mounts
 * of a namespace file, the way `ip netns` keeps them (so `ip netns list`
 * shows them and they outlive their processes), and running code inside one.
 */
#ifndef VFAB_NETNS_NETNS_FILE_H
#define VFAB_NETNS_NETNS_FILE_H

#include <stddef.h>
#include <sys/types.h>

#include "base/paths.h"

/* The paths (vfab_netns_path, VFAB_NETNS_DIR) are in base/paths.h. */

/* Bind-mount the namespace file `src` (e.g. /proc/PID/ns/net) on a new file `dst`. */
int vfab_netns_publish(const char *src, const char *dst);

/* Publish the network namespace of `pid` as /run/netns/vfab-<fabric>-<suffix>. */
int vfab_net_bind_ns(const char *fabric, const char *suffix, pid_t pid);

/* Unmount and delete a published namespace file; a missing one is fine. */
int vfab_net_unbind_ns(const char *fabric, const char *suffix);

/* Open a published namespace: fd or -errno. */
int vfab_netns_open(const char *fabric, const char *suffix);

/*
 * Run fn inside the network namespace `nsfd` and come back (aborts if it
 * cannot: going on in the wrong namespace could touch the host network).
 */
int vfab_netns_run(int nsfd, int (*fn)(void *), void *arg);

#endif /* VFAB_NETNS_NETNS_FILE_H */
