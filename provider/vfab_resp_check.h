/* SPDX-License-Identifier: MIT */
/*
 * The responder's rules, one vfab_resp_check_* per IB rule as the remote HCA
 * applies it, and the helpers every delivery path shares (receive buffers,
 * receive CQEs, the owner as a peer): used by the single-message RC
 * responder (vfab_resp.c), the chain responder (vfab_resp_chain.c) and UD
 * delivery (vfab_resp_ud.c). Everything here runs under the destination QP
 * slot's lock and calls nothing above it. A rule returns VFAB_RESP_PASS to
 * let the message on, else the answer the requester gets.
 */
#ifndef VFAB_RESP_CHECK_H
#define VFAB_RESP_CHECK_H

#include "provider/vfab_resp.h"
#include "provider/vfab_xfer.h"

/* A receive WQE copied out of its ring, with the PD its lkeys must belong to. */
struct vfab_resp_rwqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t pd;
	struct vfab_sge sge[VFAB_MAX_SRQ_SGE];
};

/*
 * The L3 header a RoCE datagram arrived with, as mlx5 reports it for UD in
 * bits 25:24 of the CQE's flags_rqpn, which libmlx5 hands out as wc.sl (and
 * the kernel's mlx5 decodes into the network header type): UCX reads it to
 * find the destination GID in the GRH area (IPv4: only the last 20 bytes).
 */
enum vfab_roce_l3 { VFAB_ROCE_L3_GRH = 0, VFAB_ROCE_L3_IPV6 = 1, VFAB_ROCE_L3_IPV4 = 2 };

/*
 * The small helpers below are inline, as they were within one file: the
 * plain path runs them on every message (ib_write_lat).
 */

/* What this process counts for the port the message arrived at (its shard's counters). */
static inline struct vfab_port_counters *vfab_resp_dst_cnt(const struct vfab_msg *m)
{
	return vfab_cnt(m->r, m->dst_hca, m->dst_port);
}

/* A QP state in which requests are accepted (RC) and datagrams received (UD). */
static inline bool vfab_resp_receiving(uint32_t state)
{
	return state == IBV_QPS_RTR || state == IBV_QPS_RTS || state == IBV_QPS_SQD;
}

/* The destination's owner is this process: a copy within it. */
static inline bool vfab_resp_owner_is_self(const struct vfab_msg *m)
{
	return m->kq->owner.pid == m->self_pid;
}

/* The destination's owner as the peer of a copy (vfab_xfer.h). */
static inline struct vfab_peer vfab_resp_peer_of(const struct vfab_msg *m)
{
	struct vfab_peer p = {.pid = m->kq->owner.pid,
			      .memfd = m->memfd,
			      .pidfd1 = m->pidfd1,
			      .self = vfab_resp_owner_is_self(m),
			      .foreign = m->foreign};

	return p;
}

/* Rule: the destination is an RC QP receiving on its port, connected back. */
enum vfab_resp_kind vfab_resp_check_state(const struct vfab_msg *m);
/* Rule: a datagram's QP is UD, receiving on its port, with the Q_Key named; else dropped. */
enum vfab_resp_kind vfab_resp_check_ud(const struct vfab_msg *m);
/* Rule: the request's PSN is the expected one; *dup for a duplicate. */
enum vfab_resp_kind vfab_resp_check_psn(const struct vfab_msg *m, bool *dup);
/* Rule: R_Key, PD, range and access of an RDMA target; *pin held on PASS. */
enum vfab_resp_kind vfab_resp_check_rkey(const struct vfab_msg *m, uint32_t access, uint64_t len,
					 struct iovec *out, enum ibv_wc_status *st,
					 struct vfab_mr_slot **pin);
