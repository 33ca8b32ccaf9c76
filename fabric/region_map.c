/* SPDX-License-Identifier: MIT */
#include "fabric/region_map.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static pthread_mutex_t maps_lock = PTHREAD_MUTEX_INITIALIZER;
static struct vfab_region_map maps[VFAB_REGION_MAPS];

int vfab_region_map_add(const struct vfab_region *r, uint64_t bytes, int fd, const char *path)
{
	int rc = -ENOSPC;

	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < VFAB_REGION_MAPS; i++) {
		if (maps[i].r)
			continue;
		maps[i] = (struct vfab_region_map){r, bytes, fd, ""};
		snprintf(maps[i].path, sizeof(maps[i].path), "%s", path);
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&maps_lock);
	return rc;
}

int vfab_region_map_remove(const struct vfab_region *r, struct vfab_region_map *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < VFAB_REGION_MAPS; i++) {
		if (maps[i].r != r)
			continue;
		*out = maps[i];
		maps[i] = (struct vfab_region_map){0};
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&maps_lock);
	return rc;
}

int vfab_region_map_get(const struct vfab_region *r, struct vfab_region_map *out)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < VFAB_REGION_MAPS; i++) {
		if (maps[i].r != r)
			continue;
		*out = maps[i];
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&maps_lock);
	return rc;
}

int vfab_region_map_set_fd(const struct vfab_region *r, int fd)
{
	int rc = -ENOENT;

	pthread_mutex_lock(&maps_lock);
	for (int i = 0; i < VFAB_REGION_MAPS; i++) {
		if (maps[i].r != r)
			continue;
		if (maps[i].fd >= 0)
			close(maps[i].fd);
		maps[i].fd = fd;
		rc = 0;
		break;
	}
	pthread_mutex_unlock(&maps_lock);
	return rc;
}
