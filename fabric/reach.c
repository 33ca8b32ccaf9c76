/* SPDX-License-Identifier: MIT */
/* RoCE reachability rules (see reach.h). */
#include "fabric/reach.h"
#include "fabric/gid.h"
#include "fabric/ipnet.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

/* Counts and indices of the region are any user's to write: bounded by the tables too. */
static const struct vfab_port *port_at(const struct vfab_region *r, uint32_t hca, uint32_t port)
{
	if (hca >= r->nhcas || hca >= VFAB_MAX_HCAS || !r->hcas[hca].in_use || port < 1 ||
	    port > r->hcas[hca].nports || port > VFAB_MAX_PORTS)
		return NULL;
	return &r->hcas[hca].ports[port - 1];
}

static const struct vfab_leaf *leaf_of(const struct vfab_region *r, const struct vfab_port *p)
{
	return p->segment < r->nleaves && p->segment < VFAB_MAX_LEAVES ? &r->leaves[p->segment]
								       : NULL;
}

/* The leaf's routed subnet of the GID's family, as a prefix over the 16-byte GID. */
static bool in_leaf_subnet(const struct vfab_leaf *l, const uint8_t g[16])
{
	if (!l)
		return false;
	if (vfab_gid_is_v4mapped(g))
		return l->ipv4_prefix && vfab_ipnet_contains((const uint8_t *)&l->ipv4_net,
							     l->ipv4_prefix, g + 12, 4);
	return l->ipv6_prefix && vfab_ipnet_contains(l->ipv6_net, l->ipv6_prefix, g, 16);
}

static bool leaf_has_gateway(const struct vfab_leaf *l, bool v4)
{
	static const uint8_t zero[16];

	return l && (v4 ? l->ipv4_gw != 0 : memcmp(l->ipv6_gw, zero, 16) != 0);
}

/* On-link: the leaf's subnet, or the prefix of an address of the source port. */
static bool on_link(const struct vfab_region *r, const struct vfab_port *sp, const uint8_t d[16])
{
	bool v4 = vfab_gid_is_v4mapped(d);
	uint32_t n = sp->ngids < VFAB_PORT_GIDS ? sp->ngids : VFAB_PORT_GIDS;

	if (in_leaf_subnet(leaf_of(r, sp), d))
		return true;
	for (uint32_t i = 0; i < n; i++) {
		const struct vfab_gid *g = &sp->gids[i];

		if (g->type == VFAB_GID_EMPTY || !g->prefix || vfab_gid_is_link_local(g->raw) ||
		    (bool)vfab_gid_is_v4mapped(g->raw) != v4)
			continue;
		if (vfab_ipnet_contains(g->raw, g->prefix, d, 16))
			return true;
	}
	return false;
}

/* Returns 1 reached on-link, 2 reached through the spine, 0 not reached. */
static int rules(const struct vfab_region *r, const struct vfab_port *sp,
		 const struct vfab_gid *sgid, const uint8_t dgid[16], const struct vfab_port *dp)
{
	bool v4 = vfab_gid_is_v4mapped(sgid->raw);
	bool same = sp->segment == dp->segment;
	const struct vfab_leaf *sl, *dl;

	if (v4 != (bool)vfab_gid_is_v4mapped(dgid))
		return 0;
	if (sgid->type == VFAB_GID_ROCE_V1 || vfab_gid_is_link_local(sgid->raw) ||
	    vfab_gid_is_link_local(dgid) || on_link(r, sp, dgid))
		return same ? 1 : 0;
	if (!r->spine.present)
		return 0;
	sl = leaf_of(r, sp);
	dl = leaf_of(r, dp);
	if (!leaf_has_gateway(sl, v4) || !in_leaf_subnet(sl, sgid->raw) ||
	    !leaf_has_gateway(dl, v4) || !in_leaf_subnet(dl, dgid))
		return 0;
	return 2;
}

int fabric_reach(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
		 const struct vfab_gid *sgid, const uint8_t dgid[16], struct fabric_reach *out)
{
	const struct vfab_port *sp = port_at(r, src_hca, src_port);
	bool owned = false;

	if (!sp || !sgid || sgid->type == VFAB_GID_EMPTY)
		return -EINVAL;
	/* Every owner is tried: an address may (at run time) sit on two segments. */
	for (uint32_t h = 0; h < r->nhcas && h < VFAB_MAX_HCAS; h++) {
		for (uint32_t p = 1; p <= r->hcas[h].nports && p <= VFAB_MAX_PORTS; p++) {
			const struct vfab_port *dp = port_at(r, h, p);
			uint32_t n =
			    dp ? (dp->ngids < VFAB_PORT_GIDS ? dp->ngids : VFAB_PORT_GIDS) : 0;

			for (uint32_t g = 0; g < n; g++) {
				const struct vfab_gid *dg = &dp->gids[g];
				int how;

				if (dg->type != sgid->type || memcmp(dg->raw, dgid, 16))
					continue;
				owned = true;
				how = rules(r, sp, sgid, dgid, dp);
				if (!how)
					continue;
				out->hca = h;
				out->port = p;
				out->dgid_index = dg->index;
				out->routed = how == 2;
				return 0;
			}
		}
	}
	return owned ? -EHOSTUNREACH : -ENOENT;
}

int fabric_reach_by_index(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			  uint32_t sgid_index, const uint8_t dgid[16], struct fabric_reach *out)
{
	const struct vfab_port *sp = port_at(r, src_hca, src_port);
	uint32_t n;

	if (!sp)
		return -EINVAL;
	n = sp->ngids < VFAB_PORT_GIDS ? sp->ngids : VFAB_PORT_GIDS;
	for (uint32_t i = 0; i < n; i++)
		if (sp->gids[i].index == sgid_index && sp->gids[i].type != VFAB_GID_EMPTY)
			return fabric_reach(r, src_hca, src_port, &sp->gids[i], dgid, out);
	return -EADDRNOTAVAIL;
}

bool fabric_reach_mcast(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			const struct vfab_gid *sgid, const uint8_t mgid[16], uint32_t dst_hca,
			uint32_t dst_port)
{
	const struct vfab_port *sp = port_at(r, src_hca, src_port);
	const struct vfab_port *dp = port_at(r, dst_hca, dst_port);

	if (!sp || !dp || !sgid || sgid->type == VFAB_GID_EMPTY)
		return false;
	if (sgid->type == VFAB_GID_ROCE_V2 &&
	    (bool)vfab_gid_is_v4mapped(sgid->raw) != (bool)vfab_gid_is_v4mapped(mgid))
		return false;
	return sp->segment == dp->segment;
}
