/* SPDX-License-Identifier: MIT */
/* Live sysfs counters/ and hw_counters/ from the region (the view is netns/sysfs_view.h's). */
#ifndef VFAB_DAEMON_VFABD_COUNTERS_H
#define VFAB_DAEMON_VFABD_COUNTERS_H

struct vfabd;
/* Last values written to a port's counter files; see vfabd_counters.c. */
struct vfabd_port_cache;

struct vfabd_counters {
	struct vfabd_port_cache *cache; /* VFAB_MAX_HCAS * VFAB_MAX_PORTS entries */
};

int vfabd_counters_init(struct vfabd *d);
void vfabd_counters_tick(struct vfabd *d);
void vfabd_counters_free(struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_COUNTERS_H */
