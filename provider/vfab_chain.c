/* SPDX-License-Identifier: MIT */
/*
 * Chains: NCCL posts up to 8 RDMA WRITEs to one peer and a WRITE with
 * immediate in one ibv_post_send, perftest --post_list as many as asked,
 * and small WRITEs and SENDs posted back to back are held and sent together
 * (vfab_req.c). On a plain path to another process the whole chain is
 * checked by the responder's rules under one hold of the destination's lock
 * and moved with one process_vm_writev, in posting (and ascending address)
 * order, SENDs into their receive buffers; the completions are those of the
 * WRs sent one by one, each after the bytes.
 */
#include "provider/vfab_capture.h"
#include "provider/vfab_counters.h"
#include "provider/vfab_dest.h"
#include "provider/vfab_dma.h"
#include "provider/vfab_resp.h"
#include "provider/vfab_xfer.h"

#include <limits.h>
#include <string.h>

/* A chain's segments go to one process_vm_writev. */
_Static_assert(VFAB_CHAIN_IOV <= IOV_MAX, "a chain must fit one process_vm_writev");

uint32_t vfab_attempt_chain(struct vfab_qp *qp, struct vfab_swqe *const *w, uint32_t n)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_msg m[VFAB_CHAIN_MAX];
	struct vfab_qp_slot *d;
	uint32_t i, k, psn = qp->req.psn, npkts = 0;
	unsigned int nl = 0, cnt;
	uint64_t len, bytes = 0;

	if (n > VFAB_CHAIN_MAX)
		n = VFAB_CHAIN_MAX;
	d = vfab_dest(qp);
	/* Within one process a chain gains nothing: copies are plain memcpy. */
	if (!d || qp->req.dest.kq.owner.pid == ctx->owner.pid || !vfab_dest_plain(qp) ||
	    !vfab_dest_ports_up(qp))
		return 0;
	/*
	 * The chain's one copy goes by pid: its owner must still be the one,
	 * and the pid ours to name (no pidfd: pids of another namespace).
	 */
	if (qp->req.dest.pidfd < 0 || qp->req.dest.refused || !vfab_xfer_alive(qp->req.dest.pidfd))
		return 0;
	/* memfd -1: one process_vm_writev for all. Messages differ in WR and segments. */
	vfab_msg_build(&m[0], qp, w[0], NULL, 0, 0, d, &qp->req.dest.kq, qp->req.dest.hca,
		       qp->req.dest.port, -1);
	for (i = 0; i < n; i++) {
		/* What does not fit one call waits for the next chain. */
		if (nl + (w[i]->num_sge > 1 ? w[i]->num_sge : 1) > VFAB_CHAIN_IOV)
			break;
		if (vfab_gather(qp, w[i], qp->req.chain_iov + nl, &cnt, &len) != IBV_WC_SUCCESS)
			break;
		/*
		 * A message the copy engines would split goes on its own: one
		 * system call saves nothing next to its copy, and a chain's one
		 * call is one thread's.
		 */
		if (m[0].copy_engines > 1 && len >= vfab_dma_split_from_bytes)
			break;
		if (i)
			m[i] = m[0];
		m[i].wqe = w[i];
		m[i].liov = qp->req.chain_iov + nl;
		m[i].nliov = cnt;
		m[i].len = len;
		m[i].psn = psn;
		m[i].npkts = vfab_packets(len, qp->req.mtu_bytes);
		w[i]->byte_len = (uint32_t)len;
		psn = (psn + m[i].npkts) & VFAB_PSN_MASK;
		nl += cnt;
	}
	k = i ? vfab_resp_rc_chain(m, i) : 0;
	for (i = 0; i < k; i++) {
		w[i]->psn = m[i].psn;
		w[i]->npkts = m[i].npkts;
		w[i]->stage = VFAB_ST_ACKED;
		w[i]->due_ns = 0;
		bytes += m[i].len;
		npkts += m[i].npkts;
	}
	if (k && vfab_cap_on(ctx->r))
		for (i = 0; i < k; i++)
			vfab_cap_rc(qp, w[i], m[i].len, VFAB_CAP_ACKED, 0, 0, 0, m[i].liov,
				    m[i].nliov);
	if (k) {
		qp->req.psn = (m[k - 1].psn + m[k - 1].npkts) & VFAB_PSN_MASK;
		vfab_count_links(ctx->r, &qp->req.dest.fwd, bytes, k);
		vfab_count_ports(ctx->r, ctx->hca_idx, qp->s->port, qp->req.dest.hca,
				 qp->req.dest.port, bytes, npkts);
	}
	return k;
}

