/* SPDX-License-Identifier: MIT */
/*
 * verbs_mcast: UD multicast through the public libibverbs API, inside a
 * node (tests/integration/mcast.sh runs it).
 *
 *   verbs_mcast [-d DEV] [-g GID_INDEX]
 *       in one node: the ConnectX-6 limits ibv_query_device reports;
 *       ibv_attach_mcast/ibv_detach_mcast errors as the kernel gives them
 *       (EINVAL for an RC or UC QP, a GID that is not multicast, a detach
 *       of a group the QP is not in; a second attach is 0); delivery of
 *       one datagram to QPN 0xFFFFFF to every attached QP of other
 *       contexts with the GRH naming the group, none to the sender unless
 *       it is attached itself, none with IBV_QP_CREATE_BLOCK_SELF_MCAST_LB,
 *       none with the wrong Q_Key or to a unicast QPN, none after a detach
 *       or once the QP is destroyed, none to an IPv6 group from an IPv4
 *       RoCE v2 source.
 *   verbs_mcast -g IDX --recv GROUP COUNT
 *       attaches a UD QP to GROUP (IPv4 or IPv6 address), prints "ready",
 *       and checks that COUNT datagrams arrive (payload and GRH) in 30 s;
 *       COUNT 0: that none arrives in 5 s.
 *   verbs_mcast -g IDX --send GROUP COUNT
 *       sends COUNT datagrams to GROUP from the GID at IDX.
 *   verbs_mcast --fill GROUP SECONDS
 *       attaches 240 UD QPs of one context to GROUP (exit 3 when one
 *       attach fails with ENOMEM: the group is full), checks that the
 *       241st gets ENOMEM (a ConnectX-6's 240 QPs of a device per group),
 *       prints "ready" and sleeps SECONDS before it cleans up; killed
 *       meanwhile, it leaves its attachments to vfabd's reaper.
 * Each check prints "ok NAME" or "FAIL NAME: why"; exit 0 when all pass.
 */
#include "verbs_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MC_QPN 0xffffffu
#define QKEY 0x01234567u
#define MSG 64

/* A group address (dotted IPv4 or IPv6) as its RoCE v2 MGID. */
static union ibv_gid mgid_of(const char *addr)
{
	union ibv_gid g;

	memset(&g, 0, sizeof(g));
	if (inet_pton(AF_INET, addr, g.raw + 12) == 1) {
		g.raw[10] = g.raw[11] = 0xff;
		return g;
	}
	if (inet_pton(AF_INET6, addr, g.raw) != 1)
		die("not an IPv4 or IPv6 address");
	return g;
}

static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = PORT;
	a.qkey = QKEY;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD to INIT");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("UD to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
}

/*
 * A side with a UD QP in RTS (created with create_flags) whose sends
 * complete on a CQ of their own, so that a copy the QP receives of its own
 * datagram never hides its send completion.
 */
struct member {
	struct side s;
	struct ibv_cq *scq;
};

static void ud_open(struct member *m, uint32_t create_flags)
{
	struct side *s = &m->s;
	struct ibv_qp_init_attr_ex a = {
	    .cap = {.max_send_wr = 64, .max_recv_wr = 256, .max_send_sge = 1, .max_recv_sge = 1},
	    .qp_type = IBV_QPT_UD,
	    .comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS,
	    .create_flags = create_flags,
	};

	side_open(s, ALL);
	m->scq = ibv_create_cq(s->ctx, 64, NULL, NULL, 0);
	if (!m->scq)
		die("ibv_create_cq");
	a.send_cq = m->scq;
	a.recv_cq = s->cq;
	a.pd = s->pd;
	s->qp = ibv_create_qp_ex(s->ctx, &a);
	if (!s->qp)
		die("ibv_create_qp_ex");
	ud_up(s->qp);
}

static void ud_close(struct member *m)
{
	if (m->s.qp)
		ibv_destroy_qp(m->s.qp);
	m->s.qp = NULL;
	ibv_destroy_cq(m->scq);
	side_close(&m->s);
}

static struct ibv_ah *group_ah(struct member *m, const union ibv_gid *mgid)
{
	struct side *s = &m->s;
	struct ibv_ah_attr a = {.is_global = 1, .port_num = PORT};
	struct ibv_ah *ah;

	a.grh.dgid = *mgid;
	a.grh.sgid_index = (uint8_t)gid_index;
	a.grh.hop_limit = 64;
	ah = ibv_create_ah(s->pd, &a);
	if (!ah)
		die("ibv_create_ah");
	return ah;
}

