/* SPDX-License-Identifier: MIT */
/*
 * A process's own copy of a fabric's topology. The shared region is mode
 * 0666: any local user may rewrite its names (node ids, HCA names, netdevs,
 * the run dir), its indices and its counts at any moment. Root processes
 * (vfabd, `vfab up`, the CLI run as root) therefore never take a path, a
 * name they open or an index they follow from it: they fill a private copy
 * from the config they parsed themselves, with the same function that fills
 * the region, and read the region only for values they print or compare.
 *
 * The copy is a struct vfab_region in private anonymous memory mapped without
 * a reservation: only its header and topology tables are ever written, and
 * its object tables (most of its 1.7 GiB, region.h) cost nothing.
 */
#include "fabric/topology.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

int vfab_topology_private(const char *fabric, const char *rundir, const struct vfab_config *cfg,
			  struct vfab_region **out)
{
	struct vfab_region *t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	int rc;

	if (t == MAP_FAILED)
		return -ENOMEM;
	if ((size_t)snprintf(t->fabric, sizeof(t->fabric), "%s", fabric) >= sizeof(t->fabric) ||
	    (size_t)snprintf(t->rundir, sizeof(t->rundir), "%s", rundir) >= sizeof(t->rundir)) {
		munmap(t, sizeof(*t));
		return -ENAMETOOLONG;
	}
	t->magic = VFAB_REGION_MAGIC;
	t->version = VFAB_REGION_VERSION;
	rc = vfab_topology_fill(t, cfg);
	if (rc) {
		munmap(t, sizeof(*t));
		return rc;
	}
	*out = t;
	return 0;
}

void vfab_topology_private_free(struct vfab_region *t)
{
	if (t)
		munmap(t, sizeof(*t));
}

int vfab_topology_publish(struct vfab_region *r, const struct vfab_region *t)
{
	if (r->nnodes || atomic_load(&r->ready))
		return -EEXIST;
	/* Table by table: the region's locks and slots around them stay as created. */
	memcpy(&r->spine, &t->spine, sizeof(r->spine));
	memcpy(r->nodes, t->nodes, sizeof(r->nodes));
	memcpy(r->hcas, t->hcas, sizeof(r->hcas));
	memcpy(r->links, t->links, sizeof(r->links));
	memcpy(r->leaves, t->leaves, sizeof(r->leaves));
	r->nnodes = t->nnodes;
	r->nhcas = t->nhcas;
	r->nlinks = t->nlinks;
	r->nleaves = t->nleaves;
	atomic_store_explicit(&r->ready, 1, memory_order_release);
	return 0;
}
