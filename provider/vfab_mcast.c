/* SPDX-License-Identifier: MIT */
/*
 * UD multicast, as a ConnectX with RoCE has it: ibv_attach_mcast and
 * ibv_detach_mcast (the groups live in the region, fabric/mcast.h), and the
 * send of a datagram to a multicast GID with remote QPN 0xFFFFFF: one copy
 * to every QP attached to the group that the sender's port reaches
 * (fabric_reach_mcast: its segment), each through the link model (path,
 * loss, shaping) and the checks of a unicast datagram (Q_Key, state,
 * posted receive, the registered owner). The sending QP gets a copy when
 * it is attached itself, unless it was created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB (provider/README.md).
 */
#include "provider/vfab.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_resp.h"
#include "fabric/mcast.h"
#include "fabric/reach.h"

#include <errno.h>

/* The RoCE annex: the multicast LID is ignored (the kernel's is_valid_mcast_lid). */
int vfab_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	int rc;

	(void)lid;
	rc = vfab_mcast_check(ibqp->qp_type, gid->raw);
	if (!rc)
		rc = vfab_mcast_attach(qp->ctx->r, qp->ctx->hca_idx, qp->qpn, gid->raw);
	return -rc;
}

int vfab_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct vfab_qp *qp = to_vqp(ibqp);
	int rc;

	(void)lid;
	rc = vfab_mcast_check(ibqp->qp_type, gid->raw);
	if (!rc)
		rc = vfab_mcast_detach(qp->ctx->r, qp->ctx->hca_idx, qp->qpn, gid->raw);
	return -rc;
}

/* One copy's destination. */
struct mdest {
	uint32_t hca, port, qpn;
	struct fabric_path path;
};

/* The QPs of the group that a datagram of w reaches now, at most one group's worth. */
static uint32_t collect(struct vfab_qp *qp, const struct vfab_swqe *w, const struct vfab_gid *sgid,
			struct mdest *out)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	uint32_t cursor = 0, n = 0, h, qpn;

	while (n < VFAB_MCAST_MAX_QP_ATTACH &&
	       !vfab_mcast_next(r, w->ah->dgid, &cursor, &h, &qpn)) {
		struct vfab_qp_slot *d = vfab_qp_lookup(r, h, qpn);
		uint32_t p;

		if (!d || (qp->block_self_mcast && qpn == qp->qpn && h == ctx->hca_idx))
			continue;
		p = d->port;
		if (!fabric_reach_mcast(r, ctx->hca_idx, w->ah->port, sgid, w->ah->dgid, h, p) ||
		    !vfab_port_active(r, h, p) ||
		    fabric_path_resolve(r, ctx->hca_idx, w->ah->port, h, p, &out[n].path))
			continue;
		out[n].hca = h;
		out[n].port = p;
		out[n].qpn = qpn;
		n++;
	}
	return n;
}

enum vfab_stage vfab_mcast_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now,
				   bool booked, bool behind, struct iovec *iov, unsigned int n,
				   uint64_t len)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	struct mdest to[VFAB_MCAST_MAX_QP_ATTACH];
	const struct vfab_gid *sgid;
	uint32_t i, nto;

	sgid = vfab_port_gid(&ctx->hca->ports[w->ah->port - 1], w->ah->sgid_index);
	if (!sgid || !vfab_port_active(r, ctx->hca_idx, w->ah->port))
		return VFAB_ST_ACKED;
	nto = collect(qp, w, sgid, to);
	if (!booked && nto) {
		uint64_t due = 0;
		bool shaped = false;
		struct fabric_booking b;

		for (i = 0; i < nto && !shaped; i++)
			shaped = fabric_path_shaped(r, &to[i].path);
		if ((shaped || behind) && !now)
			now = vfab_mono_ns();
		/* Each copy books its own path (a switch's replication is not modelled). */
		for (i = 0; i < nto; i++) {
			fabric_path_book(r, &to[i].path, now, len, true, &b);
			if (b.deliver_ns > due)
				due = b.deliver_ns;
		}
		if (behind || (shaped && due > now)) {
			w->stage = VFAB_ST_FLIGHT;
			w->due_ns = due > now ? due : now;
			return VFAB_ST_FLIGHT;
		}
	}
	/* Loss is drawn per copy, as each crosses its own links. */
	for (i = 0; i < nto; i++)
		if (!fabric_path_drop(r, &to[i].path, &qp->req.rng))
			vfab_resp_ud_send(qp, w, iov, n, len, to[i].hca, to[i].port, to[i].qpn,
					  sgid->type);
	return VFAB_ST_ACKED;
}
