/* SPDX-License-Identifier: MIT */
/* LINK and SHAPE requests: link state and shaping at run time. */
#ifndef VFAB_DAEMON_VFABD_LINK_H
#define VFAB_DAEMON_VFABD_LINK_H

#include <stdint.h>

#include "fabric/region.h"

struct vfabd;
struct vfabd_conn;

/* What LINK counts: the downs of each port (sysfs link_downed). */
struct vfabd_link {
	uint64_t downed[VFAB_MAX_HCAS][VFAB_MAX_PORTS];
};

void vfabd_req_link(struct vfabd *d, struct vfabd_conn *c, char *args);
void vfabd_req_shape(struct vfabd *d, struct vfabd_conn *c, char *args);
/* Sets a link's latency from its base value (spikes are added on top). */
void vfabd_link_set_latency(struct vfabd *d, uint32_t link, uint32_t base_ns);

#endif /* VFAB_DAEMON_VFABD_LINK_H */
