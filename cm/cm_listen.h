/* SPDX-License-Identifier: MIT */
/*
 * Listening: a listener publishes, for each address it covers that an HCA
 * of the node has, an entry naming its port's CM QP in the listener
 * directory (cm_dir.h), before rdma_listen returns, so a REQ sent right
 * after finds it. A wildcard listener covers the node's HCA addresses
 * (cm_local.h) and follows them: when they change it publishes the new
 * ones and removes the old. Listening costs a few file operations per
 * address and no look at sysfs or netlink. Called with the agent's lock
 * held; 0 or -errno.
 */
#ifndef VFAB_CM_LISTEN_H
#define VFAB_CM_LISTEN_H

#include <stdint.h>

#include "cm/cm_id.h"

int vfab_cm_listen(struct vfab_cm_id *id);

/* Remove id's entries (the listener goes). */
void vfab_cm_unlisten(struct vfab_cm_id *id);

/* The listener of a service (port space, family, address bytes, port), or NULL. */
struct vfab_cm_id *vfab_cm_listener_find(uint16_t ps, int family, const uint8_t addr[16],
					 uint16_t port);

/* The node's HCA addresses changed: wildcard listeners follow (the agent's hook). */
void vfab_cm_listen_follow(void);

#endif /* VFAB_CM_LISTEN_H */
