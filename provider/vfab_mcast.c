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

/*
 * The next QP of the group, from *cursor on, that a datagram of w reaches
 * now: its device, port and QPN and the path there; false past the last.
 */
static bool next_dest(struct vfab_qp *qp, const struct vfab_swqe *w, const struct vfab_gid *sgid,
		      uint32_t *cursor, uint32_t *h, uint32_t *p, uint32_t *qpn,
		      struct fabric_path *path)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;

	while (!vfab_mcast_next(r, w->ah->dgid, cursor, h, qpn)) {
		struct vfab_qp_slot *d = vfab_qp_lookup(r, *h, *qpn);

		if (!d || (qp->block_self_mcast && *qpn == qp->qpn && *h == ctx->hca_idx))
			continue;
		*p = d->port;
		if (fabric_reach_mcast(r, ctx->hca_idx, w->ah->port, sgid, w->ah->dgid, *h, *p) &&
		    vfab_port_active(r, *h, *p) &&
		    !fabric_path_resolve(r, ctx->hca_idx, w->ah->port, *h, *p, path))
			return true;
	}
	return false;
}

enum vfab_stage vfab_mcast_attempt(struct vfab_qp *qp, struct vfab_swqe *w, uint64_t now,
				   bool booked, bool behind, struct iovec *iov, unsigned int n,
				   uint64_t len)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_region *r = ctx->r;
	const struct vfab_gid *sgid;
	struct fabric_path path;
	uint32_t cursor, h, p, qpn;

	sgid = vfab_port_gid(&ctx->hca->ports[w->ah->port - 1], w->ah->sgid_index);
	if (!sgid || !vfab_port_active(r, ctx->hca_idx, w->ah->port))
		return VFAB_ST_ACKED;
	if (!booked) {
		struct fabric_booking b;
		uint64_t due = 0;
		bool shaped = false;

		if (!now)
			now = vfab_mono_ns();
		/* Each copy books its own path (a switch's replication is not modelled). */
		for (cursor = 0; next_dest(qp, w, sgid, &cursor, &h, &p, &qpn, &path);) {
			shaped = shaped || fabric_path_shaped(r, &path);
			fabric_path_book(r, &path, now, len, true, &b);
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
	for (cursor = 0; next_dest(qp, w, sgid, &cursor, &h, &p, &qpn, &path);)
		if (!fabric_path_drop(r, &path, &qp->req.rng))
			vfab_resp_ud_send(qp, w, iov, n, len, h, p, qpn, sgid->type);
	return VFAB_ST_ACKED;
}
