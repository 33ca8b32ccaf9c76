/* SPDX-License-Identifier: MIT */
/*
 * Bringing node sandboxes up (views, holder, network) and taking a whole
 * fabric's sandboxes down again from its run dir alone.
 */
#ifndef VFAB_NETNS_SANDBOX_H
#define VFAB_NETNS_SANDBOX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/paths.h"
#include "config/config.h"
#include "fabric/region.h"
#include "netns/gpu_plan.h"

/* In the run dir: this fabric made the host's empty /dev/infiniband mount point. */
#define VFAB_DEVIB_MARKER "dev-infiniband-created"
#define VFAB_HOST_DEVIB "/dev/infiniband"

struct vfab_sandbox {
	const char *fabric;
	const char *rundir;
	const struct vfab_config *cfg;
	/*
	 * `up`'s own topology (vfab_topology_private from cfg): every name,
	 * path and index of the sandboxes. Never the shared region, which any
	 * local user may rewrite while `up` runs as root.
	 */
	const struct vfab_region *topo;
	const char *libdir;	    /* absolute: holds VFAB_PROVIDER_LIB */
	const char *preload_lib;    /* absolute path of libvfab-preload.so */
	const char *const *libdirs; /* absolute; the nodes' ld.so.cache covers them */
	unsigned nlibdirs;
	int ssh; /* an sshd per node (node_sshd.h) */
	/* Each node's host GPUs (gpu_plan.h); NULL: every node sees every host GPU. */
	const struct vfab_gpu_plan *gpus;
	/* Says something `up` should tell the user but that is no failure; may be NULL. */
	void (*note)(const char *text);
};

/* <rundir>/libdirs: the --libdir directories of `up`, one per line. */
#define VFAB_LIBDIRS_FILE "libdirs"

/*
 * Fabric-wide preparation: a tmpfs on <rundir>/nodes for the views (they are
 * thousands of small files per HCA: on a disk file system creating them takes
 * seconds), the host's /dev/infiniband mount point (created, and recorded,
 * only if missing), the fabric namespace with a bridge per leaf and the spine
 * router (fabric_net.h), the launcher files (launch_files.h), <rundir>/libdirs
 * and, with `ssh`, the keys and configs.
 */
int vfab_sandbox_prepare(const struct vfab_sandbox *sb, char *err, size_t errlen);

/*
 * One node (index into topo's nodes[]): writes its sysfs, /dev and
 * /etc views and its GPU list, starts its holder, publishes its namespace and builds its
 * network. Then, inside the node,
 * ldconfig when there are libdirs and sshd with `ssh`.
 */
int vfab_sandbox_node_up(const struct vfab_sandbox *sb, uint32_t node, pid_t *holder, char *err,
			 size_t errlen);

/*
 * Tear down every sandbox of a fabric, working from the run dir alone (the
 * daemon may be dead, `up` may have stopped half-way): kill the processes in
 * each node's network namespace (SIGTERM, then SIGKILL after a grace period)
 * and the holders, unpublish the namespaces (the fabric one takes the bridges,
 * the router and the veths with it), unlink the region, remove the run dir.
 * Goes on past errors; returns the first one with `err` saying what it was.
 */
int vfab_sandbox_teardown(const char *fabric, const char *rundir, char *err, size_t errlen);

/* Anything of this fabric left on the host (run dir, region, namespace)? */
int vfab_sandbox_exists(const char *fabric, const char *rundir);

#endif /* VFAB_NETNS_SANDBOX_H */
