/* SPDX-License-Identifier: MIT */
/*
 * The node's HCA addresses: every RoCE v2 GID of the process's HCA ports,
 * with its port, GID index and netdev, read from the GID tables when the
 * agent starts and again after they change (the agent calls
 * vfab_cm_local_invalidate on a context's GID_CHANGE or port event, which
 * vfabd raises once the new table is in place). Binding, resolving,
 * answering a REQ and listening on the wildcard address all look here, so
 * none of them reads sysfs: a wildcard listen or a burst of REQs costs no
 * file operation. The path MTU is taken at each look (a netdev's MTU
 * changes without an event). Callers hold the agent's lock.
 */
#ifndef VFAB_CM_LOCAL_H
#define VFAB_CM_LOCAL_H

#include <infiniband/verbs.h>
#include <sys/socket.h>

#include "cm/cm_route.h"

/* The contexts whose ports the cache describes (the agent's, once). */
void vfab_cm_local_set_devices(struct ibv_context *const *ctxs, int n);

/* Where addr (an IP address of this node) lives; -EADDRNOTAVAIL when no HCA has it. */
int vfab_cm_local_find(const struct sockaddr *addr, struct vfab_cm_local *out);

/*
 * The i-th (from 0) address of the family that an HCA has (AF_INET: the
 * IPv4-mapped GIDs; AF_INET6: the others), port 0; -ENOENT past the last.
 */
int vfab_cm_local_addr(int family, int i, struct sockaddr_storage *ss);

/* The GID tables or ports changed: read them again on the next look. */
void vfab_cm_local_invalidate(void);

/* Read them now if they are not (the agent starts: listening must not wait for it). */
void vfab_cm_local_refresh(void);

#endif /* VFAB_CM_LOCAL_H */
