/* SPDX-License-Identifier: MIT */
/*
 * What the kernel's RDMA CM derives for a RoCE connection, as pure
 * functions: GIDs of IP addresses (the RoCE v2 GID of an address), the IB
 * MTU of a netdev MTU, the path record of a route, and the QP attributes
 * rdma_init_qp_attr returns for each state. Unit-tested.
 */
#ifndef VFAB_CM_PATH_H
#define VFAB_CM_PATH_H

#include <stdint.h>
#include <sys/socket.h>

#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

/* The kernel's RoCE path: packet lifetime (CMA_IBOE_PACKET_LIFETIME) and hop limit of IPv4. */
#define VFAB_CM_PACKET_LIFETIME 16
#define VFAB_CM_HOP_LIMIT 64
/* Q_Key of RDMA_PS_UDP/IPOIB IDs (RDMA_UDP_QKEY) and of the CM QPs (IB_QP1_QKEY). */
#define VFAB_CM_UDP_QKEY 0x01234567u
#define VFAB_CM_QP1_QKEY 0x80010000u

/* The GID of an IPv4 (::ffff:a.b.c.d) or IPv6 address; -EAFNOSUPPORT otherwise. */
int vfab_cm_gid_of(const struct sockaddr *sa, uint8_t gid[16]);

/*
 * The MGID of a group address on RoCE v2, the GID type of vfab's IDs
 * (cma_iboe_set_mgid): an IPv4 address IPv4-mapped, an IPv6 one as it is.
 * -EINVAL for the wildcard or a family other than AF_INET/AF_INET6. The
 * address need not be a multicast one (the kernel does not check it
 * either: ibv_attach_mcast then fails and librdmacm reports
 * MULTICAST_ERROR).
 */
int vfab_cm_path_mgid(const struct sockaddr *addr, uint8_t mgid[16]);

/* The hop limit of the group's address handle: 64 for IPv4 on RoCE v2 (IPV6_DEFAULT_HOPLIMIT),
 * else 1. */
uint8_t vfab_cm_path_mc_hop_limit(int family);

/* What a multicast join asks of an ID (JOIN_MCAST / JOIN_IP_MCAST). */
struct vfab_cm_mc_req {
	int bound;    /* bound to an HCA (ADDR_BOUND) or its address resolved */
	int loopback; /* resolved to a loopback destination: no netdev */
	int ud;	      /* a UD ID (RDMA_PS_UDP, RDMA_PS_IPOIB) */
	uint32_t join_flags;
	const struct sockaddr *addr;
	uint32_t addr_size;
};

/*
 * The kernel's rules for a join (ucma_process_join, rdma_join_multicast,
 * cma_iboe_join_multicast): 0 with the group's MGID in mgid, or -EINVAL (a
 * size that is not the family's, flags other than FULLMEMBER and
 * SENDONLY_FULLMEMBER, an ID neither bound nor resolved, not UD, the
 * wildcard group), -ENODEV (a loopback ID has no netdev).
 */
int vfab_cm_path_mc_check(const struct vfab_cm_mc_req *q, uint8_t mgid[16]);

/* The IB path MTU (enum ibv_mtu) for a netdev MTU in bytes (iboe_get_mtu). */
int vfab_cm_mtu_of_netdev(int netdev_mtu);

/* A RoCE path record from sgid to dgid (what route resolution reports). */
void vfab_cm_path_fill(struct ib_user_path_rec *p, const uint8_t sgid[16], const uint8_t dgid[16],
		       int mtu, uint8_t tclass);

/* Everything rdma_init_qp_attr needs to know about one connection side. */
struct vfab_cm_qp_params {
	int ud;	       /* UD (SIDR) rather than RC */
	int connected; /* a REQ was sent or received (the IB CM ID exists) */
	uint8_t port;  /* HCA port */
	uint8_t sgid_index;
	uint8_t dgid[16];
	uint8_t hop_limit;
	uint8_t tclass;
	int mtu;	     /* enum ibv_mtu */
	uint32_t qkey;	     /* UD */
	uint32_t remote_qpn; /* RC, connected */
	uint32_t remote_psn;
	uint32_t local_psn;
	uint8_t resp_res; /* responder_resources */
	uint8_t init_depth;
	uint8_t retry;
	uint8_t rnr_retry;
	uint8_t timeout; /* local ACK timeout exponent */
};

/* Fill *a for `state` (enum ibv_qp_state); -EINVAL where the CM gives none. */
int vfab_cm_qp_attr(const struct vfab_cm_qp_params *p, int state, struct ib_uverbs_qp_attr *a);

#endif /* VFAB_CM_PATH_H */
