/* SPDX-License-Identifier: MIT */
/*
 * RDMA CM multicast (rdma_join_multicast, rdma_join_multicast_ex,
 * rdma_leave_multicast): the memberships of the process's IDs and the
 * MULTICAST_JOIN event the kernel's cma_iboe_join_multicast gives on RoCE.
 * librdmacm attaches the ID's QP itself (ibv_attach_mcast) when it reads
 * the event, and detaches it before LEAVE_MCAST; no fabric state lives
 * here. The caller holds the agent's lock. Errors are negative errno.
 */
#ifndef VFAB_CM_MCAST_H
#define VFAB_CM_MCAST_H

#include <stdint.h>
#include <sys/socket.h>

#include "cm/cm_id.h"

/*
 * JOIN_MCAST / JOIN_IP_MCAST for id: addr (addr_size bytes, which must be
 * its family's size) with join_flags (RDMA_MC_JOIN_FLAG_*). The ID must be
 * bound to a device or have its address resolved, and be a UD one;
 * MULTICAST_JOIN is queued on its file with uid as the event's uid. 0 and
 * the membership's handle in *handle.
 */
int vfab_cm_mc_join(struct vfab_cm_id *id, const struct sockaddr *addr, uint32_t addr_size,
		    uint64_t uid, uint32_t join_flags, uint32_t *handle);

/*
 * LEAVE_MCAST of membership handle by an ID of file f: its queued events
 * dropped, the events it reported in *events_reported. -ENOENT: no such
 * membership; -EINVAL: another file's.
 */
int vfab_cm_mc_leave(struct vfab_cm_file *f, uint32_t handle, uint32_t *events_reported);

/* The ID goes: its memberships go with it. */
void vfab_cm_mc_forget(struct vfab_cm_id *id);

#endif /* VFAB_CM_MCAST_H */
