/* SPDX-License-Identifier: MIT */
/*
 * Raw packet QPs (IBV_QPT_RAW_PACKET): whole Ethernet frames on the wire of
 * the QP's port, which is its netdev's (gid_attrs/ndevs/0 of the node's
 * sysfs view), so frames reach the node's own stack, the other nodes'
 * netdevs and their raw packet QPs alike, shaped as any of that wire's
 * traffic. A QP receives only what its flows (ibv_create_flow,
 * vfab_flow.h) steer to it. docs/DESIGN.md "Raw packet QPs".
 */
#ifndef VFAB_RAW_H
#define VFAB_RAW_H

#include "provider/vfab.h"

/* At creation: the packet socket, which needs CAP_NET_RAW (else EPERM, as uverbs). */
int vfab_raw_open(struct vfab_qp *qp);
/*
 * An RSS QP (IBV_QP_INIT_ATTR_IND_TABLE and _RX_HASH): frames its flows
 * take go to the WQ of its indirection table that the hash of their fields
 * picks (vfab_wq.c). 0 or an errno value (vfab_rss_check).
 */
int vfab_raw_rss_init(struct vfab_qp *qp, const struct ibv_qp_init_attr_ex *a);
/* modify_qp with a port: the socket goes to that port's netdev. 0 or an errno value. */
int vfab_raw_bind(struct vfab_qp *qp, uint8_t port);
/* Whether flows still point at the QP (destroy_qp is then EBUSY, as uverbs). */
bool vfab_raw_busy(struct vfab_qp *qp);
/* At destruction (no flows left): the receiver stopped, the socket closed. */
void vfab_raw_close(struct vfab_qp *qp);
/* What post_send refuses outright for a raw packet QP (0 or an errno value). */
int vfab_raw_check_post(const struct vfab_swqe *w);
/*
 * The frame of WR w, its len bytes gathered in iov (vfab_gather), onto the
 * wire (sq.lock held); its completion status.
 */
enum ibv_wc_status vfab_raw_send(struct vfab_qp *qp, const struct vfab_swqe *w,
				 const struct iovec *iov, unsigned int n, uint64_t len);

/*
 * From poll_cq of a CQ that raw packet QPs with flows receive into: the
 * frames waiting for them delivered by the polling thread, which on a node
 * with one CPU would otherwise share it with their receiver threads.
 */
void vfab_raw_poll(struct vfab_cq *cq);

/* ibv_create_flow / ibv_destroy_flow (the context's ops). */
struct ibv_flow *vfab_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int vfab_destroy_flow(struct ibv_flow *flow);

#endif /* VFAB_RAW_H */
