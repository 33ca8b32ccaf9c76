/* SPDX-License-Identifier: MIT */
/*
 * The responder's half of a message, executed by the requester under the
 * destination QP's lock: the checks the remote HCA makes, the delivery of the
 * bytes, the receive completion, and what the requester hears back.
 */
#ifndef VFAB_RESP_H
#define VFAB_RESP_H

#include "provider/vfab.h"

#include <string.h>
#include <sys/uio.h>

struct vfab_msg {
	struct vfab_region *r;
	const struct vfab_rmap *map; /* r, vfabd's object table, the pool's bound */
	const struct vfab_swqe *wqe;
	int32_t self_pid;
	/* Requester: its port, QP, and the gathered local segments. */
	uint32_t src_hca, src_port, src_qpn, src_qkey;
	uint8_t qp_type;       /* the requester's: RC or UC meet only their own kind */
	uint32_t copy_engines; /* of the requester's context: its HCA's DMA engines */
	struct iovec *liov;    /* consumed by vfab_resp_rc_chain */
	unsigned int nliov;
	uint64_t len;
	uint32_t psn, npkts; /* RC: first PSN and packets of the message */
	/* UD: what goes into the GRH in front of the payload. */
	const uint8_t *sgid, *dgid;
	uint8_t sgid_type, traffic_class, hop_limit;
	uint32_t flow_label;
	/*
	 * Destination: its region slot d (lock, state, PSN, receive ring) and
	 * kq, the same as vfabd sealed it (owner, PD, CQ, SRQ, FIFO), which
	 * every decision of where bytes or events go is taken from; memfd: the
	 * owner's /proc/<pid>/mem or -1 (0 is an fd).
	 */
	struct vfab_qp_slot *d;
	const struct vfab_qp_slot *kq;
	int memfd;
	int pidfd1;   /* the owner's pidfd + 1 (struct vfab_peer); 0 none */
	bool foreign; /* the owner's pid is of another PID namespace (vfab_owner.h) */
	/*
	 * The kernel refuses this process's copies into the owner (another
	 * user): the message cannot arrive, so it touches nothing there (no
	 * receive WQE is taken) and gets no answer.
	 */
	bool refused;
	uint32_t dst_hca, dst_port;
	/*
	 * XRC_RECV destination: vfabd's record of the SRQ the WR names, when
	 * it is an XRC SRQ of the target's domain and owner (the receives, the
	 * PD of every key and the receive CQ are its); NULL otherwise.
	 */
	const struct vfab_srq_slot *xsrq;
};

/*
 * The one builder of a message: WR w of qp, its gathered local segments
 * (iov, n, len bytes), to QP slot d (kq: vfabd's record of it) at port
 * dst_port of HCA dst_hca; memfd as in struct vfab_msg. RC adds the PSNs, UD its source port, Q_Key
 * and GRH fields. Inline: the plain path builds one per post.
 */
static inline void vfab_msg_build(struct vfab_msg *m, const struct vfab_qp *qp,
				  const struct vfab_swqe *w, struct iovec *iov, unsigned int n,
				  uint64_t len, struct vfab_qp_slot *d,
				  const struct vfab_qp_slot *kq, uint32_t dst_hca,
				  uint32_t dst_port, int memfd)
{
	const struct vfab_context *ctx = qp->ctx;

	memset(m, 0, sizeof(*m));
	m->r = ctx->r;
	m->map = ctx->map;
	m->wqe = w;
	m->self_pid = ctx->owner.pid;
	m->src_hca = ctx->hca_idx;
	m->copy_engines = ctx->copy_engines;
	m->src_port = qp->s->port;
	m->src_qpn = qp->qpn;
	m->qp_type = (uint8_t)qp->vqp.qp.qp_type;
	m->liov = iov;
	m->nliov = n;
	m->len = len;
	m->d = d;
	m->kq = kq;
	m->memfd = memfd;
	m->foreign = ctx->pv.foreign;
	m->dst_hca = dst_hca;
	m->dst_port = dst_port;
	if (kq->qp_type == VFAB_QPT_XRC_RECV)
		m->xsrq = vfab_xrc_srq(ctx->map->k, kq, w->remote_srqn);
}

/*
 * A datagram's message: vfab_msg_build's, plus its source port and Q_Key
 * and what goes into the GRH (a source GID of this RoCE type).
 */
