/* SPDX-License-Identifier: MIT */
/*
 * cm/cm_path.c: the GID of an address (RoCE v2), the IB MTU of a netdev MTU
 * (Linux iboe_get_mtu), the path record, and the QP attributes per state
 * after Linux cm.c cm_init_qp_{init,rtr,rts}_attr.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cm/cm_path.h"

#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <netinet/in.h>
#include <rdma/rdma_user_cm.h>
#include <string.h>

static void gids(void **state)
{
	struct sockaddr_in in = {.sin_family = AF_INET};
	struct sockaddr_in6 in6 = {.sin6_family = AF_INET6};
	struct sockaddr sa = {.sa_family = AF_UNIX};
	const uint8_t v4[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 198, 18, 0, 2};
	uint8_t g[16];

	(void)state;
	inet_pton(AF_INET, "198.18.0.2", &in.sin_addr);
	assert_int_equal(vfab_cm_gid_of((struct sockaddr *)&in, g), 0);
	assert_memory_equal(g, v4, 16);
	inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
	assert_int_equal(vfab_cm_gid_of((struct sockaddr *)&in6, g), 0);
	assert_memory_equal(g, &in6.sin6_addr, 16);
	assert_int_equal(vfab_cm_gid_of(&sa, g), -EAFNOSUPPORT);
}

static void mtus(void **state)
{
	(void)state;
	assert_int_equal(vfab_cm_mtu_of_netdev(1500), IBV_MTU_1024);
	assert_int_equal(vfab_cm_mtu_of_netdev(9000), IBV_MTU_4096);
	assert_int_equal(vfab_cm_mtu_of_netdev(4096 + 96), IBV_MTU_4096);
	assert_int_equal(vfab_cm_mtu_of_netdev(4096 + 95), IBV_MTU_2048);
	assert_int_equal(vfab_cm_mtu_of_netdev(2048 + 96), IBV_MTU_2048);
	assert_int_equal(vfab_cm_mtu_of_netdev(600), IBV_MTU_256);
	assert_int_equal(vfab_cm_mtu_of_netdev(300), 0);
}

static void path(void **state)
{
	struct ib_user_path_rec p;
	uint8_t s[16] = {1}, d[16] = {2};

	(void)state;
	vfab_cm_path_fill(&p, s, d, IBV_MTU_1024, 0x20);
	assert_memory_equal(p.sgid, s, 16);
	assert_memory_equal(p.dgid, d, 16);
	assert_int_equal(p.mtu, IBV_MTU_1024);
	assert_int_equal(p.pkey, htons(0xffff));
	assert_int_equal(p.traffic_class, 0x20);
	assert_int_equal(p.hop_limit, VFAB_CM_HOP_LIMIT);
	assert_int_equal(p.packet_life_time, VFAB_CM_PACKET_LIFETIME);
	assert_int_equal(p.numb_path, 1);
}

static struct vfab_cm_qp_params rc(void)
{
	struct vfab_cm_qp_params p = {
	    .connected = 1,
	    .port = 1,
	    .sgid_index = 3,
	    .hop_limit = 64,
	    .tclass = 0,
	    .mtu = IBV_MTU_1024,
	    .remote_qpn = 0x1234,
	    .remote_psn = 0xabcdef,
	    .local_psn = 0x123456,
	    .resp_res = 4,
	    .init_depth = 2,
	    .retry = 7,
	    .rnr_retry = 6,
	    .timeout = 18,
	};
	p.dgid[15] = 9;
	return p;
}

static void rc_states(void **state)
{
	struct vfab_cm_qp_params p = rc();
	struct ib_uverbs_qp_attr a;

	(void)state;
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.qp_attr_mask,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	assert_int_equal(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_ATOMIC);
	assert_int_equal(a.port_num, 1);

	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTR, &a), 0);
	assert_int_equal(a.qp_attr_mask, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	assert_int_equal(a.dest_qp_num, 0x1234);
	assert_int_equal(a.rq_psn, 0xabcdef);
	assert_int_equal(a.path_mtu, IBV_MTU_1024);
	assert_int_equal(a.max_dest_rd_atomic, 4);
	assert_int_equal(a.ah_attr.is_global, 1);
	assert_int_equal(a.ah_attr.grh.sgid_index, 3);
	assert_int_equal(a.ah_attr.grh.dgid[15], 9);
	assert_int_equal(a.ah_attr.port_num, 1);

	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTS, &a), 0);
	assert_int_equal(a.qp_attr_mask, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
					     IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					     IBV_QP_MAX_QP_RD_ATOMIC);
	assert_int_equal(a.sq_psn, 0x123456);
	assert_int_equal(a.max_rd_atomic, 2);
	assert_int_equal(a.retry_cnt, 7);
	assert_int_equal(a.rnr_retry, 6);
	assert_int_equal(a.timeout, 18);

	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_SQD, &a), -EINVAL);
}

static void rc_before_connect(void **state)
{
	struct vfab_cm_qp_params p = rc();
	struct ib_uverbs_qp_attr a;

	(void)state;
	p.connected = 0; /* rdma_create_qp before rdma_connect: INIT, no remote access yet */
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.qp_access_flags, 0);
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTR, &a), -EINVAL);
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTS, &a), -EINVAL);
	p.connected = 1;
	p.resp_res = 0; /* no responder resources: no READ or atomic access */
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
}

