/* SPDX-License-Identifier: MIT */
/*
 * What a node sees in /etc on top of the host's: written into the overlay's
 * upper directory before the overlay is mounted.
 */
#ifndef VFAB_NETNS_ETC_VIEW_H
#define VFAB_NETNS_ETC_VIEW_H

#include <stdint.h>

#include "fabric/config.h"

/*
 * Writes into `upper`: hostname (node id), hosts (localhost + the eth0
 * addresses of every node), ld.so.preload (only when `preload_lib` names an
 * existing file) and libibverbs.d/ hiding the host's drivers and holding only
 * vfab.driver = "driver <libdir>/libvfab". Returns 0 or -errno.
 */
int vfab_etc_view_write(const char *upper, const struct vfab_config *cfg, uint32_t node,
			const char *libdir, const char *preload_lib);

#endif /* VFAB_NETNS_ETC_VIEW_H */
