/* SPDX-License-Identifier: MIT */
#include "cm/cm_path.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <string.h>

int vfab_cm_gid_of(const struct sockaddr *sa, uint8_t gid[16])
{
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		memset(gid, 0, 16);
		gid[10] = gid[11] = 0xff;
		memcpy(gid + 12, &in->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
		return 0;
	}
	return -EAFNOSUPPORT;
}

/* RoCE headers an IB MTU must leave room for: GRH, UDP, BTH, XRC and atomic ETH, ICRC. */
#define ROCE_OVERHEAD (40 + 8 + 12 + 4 + 28 + 4)

int vfab_cm_mtu_of_netdev(int netdev_mtu)
{
	int m = netdev_mtu - ROCE_OVERHEAD;

	if (m >= 4096)
		return IBV_MTU_4096;
	if (m >= 2048)
		return IBV_MTU_2048;
	if (m >= 1024)
		return IBV_MTU_1024;
	if (m >= 512)
		return IBV_MTU_512;
	if (m >= 256)
		return IBV_MTU_256;
	return 0;
}

void vfab_cm_path_fill(struct ib_user_path_rec *p, const uint8_t sgid[16], const uint8_t dgid[16],
		       int mtu, uint8_t tclass)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->sgid, sgid, 16);
	memcpy(p->dgid, dgid, 16);
	p->pkey = htons(0xffff);
	p->mtu = (uint32_t)mtu;
	p->mtu_selector = 2; /* exactly */
	p->hop_limit = VFAB_CM_HOP_LIMIT;
	p->traffic_class = tclass;
	p->numb_path = 1;
	p->reversible = 1;
	p->rate = 0; /* IB_RATE_PORT_CURRENT */
	p->rate_selector = 2;
	p->packet_life_time = VFAB_CM_PACKET_LIFETIME;
	p->packet_life_time_selector = 2;
}

static void fill_av(const struct vfab_cm_qp_params *p, struct ib_uverbs_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	memcpy(ah->grh.dgid, p->dgid, 16);
	ah->grh.sgid_index = p->sgid_index;
	ah->grh.hop_limit = p->hop_limit;
	ah->grh.traffic_class = p->tclass;
	ah->is_global = 1;
	ah->port_num = p->port;
}

/* After Linux cm.c cm_init_qp_{init,rtr,rts}_attr and cma.c cma_ib_init_qp_attr. */
int vfab_cm_qp_attr(const struct vfab_cm_qp_params *p, int state, struct ib_uverbs_qp_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (uint32_t)state;
	switch (state) {
	case IBV_QPS_INIT:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->port_num = p->port;
		a->pkey_index = 0;
		if (p->ud) {
			a->qkey = p->qkey;
			a->qp_attr_mask |= IBV_QP_QKEY;
		} else {
			a->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
			if (p->connected)
				a->qp_access_flags =
				    IBV_ACCESS_REMOTE_WRITE |
				    (p->resp_res ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC
						 : 0);
		}
		return 0;
	case IBV_QPS_RTR:
		if (p->ud) {
			a->qp_attr_mask = IBV_QP_STATE;
			return 0;
		}
		if (!p->connected)
			return -EINVAL;
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		fill_av(p, &a->ah_attr);
		a->path_mtu = (uint32_t)p->mtu;
		a->dest_qp_num = p->remote_qpn;
		a->rq_psn = p->remote_psn;
		a->max_dest_rd_atomic = p->resp_res;
		a->min_rnr_timer = 0;
		return 0;
	case IBV_QPS_RTS:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		a->sq_psn = p->ud ? 0 : p->local_psn;
		if (p->ud)
			return 0;
		if (!p->connected)
			return -EINVAL;
		a->qp_attr_mask |=
		    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		a->timeout = p->timeout;
		a->retry_cnt = p->retry;
		a->rnr_retry = p->rnr_retry;
		a->max_rd_atomic = p->init_depth;
		return 0;
	default:
		return -EINVAL;
	}
}

int vfab_cm_path_mgid(const struct sockaddr *addr, uint8_t mgid[16])
{
	if (addr->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)addr;

		if (IN6_IS_ADDR_UNSPECIFIED(&s6->sin6_addr))
			return -EINVAL;
		memcpy(mgid, &s6->sin6_addr, 16);
		return 0;
	}
	if (addr->sa_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)addr;

		if (s4->sin_addr.s_addr == htonl(INADDR_ANY))
			return -EINVAL;
		memset(mgid, 0, 10);
		mgid[10] = 0xff;
		mgid[11] = 0xff;
		memcpy(mgid + 12, &s4->sin_addr, 4);
		return 0;
	}
	return -EINVAL;
}

uint8_t vfab_cm_path_mc_hop_limit(int family)
{
	return family == AF_INET ? VFAB_CM_HOP_LIMIT : 1;
}

int vfab_cm_path_mc_check(const struct vfab_cm_mc_req *q, uint8_t mgid[16])
{
	int ret;

	if (q->addr_size != (q->addr->sa_family == AF_INET6  ? sizeof(struct sockaddr_in6)
			     : q->addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
							     : 0) ||
	    !q->addr_size)
		return -EINVAL;
	if (q->join_flags != RDMA_MC_JOIN_FLAG_FULLMEMBER &&
	    q->join_flags != RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER)
		return -EINVAL;
	if (!q->bound || !q->ud)
		return -EINVAL;
	ret = vfab_cm_path_mgid(q->addr, mgid);
	if (ret)
		return ret;
	return q->loopback ? -ENODEV : 0;
}