static void ud_states(void **state)
{
	struct vfab_cm_qp_params p = {.ud = 1, .port = 1, .qkey = VFAB_CM_UDP_QKEY};
	struct ib_uverbs_qp_attr a;

	(void)state;
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_INIT, &a), 0);
	assert_int_equal(a.qp_attr_mask,
			 IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY);
	assert_int_equal(a.qkey, 0x01234567);
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTR, &a), 0);
	assert_int_equal(a.qp_attr_mask, IBV_QP_STATE);
	assert_int_equal(vfab_cm_qp_attr(&p, IBV_QPS_RTS, &a), 0);
	assert_int_equal(a.qp_attr_mask, IBV_QP_STATE | IBV_QP_SQ_PSN);
	assert_int_equal(a.sq_psn, 0);
}

/* The group's MGID and hop limit (cma_iboe_set_mgid, cma_iboe_join_multicast on RoCE v2). */
static void mgids(void **state)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct sockaddr un = {.sa_family = AF_UNIX};
	uint8_t g[16], want[16] = {[10] = 0xff, [11] = 0xff, 239, 1, 2, 3};

	(void)state;
	inet_pton(AF_INET, "239.1.2.3", &s4.sin_addr);
	assert_int_equal(vfab_cm_path_mgid((struct sockaddr *)&s4, g), 0);
	assert_memory_equal(g, want, 16);
	inet_pton(AF_INET6, "ff0e::1:2", &s6.sin6_addr);
	assert_int_equal(vfab_cm_path_mgid((struct sockaddr *)&s6, g), 0);
	assert_memory_equal(g, &s6.sin6_addr, 16);
	/* The wildcard joins nothing; other families neither. */
	s4.sin_addr.s_addr = 0;
	assert_int_equal(vfab_cm_path_mgid((struct sockaddr *)&s4, g), -EINVAL);
	memset(&s6.sin6_addr, 0, 16);
	assert_int_equal(vfab_cm_path_mgid((struct sockaddr *)&s6, g), -EINVAL);
	assert_int_equal(vfab_cm_path_mgid(&un, g), -EINVAL);
	assert_int_equal(vfab_cm_path_mc_hop_limit(AF_INET), 64);
	assert_int_equal(vfab_cm_path_mc_hop_limit(AF_INET6), 1);
}

/* A join's rules, in the kernel's order. */
static void mc_checks(void **state)
{
	struct sockaddr_in s4 = {.sin_family = AF_INET};
	struct sockaddr_in6 s6 = {.sin6_family = AF_INET6};
	struct vfab_cm_mc_req q = {
	    .bound = 1, .ud = 1, .addr = (struct sockaddr *)&s4, .addr_size = sizeof(s4)};
	uint8_t g[16];

	(void)state;
	inet_pton(AF_INET, "239.1.2.3", &s4.sin_addr);
	inet_pton(AF_INET6, "ff0e::1", &s6.sin6_addr);
	assert_int_equal(vfab_cm_path_mc_check(&q, g), 0);
	assert_int_equal(g[12], 239);
	q.join_flags = RDMA_MC_JOIN_FLAG_SENDONLY_FULLMEMBER;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), 0);
	q.join_flags = RDMA_MC_JOIN_FLAG_RESERVED;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -EINVAL);
	q.join_flags = RDMA_MC_JOIN_FLAG_FULLMEMBER;
	/* The size must be the family's. */
	q.addr_size = sizeof(s6);
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -EINVAL);
	q.addr = (struct sockaddr *)&s6;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), 0);
	assert_memory_equal(g, &s6.sin6_addr, 16);
	/* Neither bound nor resolved, or not UD (an RDMA_PS_TCP ID): EINVAL. */
	q.bound = 0;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -EINVAL);
	q.bound = 1;
	q.ud = 0;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -EINVAL);
	q.ud = 1;
	/* A loopback ID has no netdev; the wildcard group is refused first. */
	q.loopback = 1;
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -ENODEV);
	memset(&s6.sin6_addr, 0, 16);
	assert_int_equal(vfab_cm_path_mc_check(&q, g), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(gids),
	    cmocka_unit_test(mtus),
	    cmocka_unit_test(path),
	    cmocka_unit_test(rc_states),
	    cmocka_unit_test(rc_before_connect),
	    cmocka_unit_test(ud_states),
	    cmocka_unit_test(mgids),
	    cmocka_unit_test(mc_checks),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