static inline void vfab_msg_build_ud(struct vfab_msg *m, const struct vfab_qp *qp,
				     const struct vfab_swqe *w, struct iovec *iov, unsigned int n,
				     uint64_t len, struct vfab_qp_slot *d,
				     const struct vfab_qp_slot *kq, uint32_t dst_hca,
				     uint32_t dst_port, int memfd, uint8_t type)
{
	const struct vfab_context *ctx = qp->ctx;

	vfab_msg_build(m, qp, w, iov, n, len, d, kq, dst_hca, dst_port, memfd);
	m->src_port = w->ah->port;
	m->src_qkey = qp->attr.qkey;
	m->sgid = vfab_port_gid(&ctx->hca->ports[w->ah->port - 1], w->ah->sgid_index)->raw;
	m->dgid = w->ah->dgid;
	m->sgid_type = type;
	m->traffic_class = w->ah->traffic_class;
	m->hop_limit = w->ah->hop_limit;
	m->flow_label = w->ah->flow_label;
}

enum vfab_resp_kind {
	VFAB_RESP_ACK,	     /* done; for atomics atomic_orig holds the old value */
	VFAB_RESP_NO_ANSWER, /* nothing came back: retry after the timeout */
	VFAB_RESP_RNR,	     /* receiver not ready: retry after rnr_timer */
	VFAB_RESP_NAK,	     /* fatal NAK: status is the requester's completion */
	VFAB_RESP_PASS,	     /* a rule (vfab_resp_check_*) lets the message on; never an answer */
};

struct vfab_resp {
	enum vfab_resp_kind kind;
	enum ibv_wc_status status;
	uint32_t rnr_timer; /* the responder's min_rnr_timer encoding */
	uint64_t atomic_orig;
	/* A tag matching rendezvous done: the requester receives its FIN (vfab_resp_tm_fin). */
	bool tm_fin;
	uint64_t tm_fin_tag;
};

void vfab_resp_rc(const struct vfab_msg *m, struct vfab_resp *res);
/*
 * RDMA WRITEs and SENDs (with or without immediate) of one chain to one
 * destination of another process: m[i] are consecutive messages whose
 * local segments follow each other in one array (m[i].liov). Delivers the
 * longest prefix that passes every check of vfab_resp_rc with one copy,
 * then its receive completions in order, and returns its length. The first
 * message left out has had no effect at the destination: vfab_resp_rc on
 * its own gives its exact outcome.
 */
uint32_t vfab_resp_rc_chain(const struct vfab_msg *m, uint32_t n);
/*
 * A SEND (with or without immediate) to an RC QP of a tag matching SRQ
 * (vfab_resp_tm.c): matched, delivered and completed as the TM-SRQ does;
 * false, nothing done, for any other destination.
 */
bool vfab_resp_tm(const struct vfab_msg *m, struct vfab_resp *res);
/* The FIN of a rendezvous tag, received by its requester qp, after vfab_resp_rc. */
void vfab_resp_tm_fin(struct vfab_qp *qp, uint64_t tag);
/* UD has no answer: the datagram is delivered or silently dropped. */
void vfab_resp_ud(const struct vfab_msg *m);
/* The 40 bytes a UD receiver finds in front of m's payload. */
void vfab_resp_ud_grh(const struct vfab_msg *m, uint8_t grh[VFAB_GRH_BYTES]);
/*
 * Datagrams of one QP to one UD QP of another process, on a plain path,
 * with one Q_Key: m[i].liov holds the segment of its GRH and then those of
 * its payload (m[i].len bytes), and follows m[i - 1]'s in one array.
 * Delivers the longest prefix that the receive queue takes whole with one
 * copy, then their receive completions in order, and returns its length.
 * The first datagram left out has had no effect: vfab_resp_ud on its own
 * delivers or drops it.
 */
uint32_t vfab_resp_ud_chain(const struct vfab_msg *m, uint32_t n);
/*
 * A datagram of qp's WR w (its bytes in iov) to QP qpn of port p of HCA h,
 * which the sender reaches with a source GID of this type: only to its
 * registered owner, through vfab_resp_ud; the ports count it either way.
 */
void vfab_resp_ud_send(struct vfab_qp *qp, const struct vfab_swqe *w, struct iovec *iov,
		       unsigned int n, uint64_t len, uint32_t h, uint32_t p, uint32_t qpn,
		       uint8_t type);

#endif /* VFAB_RESP_H */