/* Rule: an atomic's target is 8-byte aligned. */
enum vfab_resp_kind vfab_resp_check_atomic(const struct vfab_msg *m);
/* Rule: a receive is posted; it is consumed and copied into rw. */
enum vfab_resp_kind vfab_resp_check_rq(const struct vfab_msg *m, struct vfab_resp_rwqe *rw);
/*
 * Where m's destination takes its receives from, as vfabd sealed the QP:
 * its own ring (*srq NULL) or its SRQ's (*srq the region slot, *ksrq
 * vfabd's record); *pd the PD their lkeys belong to. NULL: an SRQ that is
 * no longer the QP owner's.
 */
struct vfab_rq *vfab_resp_rq_of(const struct vfab_msg *m, struct vfab_srq_slot **srq,
				const struct vfab_srq_slot **ksrq, uint32_t *pd);
/* The receive buffers of rw, each MR pinned; vfab_resp_unpin_list after the copy. */
enum ibv_wc_status vfab_resp_scatter_list(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
					  struct iovec *iov, struct vfab_mr_slot **pins,
					  unsigned int *n, uint64_t *cap);
void vfab_resp_unpin_list(struct vfab_mr_slot **pins, unsigned int n);
/*
 * Scatter to CQE (fabric/region.h): whether SEND m may travel in its
 * receive completion: 1 to VFAB_CQE_SCATTER_BYTES bytes to an RC or UC QP
 * that this process may read with loads (inline, or MRs not on demand).
 */
bool vfab_resp_in_cqe(const struct vfab_msg *m);
/*
 * Then whether it does: its first receive buffer (dst[0] of n,
 * vfab_resp_scatter_list) takes it whole. On true *x holds the bytes and
 * their place; no copy into the owner is needed.
 */
bool vfab_resp_scatter_cqe(const struct vfab_msg *m, const struct iovec *dst, unsigned int n,
			   struct vfab_cqe_scatter *x);
/* The encapsulation of a message from a GID of sgid_type at sgid to dgid. */
enum vfab_roce_l3 vfab_roce_l3_of(uint8_t sgid_type, const uint8_t *sgid, const uint8_t *dgid);
enum vfab_roce_l3 vfab_resp_roce_l3(const struct vfab_msg *m);
/* The receive CQE of m into out; true when the sender asked for a solicited event. */
bool vfab_resp_recv_cqe(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
			enum ibv_wc_status status, enum ibv_wc_opcode opcode, uint32_t byte_len,
			uint32_t flags, struct vfab_cqe *out);

/* The PD of m's destination: its QP's, or for XRC the SRQ's the message names. */
static inline uint32_t vfab_resp_pd(const struct vfab_msg *m)
{
	return m->xsrq ? m->xsrq->pd : m->kq->pd;
}

/* The CQ m's receive completes into: its QP's, or for XRC the SRQ's. */
static inline uint32_t vfab_resp_recv_cq(const struct vfab_msg *m)
{
	return m->xsrq ? m->xsrq->cq : m->kq->recv_cq;
}

/* The receive CQE of m, pushed to the destination's receive CQ. */
static inline void vfab_resp_push_recv(const struct vfab_msg *m, const struct vfab_resp_rwqe *rw,
				       enum ibv_wc_status status, enum ibv_wc_opcode opcode,
				       uint32_t byte_len, uint32_t flags)
{
	struct vfab_cqe e;
	bool solicited = vfab_resp_recv_cqe(m, rw, status, opcode, byte_len, flags, &e);

	vfab_cq_push(m->map, vfab_resp_recv_cq(m), &m->kq->owner, &e, solicited);
}

/* The successful receive CQE of SEND m whose bytes travel in it (x: vfab_resp_scatter_cqe). */
static inline void vfab_resp_push_scattered(const struct vfab_msg *m,
					    const struct vfab_resp_rwqe *rw,
					    const struct vfab_cqe_scatter *x)
{
	struct vfab_cqe e;
	bool solicited =
	    vfab_resp_recv_cqe(m, rw, IBV_WC_SUCCESS, IBV_WC_RECV, x->len, VFAB_WC_SCATTERED, &e);

	vfab_cq_push_n(m->map, vfab_resp_recv_cq(m), &m->kq->owner, &e, 1, &solicited, x);
}

#endif /* VFAB_RESP_CHECK_H */