/* One datagram of a UD chain: to the chain's destination, gathered behind its GRH segment. */
static bool ud_joins(struct vfab_qp *qp, struct vfab_swqe *w, const struct vfab_swqe *first,
		     struct iovec *iov, unsigned int room, unsigned int *cnt, uint64_t *len)
{
	return w->ah == first->ah && w->remote_qpn == first->remote_qpn &&
	       w->remote_qkey == first->remote_qkey &&
	       1u + (w->num_sge > 1 ? w->num_sge : 1) <= room &&
	       vfab_gather(qp, w, iov + 1, cnt, len) == IBV_WC_SUCCESS && *len <= qp->req.mtu_bytes;
}

uint32_t vfab_attempt_ud_chain(struct vfab_qp *qp, struct vfab_swqe *const *w, uint32_t n)
{
	struct vfab_context *ctx = qp->ctx;
	struct vfab_msg m[VFAB_CHAIN_MAX];
	uint8_t grh[VFAB_CHAIN_MAX][VFAB_GRH_BYTES];
	struct vfab_owner_fds *f;
	struct vfab_qp_slot *d;
	struct vfab_ud_hop to;
	uint32_t i, k, qpn = w[0]->remote_qpn;
	unsigned int nl = 0, cnt;
	uint64_t len, bytes = 0;

	if (n > VFAB_CHAIN_MAX)
		n = VFAB_CHAIN_MAX;
	/* A capture's records go one by one, as do a group's copies and a timed path's. */
	if (n < 2 || vfab_cap_on(ctx->r) || !vfab_dest_ud_chainable(qp, w[0], &to))
		return 0;
	/* Only to the registered owner, by its pid while its pidfd says it runs. */
	d = vfab_qp_lookup(ctx->r, to.hca, qpn);
	if (!d || vfab_dest_ud_owner(qp, &to.kq, &f) || f->pidfd < 0 || f->refused ||
	    !vfab_xfer_alive(f->pidfd))
		return 0;
	for (i = 0; i < n; i++) {
		struct iovec *iov = qp->req.chain_iov + nl;

		if (!ud_joins(qp, w[i], w[0], iov, VFAB_CHAIN_IOV - nl, &cnt, &len))
			break;
		/* memfd -1: one process_vm_writev for all. */
		vfab_msg_build_ud(&m[i], qp, w[i], iov, cnt + 1, len, d, &to.kq, to.hca, to.port,
				  -1, to.type);
		vfab_resp_ud_grh(&m[i], grh[i]);
		iov[0].iov_base = grh[i];
		iov[0].iov_len = VFAB_GRH_BYTES;
		nl += cnt + 1;
	}
	k = i >= 2 ? vfab_resp_ud_chain(m, i) : 0;
	for (i = 0; i < k; i++) {
		w[i]->byte_len = (uint32_t)m[i].len;
		w[i]->stage = VFAB_ST_ACKED;
		w[i]->due_ns = 0;
		/* A datagram takes one PSN of the QP's send queue, as on the wire. */
		w[i]->psn = qp->req.psn;
		qp->req.psn = (qp->req.psn + 1) & VFAB_PSN_MASK;
		bytes += m[i].len;
	}
	if (k) {
		vfab_count_links(ctx->r, &to.path, bytes, k);
		vfab_count_ports(ctx->r, ctx->hca_idx, w[0]->ah->port, to.hca, to.port, bytes, k);
	}
	return k;
}
