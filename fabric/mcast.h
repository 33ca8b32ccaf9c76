/* SPDX-License-Identifier: MIT */
/*
 * UD multicast groups: which QPs of the fabric are attached to which MGID
 * (the mcast[] table of the QP's shard, region.h), with the rules
 * ib_attach_mcast and the uverbs commands apply, and the numbers a
 * ConnectX-6 reports. A sender reads the tables of the shards it maps
 * without a lock (vfab_mcast_next: its own user's; root's, every user's it
 * reached) and delivers to each QP named as to a unicast destination:
 * through vfab_qp_lookup and every check of a UD datagram, so an entry can
 * name a QP but never make a process write anywhere a unicast datagram
 * could not. Attach and detach take the shard's lock. Errors are negative
 * errno.
 */
#ifndef VFAB_MCAST_H
#define VFAB_MCAST_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/region.h"

/* The destination QPN of a multicast datagram (IBA: the "multicast QPN"). */
#define VFAB_MCAST_QPN 0xffffffu

/*
 * What a ConnectX-6 reports (mlx5: 1 << log_max_mcg groups, max_qp_mcg QPs
 * of the device per group, their product in all). Each HCA has its own
 * group table on hardware, so the limit of QPs per group is per device.
 * The fabric's table is smaller than the total (VFAB_MAX_MCAST_ATTACH
 * attachments in all): past it, attach says ENOMEM.
 */
#define VFAB_MCAST_MAX_GRP (1u << 21)
#define VFAB_MCAST_MAX_QP_ATTACH 240u
#define VFAB_MCAST_MAX_TOTAL_ATTACH (VFAB_MCAST_MAX_GRP * VFAB_MCAST_MAX_QP_ATTACH)

/* The kernel's rdma_is_multicast_addr: IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4. */
bool vfab_mcast_gid_is_mc(const uint8_t gid[16]);

/* ib_attach_mcast/ib_detach_mcast: -EINVAL unless a UD QP and a multicast GID. */
int vfab_mcast_check(uint32_t qp_type, const uint8_t gid[16]);

/*
 * Attaches QP qpn of device hca to gid: 0, also when it already is (the
 * uverbs command answers 0 and keeps one attachment, so the QP gets one
 * copy); -ENOMEM when the group has VFAB_MCAST_MAX_QP_ATTACH QPs of that
 * device or the fabric's table is full.
 */
int vfab_mcast_attach(struct vfab_region *r, uint32_t hca, uint32_t qpn, const uint8_t gid[16]);

/* Detaches it: 0, or -EINVAL when it is not attached (uverbs' answer). */
int vfab_mcast_detach(struct vfab_region *r, uint32_t hca, uint32_t qpn, const uint8_t gid[16]);

/* Every attachment of the QP (its destroy, or its owner's death): how many. */
int vfab_mcast_detach_qp(struct vfab_region *r, uint32_t hca, uint32_t qpn);

/*
 * The next attachment of gid at or after *cursor (start at 0): 0 with the
 * QP's hca and qpn, *cursor moved past it; -ENOENT when there is none.
 * Lock-free: a slot freed or reused while it is read is skipped.
 */
int vfab_mcast_next(struct vfab_region *r, const uint8_t gid[16], uint32_t *cursor, uint32_t *hca,
		    uint32_t *qpn);

#endif /* VFAB_MCAST_H */
