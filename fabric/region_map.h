/* SPDX-License-Identifier: MIT */
/*
 * What this process knows of each region it mapped, kept outside the region
 * itself: the mapping's size (and the file, for reserving pool space), taken
 * from the file when it was mapped. The region's own header fields
 * (total_size, pool_off, pool_size, ...) are every local user's to rewrite,
 * so unmapping and every bound of the ring pool use these instead.
 * region.c registers; pool.c, vfabd and the provider read the bounds.
 */
#ifndef VFAB_REGION_MAP_H
#define VFAB_REGION_MAP_H

#include <stdint.h>

struct vfab_region;

#define VFAB_REGION_MAPS 16 /* regions one process maps at once */

struct vfab_region_map {
	const struct vfab_region *r;
	uint64_t bytes; /* the mapping's length: the file's size when it was mapped */
	int fd;		/* the file of this process's shard (O_RDWR), or -1 */
	char path[256]; /* the region file: its shards' files are beside it (base/paths.h) */
};

/* Records a new mapping; -ENOSPC when VFAB_REGION_MAPS are recorded. */
int vfab_region_map_add(const struct vfab_region *r, uint64_t bytes, int fd, const char *path);
/* The file of r's shard, once it has one (closing the one before); -ENOENT if unknown. */
int vfab_region_map_set_fd(const struct vfab_region *r, int fd);
/* Forgets r's mapping into *out (whose fd the caller closes); -ENOENT if unknown. */
int vfab_region_map_remove(const struct vfab_region *r, struct vfab_region_map *out);
/* r's mapping; -ENOENT if this process did not map it with region.c. */
int vfab_region_map_get(const struct vfab_region *r, struct vfab_region_map *out);

#endif /* VFAB_REGION_MAP_H */
