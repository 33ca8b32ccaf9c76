/* SPDX-License-Identifier: MIT */
/*
 * Puts a new table (as vfabd_gid_slots made it, len entries) into the
 * region, rewrites the changed gids/N, gid_attrs/types/N and
 * gid_attrs/ndevs/N view files and raises IBV_EVENT_GID_CHANGE on every
 * registered context of the HCA. Returns the number of entries that changed
 * (0: nothing was done), or -errno when a view file could not be replaced
 * (the region is updated all the same).
 */
#ifndef VFAB_DAEMON_VFABD_GIDPUBLISH_H
#define VFAB_DAEMON_VFABD_GIDPUBLISH_H

#include <stdint.h>

#include "fabric/region.h"

struct vfabd;

int vfabd_gid_publish(struct vfabd *d, uint32_t hca, uint32_t port, const struct vfab_gid *table,
		      uint32_t len);

#endif /* VFAB_DAEMON_VFABD_GIDPUBLISH_H */
