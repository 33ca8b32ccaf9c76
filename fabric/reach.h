/* SPDX-License-Identifier: MIT */
/*
 * RoCE reachability: may a packet sent from a port with a given source GID
 * reach the port that owns a destination GID? The rules real fabrics apply
 * (docs/LINK_MODEL.md, "Reachability"):
 *  - the source GID's family must suit the destination: IPv4-mapped
 *    (::ffff:a.b.c.d) to IPv4-mapped, IPv6 to IPv6, for v1 and v2 alike;
 *  - RoCE v1 frames are not routed: only ports on the same leaf (segment);
 *  - link-local IPv6 (fe80::/10) on either side stays on its segment;
 *  - RoCE v2 follows IP: a destination inside the source leaf's subnet, or
 *    inside the prefix of one of the source port's own addresses, is on-link
 *    and must sit on the same segment; anything else goes to the spine, which
 *    forwards only when the source address is in its leaf's routed subnet
 *    (the answer must find its way back) and the destination is in the
 *    routed subnet of the leaf it sits on.
 * Pure functions of the region: no locks, no I/O. The port state (link down)
 * is not checked here: that is the data path's business.
 */
#ifndef VFAB_REACH_H
#define VFAB_REACH_H

#include <stdbool.h>
#include <stdint.h>

#include "fabric/region.h"

struct fabric_reach {
	uint32_t hca, port;  /* the destination (port numbered from 1) */
	uint32_t dgid_index; /* the destination GID's index in that port's table */
	uint32_t routed;     /* 1 when the packet crosses the spine */
};

/*
 * 0 and *out filled, or: -EINVAL (source hca/port unknown, empty sgid),
 * -ENOENT (no port owns dgid with the sgid's type), -EHOSTUNREACH (owners
 * exist but the rules above reach none of them).
 */
int fabric_reach(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
		 const struct vfab_gid *sgid, const uint8_t dgid[16], struct fabric_reach *out);

/* The same with the source GID given by its table index; -EADDRNOTAVAIL if unpopulated. */
int fabric_reach_by_index(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			  uint32_t sgid_index, const uint8_t dgid[16], struct fabric_reach *out);

/*
 * Multicast (fabric/mcast.h): may a datagram to group mgid, sent from a port
 * with source GID sgid, reach port dst of HCA dst_hca? Only on the sender's
 * segment: the fabric's routers run no multicast routing (no PIM), so the
 * spine forwards none, RoCE v1 or v2. RoCE v2 carries an IP header: an
 * IPv4-mapped source needs an IPv4-mapped group, an IPv6 source an IPv6 one.
 */
bool fabric_reach_mcast(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			const struct vfab_gid *sgid, const uint8_t mgid[16], uint32_t dst_hca,
			uint32_t dst_port);

#endif /* VFAB_REACH_H */
