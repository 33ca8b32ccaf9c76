/* SPDX-License-Identifier: MIT */
/*
 * RoCE addressing between ports: a destination GID reaches the port that owns
 * it with the source GID's type, under the rules a real fabric applies.
 * RoCE v1 frames stay on their L2 segment (leaf); RoCE v2 packets are routed,
 * so they also cross the spine to other leaves (for IPv6 only when the spine
 * routes IPv6), but an IPv4-mapped source cannot talk to an IPv6 destination
 * and link-local addresses never leave their segment.
 */
#include "provider/vfab.h"

#include <errno.h>
#include <string.h>

static bool gid_is_v4mapped(const uint8_t g[16])
{
	static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(g, prefix, sizeof(prefix));
}

static bool gid_is_link_local(const uint8_t g[16])
{
	return g[0] == 0xfe && (g[1] & 0xc0) == 0x80;
}

uint8_t vfab_sgid_type(struct vfab_region *r, uint32_t hca, uint32_t port, uint32_t idx)
{
	const struct vfab_gid *g;

	if (hca >= VFAB_MAX_HCAS || port < 1 || port > r->hcas[hca].nports)
		return VFAB_GID_EMPTY;
	g = vfab_port_gid(&r->hcas[hca].ports[port - 1], idx);
	return g ? g->type : VFAB_GID_EMPTY;
}

int vfab_route_resolve(struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
		       uint32_t sgid_index, const uint8_t dgid[16], struct vfab_route *out)
{
	const struct vfab_port *sp, *dp;
	const struct vfab_gid *sg;
	uint32_t h, p;
	bool l2_only;

	if (src_hca >= VFAB_MAX_HCAS || src_port < 1 || src_port > r->hcas[src_hca].nports)
		return -EINVAL;
	sp = &r->hcas[src_hca].ports[src_port - 1];
	sg = vfab_port_gid(sp, sgid_index);
	if (!sg)
		return -ENOENT; /* the source address went away */
	if (sg->type == VFAB_GID_ROCE_V2 && gid_is_v4mapped(sg->raw) != gid_is_v4mapped(dgid))
		return -EHOSTUNREACH;
	if (vfab_gid_find(r, dgid, sg->type, &h, &p))
		return -EHOSTUNREACH;
	dp = &r->hcas[h].ports[p - 1];
	l2_only =
	    sg->type == VFAB_GID_ROCE_V1 || gid_is_link_local(dgid) || gid_is_link_local(sg->raw);
	if (dp->segment != sp->segment &&
	    (l2_only || !r->spine.present || (!gid_is_v4mapped(dgid) && !r->spine.has_ipv6)))
		return -EHOSTUNREACH;
	out->hca = h;
	out->port = p;
	out->port_gen = atomic_load(&dp->gid_gen);
	out->sgid_type = sg->type;
	return 0;
}
