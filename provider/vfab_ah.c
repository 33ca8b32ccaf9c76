/* SPDX-License-Identifier: MIT */
/* Address handles for UD: a GRH is mandatory on RoCE, its source GID must exist. */
#include "provider/vfab.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ROUTE_VALID (1ull << 63)

struct ibv_ah *vfab_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct vfab_context *ctx = to_vctx(ibpd->context);
	struct vfab_ah *ah;

	if (!attr->is_global || attr->port_num < 1 || attr->port_num > ctx->hca->nports) {
		errno = EINVAL;
		return NULL;
	}
	/* An empty source GID index: the kernel's rdma_get_gid_attr says ENODATA. */
	if (vfab_sgid_type(ctx->r, ctx->hca_idx, attr->port_num, attr->grh.sgid_index) ==
	    VFAB_GID_EMPTY) {
		errno = ENODATA;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->pd = to_vpd(ibpd);
	ah->port = attr->port_num;
	ah->sgid_index = attr->grh.sgid_index;
	ah->hop_limit = attr->grh.hop_limit;
	ah->traffic_class = attr->grh.traffic_class;
	ah->flow_label = attr->grh.flow_label;
	ah->sl = attr->sl;
	memcpy(ah->dgid, attr->grh.dgid.raw, sizeof(ah->dgid));
	atomic_fetch_add(&ah->pd->users, 1);
	return &ah->ibv;
}

int vfab_destroy_ah(struct ibv_ah *ibah)
{
	struct vfab_ah *ah = to_vah(ibah);

	atomic_fetch_sub(&ah->pd->users, 1);
	free(ah);
	return 0;
}

int vfab_ah_route(struct vfab_ah *ah, struct vfab_region *r, uint32_t src_hca, uint32_t *hca,
		  uint32_t *port, uint8_t *sgid_type)
{
	const struct vfab_port *sp = &r->hcas[src_hca].ports[ah->port - 1];
	uint64_t v = atomic_load_explicit(&ah->route, memory_order_acquire);
	uint32_t src_gen = atomic_load(&sp->gid_gen) & 0xffff;
	struct vfab_route rt;
	int rc;

	if (v & ROUTE_VALID) {
		uint32_t h = (uint32_t)(v >> 32) & 0xff, p = (uint32_t)(v >> 40) & 3;
		const struct vfab_port *dp = &r->hcas[h].ports[p - 1];

		if (((v >> 16) & 0xffff) == src_gen &&
		    (v & 0xffff) == (atomic_load(&dp->gid_gen) & 0xffff)) {
			*hca = h;
			*port = p;
			*sgid_type = (uint8_t)((v >> 48) & 3);
			return 0;
		}
	}
	rc = vfab_route_resolve(r, src_hca, ah->port, ah->sgid_index, ah->dgid, &rt);
	if (rc)
		return rc;
	v = ROUTE_VALID | (uint64_t)rt.sgid_type << 48 | (uint64_t)rt.port << 40 |
	    (uint64_t)rt.hca << 32 | (uint64_t)src_gen << 16 | (rt.port_gen & 0xffff);
	atomic_store_explicit(&ah->route, v, memory_order_release);
	*hca = rt.hca;
	*port = rt.port;
	*sgid_type = rt.sgid_type;
	return 0;
}
