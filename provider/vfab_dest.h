/* SPDX-License-Identifier: MIT */
/*
 * Where an RC QP's messages go (struct vfab_dest): the connected QP's slot
 * and port, the link-model paths there and back, and whether those paths
 * are plain (no rate, latency or loss). Resolved once from the RTR
 * attributes and kept while nothing it depends on changes; the checks that
 * keep it valid run on every message and are inline here, the resolution
 * itself is in vfab_dest.c.
 */
#ifndef VFAB_DEST_H
#define VFAB_DEST_H

#include "provider/vfab.h"

/* Resolves the destination afresh; NULL when nothing answers there. */
struct vfab_qp_slot *vfab_dest_resolve(struct vfab_qp *qp);
/* Drops the handles on owners' memory (destroy, before a new resolution). */
void vfab_dest_close(struct vfab_qp *qp);
/*
 * Handles on the owner of UD QP kq (as vfabd sealed it; not this process) for one datagram,
 * kept for the next ones to the same owner: 0, or -ESRCH when the process
 * holding its pid is not the one that registered (then nothing is copied).
 */
int vfab_dest_ud_owner(struct vfab_qp *qp, const struct vfab_qp_slot *kq,
		       struct vfab_owner_fds **out);
/* Reads the links of both paths again; link_gen is the generation seen. */
bool vfab_dest_read_links(struct vfab_qp *qp, uint32_t link_gen);
/*
 * Where a UD send through w's AH lands now: device h, port p, the RoCE
 * type of the source GID and the path; false when nowhere.
 */
bool vfab_dest_ud_route(struct vfab_qp *qp, const struct vfab_swqe *w, uint32_t *h, uint32_t *p,
			uint8_t *type, struct fabric_path *path);
/* Where a datagram that may join a UD chain goes (vfab_dest_ud_chainable). */
struct vfab_ud_hop {
	uint32_t hca, port;
	uint8_t type; /* of the source GID */
	struct fabric_path path;
	struct vfab_qp_slot kq; /* vfabd's record of the destination QP */
};
/*
 * w's datagram goes to a QP of another process, not a group, on a path
 * with no rate, latency or loss: it may be held and chained. Where to in
 * *to; false otherwise.
 */
bool vfab_dest_ud_chainable(struct vfab_qp *qp, const struct vfab_swqe *w, struct vfab_ud_hop *to);

/*
 * The connected QP's slot, from the cache while neither that slot, nor
 * vfabd's record of it (qp->req.dest.kq), nor the GID tables of both ports
 * changed.
 */
static inline struct vfab_qp_slot *vfab_dest(struct vfab_qp *qp)
{
	struct vfab_region *r = qp->ctx->r;
	const struct vfab_dest *dc = &qp->req.dest;
	struct vfab_qp_slot *d = &r->qps[dc->slot];

	if (__builtin_expect(dc->valid, 1) &&
	    atomic_load_explicit(&d->state, memory_order_acquire) == VFAB_SLOT_USED &&
	    d->qpn == dc->qpn && d->hca == dc->hca &&
	    atomic_load_explicit(&qp->ctx->k->qps[dc->slot].state, memory_order_acquire) ==
		VFAB_SLOT_USED &&
	    qp->ctx->k->qps[dc->slot].qpn == dc->qpn &&
	    atomic_load(&r->hcas[dc->hca].ports[dc->port - 1].gid_gen) == dc->port_gen &&
	    atomic_load(&qp->ctx->hca->ports[qp->s->port - 1].gid_gen) == dc->src_gen)
		return d;
	return vfab_dest_resolve(qp);
}

/*
 * Whether both paths are plain: messages then skip the link model. The
 * links are read again only when vfabd changed one (the region's link_gen):
 * their cache lines also hold counters that other processes keep writing.
 */
static inline bool vfab_dest_plain(struct vfab_qp *qp)
{
	uint32_t gen = atomic_load_explicit(&qp->ctx->r->link_gen, memory_order_acquire);

	if (__builtin_expect(qp->req.dest.plain_known && qp->req.dest.link_gen == gen, 1))
		return qp->req.dest.plain;
	return vfab_dest_read_links(qp, gen);
}

static inline bool vfab_port_active(struct vfab_region *r, uint32_t hca, uint32_t port)
{
	return atomic_load(&r->hcas[hca].ports[port - 1].state) == IBV_PORT_ACTIVE;
}

/* Both ends of the connection are up: a down port carries nothing. */
static inline bool vfab_dest_ports_up(struct vfab_qp *qp)
{
	struct vfab_context *ctx = qp->ctx;

	return vfab_port_active(ctx->r, ctx->hca_idx, qp->s->port) &&
	       vfab_port_active(ctx->r, qp->req.dest.hca, qp->req.dest.port);
}

#endif /* VFAB_DEST_H */
