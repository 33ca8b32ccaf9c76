/* SPDX-License-Identifier: MIT */
/* Resolving an RC QP's destination (see vfab_dest.h). */
#include "provider/vfab_dest.h"
#include "base/proc.h"
#include "provider/vfab_xfer.h"
#include "fabric/mcast.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Handles on the sealed owner of the destination that cannot reach anyone else (vfab_owner_open).
 */
static int owner_open(const struct vfab_context *ctx, struct vfab_dest *dc)
{
	struct vfab_owner_fds f;

	vfab_owner_fds_init(&f);
	if (vfab_owner_open(&ctx->pv, &dc->kq.owner, &f))
		return -ESRCH;
	dc->pidfd = f.pidfd;
	dc->memfd = f.memfd;
	dc->refused = f.refused;
	return 0;
}

struct vfab_qp_slot *vfab_dest_resolve(struct vfab_qp *qp)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	struct vfab_dest *dc = &qp->req.dest;
	const struct vfab_port *sp = &ctx->hca->ports[qp->s->port - 1];
	struct vfab_qp_slot *d;
	struct vfab_route rt;

	dc->valid = false;
	if (vfab_route_resolve(r, ctx->hca_idx, qp->s->port, qp->attr.ah_attr.grh.sgid_index,
			       qp->attr.ah_attr.grh.dgid.raw, &rt))
		return NULL;
	d = vfab_qp_lookup(r, rt.hca, qp->attr.dest_qp_num);
	if (!d && vfab_kqp_copy(ctx->k, rt.hca, qp->attr.dest_qp_num, &dc->kq) &&
	    (r->local.refused &
	     (1u << vfab_shard_of(VFAB_OBJ_QP, vfab_qpn_slot(qp->attr.dest_qp_num)))))
		vfab_owner_refused(dc->kq.owner.pid); /* another user's QP: its shard is not ours */
	if (!d || !vfab_kqp_copy(ctx->k, rt.hca, qp->attr.dest_qp_num, &dc->kq) ||
	    fabric_path_resolve(r, ctx->hca_idx, qp->s->port, rt.hca, rt.port, &dc->fwd) ||
	    fabric_path_resolve(r, rt.hca, rt.port, ctx->hca_idx, qp->s->port, &dc->rev))
		return NULL;
	dc->hca = rt.hca;
	dc->port = rt.port;
	dc->port_gen = rt.port_gen;
	dc->src_gen = atomic_load(&sp->gid_gen);
	dc->slot = (uint32_t)(d - r->qps);
	dc->qpn = dc->kq.qpn;
	dc->plain_known = false;
	/*
	 * A fresh handle on the owner's memory for every resolution: the one
	 * before may name an address space that is gone (an owner that died,
	 * its pid now someone else's).
	 */
	vfab_dest_close(qp);
	if (dc->kq.owner.pid != ctx->owner.pid && owner_open(ctx, dc)) {
		vfab_dest_close(qp);
		return NULL;
	}
	dc->valid = true;
	return d;
}

void vfab_dest_close(struct vfab_qp *qp)
{
	if (qp->req.dest.memfd >= 0)
		close(qp->req.dest.memfd);
	if (qp->req.dest.pidfd >= 0)
		close(qp->req.dest.pidfd);
	qp->req.dest.memfd = -1;
	qp->req.dest.pidfd = -1;
	qp->req.dest.refused = false;
	for (int i = 0; i < VFAB_UD_PEERS; i++)
		vfab_owner_fds_close(&qp->req.ud_peers[i]);
}

int vfab_dest_ud_owner(struct vfab_qp *qp, const struct vfab_qp_slot *kq,
		       struct vfab_owner_fds **out)
{
	struct vfab_qp_req *rq = &qp->req;
	struct vfab_owner_fds *f;
	int i;

	for (i = 0; i < VFAB_UD_PEERS; i++) {
		f = &rq->ud_peers[i];
		if (f->pid == kq->owner.pid && f->start_ticks == kq->owner.start_ticks &&
		    (f->pidfd >= 0 || f->memfd >= 0)) {
			*out = f;
			return 0;
		}
	}
	f = &rq->ud_peers[rq->ud_next++ % VFAB_UD_PEERS];
	*out = f;
	return vfab_owner_open(&qp->ctx->pv, &kq->owner, f);
}

/* No rate, latency or loss on any link of p: a message there is not timed. */
static bool path_plain(const struct vfab_region *r, const struct fabric_path *p)
{
	if (fabric_path_shaped(r, p))
		return false;
	for (uint32_t i = 0; i < p->nhops; i++)
		if (__atomic_load_n(&r->links[p->link[i]].loss_ppm, __ATOMIC_RELAXED))
			return false;
	return true;
}

bool vfab_dest_read_links(struct vfab_qp *qp, uint32_t link_gen)
{
	struct vfab_region *r = qp->ctx->r;
	struct vfab_dest *dc = &qp->req.dest;

	/*
	 * Links changed after link_gen was read are seen here or make the next
	 * message read them again: vfabd bumps the generation after the store.
	 */
	dc->plain = path_plain(r, &dc->fwd) && path_plain(r, &dc->rev);
	dc->link_gen = link_gen;
	dc->plain_known = true;
	return dc->plain;
}

bool vfab_dest_ud_route(struct vfab_qp *qp, const struct vfab_swqe *w, uint32_t *h, uint32_t *p,
			uint8_t *type, struct fabric_path *path)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;

	return vfab_port_gid(&ctx->hca->ports[w->ah->port - 1], w->ah->sgid_index) &&
	       !vfab_ah_route(w->ah, r, ctx->hca_idx, h, p, type) &&
	       vfab_port_active(r, ctx->hca_idx, w->ah->port) && vfab_port_active(r, *h, *p) &&
	       !fabric_path_resolve(r, ctx->hca_idx, w->ah->port, *h, *p, path);
}

bool vfab_dest_ud_chainable(struct vfab_qp *qp, const struct vfab_swqe *w, struct vfab_ud_hop *to)
{
	struct vfab_context *ctx = qp->ctx;

	return w->remote_qpn != VFAB_MCAST_QPN &&
	       vfab_dest_ud_route(qp, w, &to->hca, &to->port, &to->type, &to->path) &&
	       path_plain(ctx->r, &to->path) &&
	       vfab_kqp_copy(ctx->k, to->hca, w->remote_qpn, &to->kq) &&
	       to->kq.owner.pid != ctx->owner.pid;
}
