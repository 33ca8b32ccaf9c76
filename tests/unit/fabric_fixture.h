/* SPDX-License-Identifier: MIT */
/*
 * Builds a topology from YAML into a region held in ordinary memory (the
 * topology fill and the pure fabric functions never need the shared file).
 * Include after <cmocka.h>.
 */
#ifndef VFAB_TEST_FABRIC_FIXTURE_H
#define VFAB_TEST_FABRIC_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "config/config.h"
#include "fabric/topology.h"

/*
 * A zeroed region in ordinary memory, page-aligned as its layout needs
 * (calloc is not), pages touched only where written.
 */
static inline struct vfab_region *fixture_region(void)
{
	void *r = mmap(NULL, sizeof(struct vfab_region), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	return r == MAP_FAILED ? NULL : r;
}

static inline void fixture_region_free(struct vfab_region *r)
{
	if (r)
		munmap(r, sizeof(*r));
}

/* yaml: the text, or NULL to load the file at path. */
static inline struct vfab_region *fixture_fill(const char *yaml, const char *path)
{
	struct vfab_region *r = fixture_region();
	struct vfab_config cfg;
	char err[512];
	int rc;

	assert_non_null(r);
	snprintf(r->fabric, sizeof(r->fabric), "tfab2");
	rc = yaml ? vfab_config_load_string(yaml, "t.yaml", &cfg, err, sizeof(err))
		  : vfab_config_load_file(path, &cfg, err, sizeof(err));
	if (rc)
		fail_msg("config: %s", err);
	assert_int_equal(vfab_topology_fill(r, &cfg), 0);
	vfab_config_free(&cfg);
	return r;
}

/* The port of node `node`'s HCA number `h` (port 1), with its region indices. */
static inline struct vfab_port *fixture_port(struct vfab_region *r, uint32_t node, uint32_t h,
					     uint32_t *hca_idx)
{
	uint32_t hi = r->nodes[node].hcas[h];

	if (hca_idx)
		*hca_idx = hi;
	return &r->hcas[hi].ports[0];
}

/* The entry of the port's GID table with this raw GID and type, or NULL. */
static inline const struct vfab_gid *fixture_gid(const struct vfab_port *p, uint8_t type,
						 const uint8_t raw[16])
{
	for (uint32_t i = 0; i < p->ngids; i++)
		if (p->gids[i].type == type && !memcmp(p->gids[i].raw, raw, 16))
			return &p->gids[i];
	return NULL;
}

#endif /* VFAB_TEST_FABRIC_FIXTURE_H */