/* Posts receives for n datagrams (slot i at i * 256). */
static void recvs(struct member *m, int n)
{
	struct side *s = &m->s;

	for (int i = 0; i < n; i++) {
		struct ibv_sge g = sge_of(s, (size_t)i * 256, 40 + MSG);

		if (post_recv(s, (uint64_t)i, &g, 1))
			die("ibv_post_recv");
	}
}

/* One datagram of seq from s to qpn through ah; its send completion awaited. */
static bool send_one(struct member *m, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey, int seq)
{
	struct side *s = &m->s;
	struct ibv_sge g = sge_of(s, BUF - MSG, MSG);
	struct ibv_send_wr wr = {.wr_id = (uint64_t)seq,
				 .sg_list = &g,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;
	struct ibv_wc wc;

	memset(s->buf + BUF - MSG, 'a' + seq % 26, MSG);
	snprintf(s->buf + BUF - MSG, MSG, "mcast %d", seq);
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	return !ibv_post_send(s->qp, &wr, &bad) && !wait_wc(m->scq, &wc, 2000) &&
	       wc.status == IBV_WC_SUCCESS;
}

/*
 * The next receive of s is datagram seq from src_qpn, with the group in the
 * GRH: RoCE v2 over IPv4 puts an IPv4 header in the GRH's last 20 bytes
 * (destination address at byte 36), else the dgid is at byte 24.
 */
static bool got(struct member *m, int seq, uint32_t src_qpn, const union ibv_gid *mgid, int ms)
{
	struct side *s = &m->s;
	struct ibv_wc wc;
	char want[MSG];
	const char *at;
	bool v4 = mgid->raw[10] == 0xff && mgid->raw[11] == 0xff && !mgid->raw[0];

	if (wait_wc(s->cq, &wc, ms) || wc.status != IBV_WC_SUCCESS || wc.opcode != IBV_WC_RECV)
		return false;
	at = s->buf + wc.wr_id * 256;
	memset(want, 'a' + seq % 26, MSG);
	snprintf(want, MSG, "mcast %d", seq);
	return (wc.wc_flags & IBV_WC_GRH) && wc.byte_len == 40 + MSG &&
	       (!src_qpn || wc.src_qp == src_qpn) && !memcmp(at + 40, want, MSG) &&
	       (v4 ? !memcmp(at + 36, mgid->raw + 12, 4) : !memcmp(at + 24, mgid->raw, 16));
}

static bool nothing(struct member *m, int ms)
{
	struct side *s = &m->s;
	struct ibv_wc wc;

	return wait_wc(s->cq, &wc, ms) != 0;
}

static void test_attrs(void)
{
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_device_attr a;

	if (!ctx || ibv_query_device(ctx, &a))
		die("ibv_query_device");
	check(a.max_mcast_grp == 2097152 && a.max_mcast_qp_attach == 240 &&
		  a.max_total_mcast_qp_attach == 503316480,
	      "multicast limits of a ConnectX-6",
	      "max_mcast_grp %d, max_mcast_qp_attach %d, total %d", a.max_mcast_grp,
	      a.max_mcast_qp_attach, a.max_total_mcast_qp_attach);
	ibv_close_device(ctx);
}

static void test_attach_errors(void)
{
	union ibv_gid g4 = mgid_of("239.7.0.1"), g6 = mgid_of("ff0e::7:1");
	struct side rc, uc;
	struct member ud;
	int rc_;

	side_open(&rc, ALL);
	qp_open(&rc, IBV_QPT_RC);
	side_open(&uc, ALL);
	qp_open(&uc, IBV_QPT_UC);
	ud_open(&ud, 0);
	rc_ = ibv_attach_mcast(rc.qp, &g4, 0);
	check(rc_ == EINVAL, "attach of an RC QP: EINVAL", "returned %d", rc_);
	rc_ = ibv_attach_mcast(uc.qp, &g4, 0);
	check(rc_ == EINVAL, "attach of a UC QP: EINVAL", "returned %d", rc_);
	rc_ = ibv_detach_mcast(rc.qp, &g4, 0);
	check(rc_ == EINVAL, "detach of an RC QP: EINVAL", "returned %d", rc_);
	rc_ = ibv_attach_mcast(ud.s.qp, &gid, 0);
	check(rc_ == EINVAL, "attach to a unicast GID: EINVAL", "returned %d", rc_);
	rc_ = ibv_detach_mcast(ud.s.qp, &g4, 0);
	check(rc_ == EINVAL, "detach of a group never attached: EINVAL", "returned %d", rc_);
	rc_ = ibv_attach_mcast(ud.s.qp, &g4, 0);
	check(rc_ == 0, "attach to an IPv4-mapped group", "returned %d", rc_);
	rc_ = ibv_attach_mcast(ud.s.qp, &g4, 0);
	check(rc_ == 0, "a second attach to the same group: 0", "returned %d", rc_);
	rc_ = ibv_attach_mcast(ud.s.qp, &g6, 0xc001);
	check(rc_ == 0, "attach to an IPv6 group (the LID ignored on RoCE)", "returned %d", rc_);
	rc_ = ibv_detach_mcast(ud.s.qp, &g4, 0);
	check(rc_ == 0, "detach", "returned %d", rc_);
	rc_ = ibv_detach_mcast(ud.s.qp, &g4, 0);
	check(rc_ == EINVAL, "a second detach (one attachment): EINVAL", "returned %d", rc_);
	rc_ = ibv_destroy_qp(ud.s.qp); /* still in g6: the destroy detaches it */
	ud.s.qp = NULL;
	check(rc_ == 0, "destroy of an attached QP", "returned %d", rc_);
	side_close(&rc);
	side_close(&uc);
	ud_close(&ud);
}

static void test_delivery(void)
{
	union ibv_gid g = mgid_of("239.7.0.2"), g6 = mgid_of("ff0e::7:2");
	struct member a, b, c, d;
	struct ibv_ah *ah, *ah6, *ahd;
	uint32_t aqpn;

	ud_open(&a, 0);
	ud_open(&b, 0);
	ud_open(&c, 0);
	ud_open(&d, IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	aqpn = a.s.qp->qp_num;
	recvs(&a, 8);
	recvs(&b, 8);
	recvs(&c, 8);
	recvs(&d, 8);
	if (ibv_attach_mcast(b.s.qp, &g, 0) || ibv_attach_mcast(c.s.qp, &g, 0) ||
	    ibv_attach_mcast(b.s.qp, &g6, 0))
		die("ibv_attach_mcast");
	ah = group_ah(&a, &g);
	ah6 = group_ah(&a, &g6);
	check(send_one(&a, ah, MC_QPN, QKEY, 1), "multicast send completes", "no success");
	check(got(&b, 1, aqpn, &g, 1000) && got(&c, 1, aqpn, &g, 1000),
	      "every attached QP receives one copy, GRH naming the group",
	      "a copy is missing or wrong");
	check(nothing(&a, 100), "the sender, not attached, gets no copy", "it got one");
	check(nothing(&b, 100) && nothing(&c, 100), "one copy each (attached once)", "more copies");

	check(send_one(&a, ah, MC_QPN, 0x7777, 2) && nothing(&b, 100) && nothing(&c, 100),
	      "a wrong Q_Key: dropped by every member", "it was delivered");
	check(send_one(&a, ah, b.s.qp->qp_num, QKEY, 3) && nothing(&b, 100),
	      "to a multicast GID with a unicast QPN: dropped", "it was delivered");
	check(send_one(&a, ah6, MC_QPN, QKEY, 4) && nothing(&b, 100),
	      "an IPv6 group from an IPv4 RoCE v2 GID: not delivered", "it was delivered");

	/* Attached itself, the sender gets a copy too (multicast loopback). */
	if (ibv_attach_mcast(a.s.qp, &g, 0))
		die("ibv_attach_mcast a");
	check(send_one(&a, ah, MC_QPN, QKEY, 5) && got(&a, 5, aqpn, &g, 1000) &&
		  got(&b, 5, aqpn, &g, 1000) && got(&c, 5, aqpn, &g, 1000),
	      "an attached sender receives its own datagram", "a copy is missing");
	/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: the others get it, the sender not. */
	if (ibv_attach_mcast(d.s.qp, &g, 0))
		die("ibv_attach_mcast d");
	ahd = group_ah(&d, &g);
	check(send_one(&d, ahd, MC_QPN, QKEY, 6) && got(&b, 6, d.s.qp->qp_num, &g, 1000) &&
		  got(&a, 6, d.s.qp->qp_num, &g, 1000) && nothing(&d, 100),
	      "BLOCK_SELF_MCAST_LB: no copy to the sending QP, one to the others", "wrong copies");
	check(got(&c, 6, d.s.qp->qp_num, &g, 1000), "... and to the third member", "missing");

	if (ibv_detach_mcast(b.s.qp, &g, 0))
		die("ibv_detach_mcast b");
	ibv_destroy_qp(c.s.qp);
	c.s.qp = NULL;
	check(send_one(&d, ahd, MC_QPN, QKEY, 7) && got(&a, 7, 0, &g, 1000) && nothing(&b, 100),
	      "after a detach and a destroy: only the members left", "wrong copies");
	ibv_destroy_ah(ah);
	ibv_destroy_ah(ah6);
	ibv_destroy_ah(ahd);
	ud_close(&a);
	ud_close(&b);
	ud_close(&c);
	ud_close(&d);
}

static int recv_main(const char *group, int count)
{
	union ibv_gid g = mgid_of(group);
	struct member s;
	int i, ok = 0;

	ud_open(&s, 0);
	if (count > 200)
		count = 200;
	recvs(&s, count ? count : 8);
	if (ibv_attach_mcast(s.s.qp, &g, 0))
		die("ibv_attach_mcast");
	printf("ready qpn 0x%x\n", s.s.qp->qp_num);
	fflush(stdout);
	for (i = 0; i < count; i++)
		ok += got(&s, i, 0, &g, 30000);
	if (count)
		check(ok == count, "every datagram arrived with the group's GRH", "%d of %d", ok,
		      count);
	check(nothing(&s, count ? 200 : 5000), count ? "no more than sent" : "nothing arrives",
	      "extra datagrams");
	if (ibv_detach_mcast(s.s.qp, &g, 0))
		die("ibv_detach_mcast");
	ud_close(&s);
	return failures ? 1 : 0;
}

static int fill_main(const char *group, int secs)
{
	union ibv_gid g = mgid_of(group);
	struct ibv_qp *qps[241];
	struct ibv_context *ctx = ibv_open_device(dev);
	struct ibv_pd *pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	struct ibv_cq *cq = pd ? ibv_create_cq(ctx, 16, NULL, NULL, 0) : NULL;
	int i, rc = 0;

	if (!cq)
		die("context, PD or CQ");
	for (i = 0; i < 241; i++) {
		struct ibv_qp_init_attr a = {
		    .send_cq = cq,
		    .recv_cq = cq,
		    .cap = {.max_send_wr = 1,
			    .max_recv_wr = 1,
			    .max_send_sge = 1,
			    .max_recv_sge = 1},
		    .qp_type = IBV_QPT_UD,
		};

		qps[i] = ibv_create_qp(pd, &a);
		if (!qps[i])
			die("ibv_create_qp");
		ud_up(qps[i]);
		rc = ibv_attach_mcast(qps[i], &g, 0);
		if (rc && i < 240) {
			printf("attach %d: %s\n", i, strerror(rc));
			return rc == ENOMEM ? 3 : 1;
		}
	}
	check(rc == ENOMEM, "a device's 241st QP in one group: ENOMEM", "returned %d", rc);
	printf("ready\n");
	fflush(stdout);
	sleep((unsigned)secs);
	for (i = 0; i < 241; i++)
		ibv_destroy_qp(qps[i]);
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return failures ? 1 : 0;
}

static int send_main(const char *group, int count)
{
	union ibv_gid g = mgid_of(group);
	struct member s;
	struct ibv_ah *ah;
	int i, ok = 0;

	ud_open(&s, 0);
	ah = group_ah(&s, &g);
	for (i = 0; i < count && i < 200; i++)
		ok += send_one(&s, ah, MC_QPN, QKEY, i);
	check(ok == count, "every multicast send completed", "%d of %d", ok, count);
	ibv_destroy_ah(ah);
	ud_close(&s);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *want = NULL, *group = NULL;
	struct ibv_device **list;
	int i, opt, mode = 0, count = 0;

	static const struct option longopts[] = {{"recv", required_argument, NULL, 'R'},
						 {"send", required_argument, NULL, 'S'},
						 {"fill", required_argument, NULL, 'F'},
						 {0}};

	while ((opt = getopt_long(argc, argv, "d:g:", longopts, NULL)) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'R' || opt == 'S' || opt == 'F')
			mode = opt, group = optarg;
		else
			return fprintf(stderr,
				       "usage: %s [-d DEV] [-g GID_INDEX] "
				       "[--recv|--send GROUP COUNT]\n",
				       argv[0]),
			       2;
	}
	if (mode) {
		if (optind >= argc)
			return fprintf(stderr, "%s: COUNT missing\n", argv[0]), 2;
		count = atoi(argv[optind]);
	}
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		die("no RDMA device");
	for (i = 0; list[i]; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			break;
	dev = list[i];
	if (!dev)
		die("device not found");
	{
		struct ibv_context *ctx = ibv_open_device(dev);

		if (!ctx)
			die("ibv_open_device");
		if (gid_index < 0)
			gid_index = find_gid(ctx);
		if (gid_index < 0 || ibv_query_gid(ctx, PORT, gid_index, &gid))
			die("no RoCE v2 IPv4 GID");
		ibv_close_device(ctx);
	}
	if (mode == 'R')
		return recv_main(group, count);
	if (mode == 'S')
		return send_main(group, count);
	if (mode == 'F')
		return fill_main(group, count);
	printf("# %s, GID index %d\n", ibv_get_device_name(dev), gid_index);
	test_attrs();
	test_attach_errors();
	test_delivery();
	printf("# %d checks, %d failed\n", checks, failures);
	ibv_free_device_list(list);
	return failures ? 1 : 0;
}
