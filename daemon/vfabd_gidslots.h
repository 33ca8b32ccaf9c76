/* SPDX-License-Identifier: MIT */
/*
 * The kernel's GID index allocation (pure). From the port's current table
 * `cur` (region layout: entries carry their index) and the netdev's current
 * addresses `want` (new ones are added in this order), fills out[i] = the
 * entry of index i (empty: type VFAB_GID_EMPTY, all zero). Returns the table
 * length (highest populated index + 1); *dropped counts addresses that found
 * no free index below VFAB_PORT_GIDS.
 */
#ifndef VFAB_DAEMON_VFABD_GIDSLOTS_H
#define VFAB_DAEMON_VFABD_GIDSLOTS_H

#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"

struct vfab_gid_addr;
int vfabd_gid_slots(const uint8_t mac[6], const struct vfab_gid *cur, size_t ncur,
		    const struct vfab_gid_addr *want, size_t nwant,
		    struct vfab_gid out[VFAB_PORT_GIDS], size_t *dropped);

#endif /* VFAB_DAEMON_VFABD_GIDSLOTS_H */
