/* SPDX-License-Identifier: MIT */
/*
 * RoCE addressing for the data path: which port a destination GID reaches
 * from one of ours. The rules (family, RoCE v1 on one segment, link-local
 * addresses, routing of v2 through the spine) are fabric/reach.c's, shared
 * with the rest of vfab; this adds what the provider caches with the result.
 */
#include "provider/vfab.h"
#include "fabric/reach.h"

#include <errno.h>

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
	struct fabric_reach fr;
	int rc;

	rc = fabric_reach_by_index(r, src_hca, src_port, sgid_index, dgid, &fr);
	if (rc)
		return rc;
	out->hca = fr.hca;
	out->port = fr.port;
	out->port_gen = atomic_load(&r->hcas[fr.hca].ports[fr.port - 1].gid_gen);
	out->sgid_type = vfab_sgid_type(r, src_hca, src_port, sgid_index);
	return 0;
}
