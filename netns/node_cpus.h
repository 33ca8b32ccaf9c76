/* SPDX-License-Identifier: MIT */
/*
 * A node's CPUs: a cpuset cgroup per node, so that every process of the node
 * (the holder and what it starts, and whatever `vfab exec`, ssh or `vfab run`
 * brings in) sees only the node's cores — in sched_getaffinity (nproc, NCCL),
 * in /proc/self/cgroup and the cgroup's cpuset files (hwloc, Open MPI).
 *
 * Layout, cgroup v1 (a "cpuset" hierarchy) or v2 (the unified hierarchy with
 * the cpuset controller), whichever the host mounts at /sys/fs/cgroup:
 *   v1: /sys/fs/cgroup/cpuset/vfab-<fabric>/<node>
 *   v2: /sys/fs/cgroup/vfab-<fabric>/<node>
 *   a fabric without root (netns/userns.h): <D>/vfab-<fabric>/<node>, D the
 *       cgroup v2 subtree delegated to the user (the highest directory above
 *       its own cgroup that it owns, e.g. systemd's user@<uid>.service) when
 *       cpuset reaches D; otherwise no cgroup (root's names are root's)
 * The node's list and cgroup directory are kept in <rundir>/nodes/<node>/,
 * which is what a process joining the node reads; where no cpuset cgroup can be made (a
 * read-only cgroup file system in a container) the CPUs still apply through
 * the affinity of every process of the node.
 */
#ifndef VFAB_NODE_CPUS_H
#define VFAB_NODE_CPUS_H

#include <stddef.h>
#include <sys/types.h>

#include "fabric/cpuset.h"

#define VFAB_NODE_CPUS_FILE "cpus"     /* the node's CPU list */
#define VFAB_NODE_CGROUP_FILE "cgroup" /* the node's cgroup directory, when it has one */

/*
 * Makes the node's cgroup, records its CPUs (and the cgroup, when one could
 * be made) in the node dir and moves `pid` (the holder) onto them. Returns 0,
 * or a negative errno with err set; a host without a usable cpuset cgroup is
 * not an error.
 */
int vfab_node_cpus_setup(const char *fabric, const char *rundir, const char *node,
			 const struct vfab_cpus *cpus, pid_t pid, char *err, size_t errlen);

/* Moves the calling process into the node's cgroup and onto its CPUs. */
int vfab_node_cpus_join(const char *rundir, const char *node);

/* Removes the fabric's cgroups (once their processes are gone). */
int vfab_node_cpus_remove(const char *fabric);

#endif
