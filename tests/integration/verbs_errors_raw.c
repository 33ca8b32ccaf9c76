/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: raw packet QPs, flows and RSS (see verbs_errors.c), with
 * the answers uverbs and libmlx5 give: what a raw packet QP posts and how
 * short frames complete, flows refused for bad specs and on UD QPs, what a
 * flow, an indirection table or an RSS QP holds is not destroyed under it
 * (EBUSY), and mlx5's rules for an RSS QP's hash. A frame to the port's own
 * MAC loops back to the QP's flow and lands with its checksums vouched for.
 */
#include "verbs_harness.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* The port's netdev MAC, from the node's sysfs view. */
static void own_mac(struct ibv_context *ctx, uint8_t mac[6])
{
	char path[512], name[64], addr[32];
	FILE *f;

	snprintf(path, sizeof(path), "%s/ports/%d/gid_attrs/ndevs/0", ctx->device->ibdev_path,
		 PORT);
	f = fopen(path, "r");
	if (!f || !fgets(name, sizeof(name), f))
		die("the port's netdev");
	fclose(f);
	name[strcspn(name, "\n")] = '\0';
	snprintf(path, sizeof(path), "/sys/class/net/%s/address", name);
	f = fopen(path, "r");
	if (!f || !fgets(addr, sizeof(addr), f) ||
	    sscanf(addr, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &mac[0], &mac[1], &mac[2], &mac[3],
		   &mac[4], &mac[5]) != 6)
		die("the netdev's MAC");
	fclose(f);
}

static struct ibv_qp *raw_qp(struct side *s)
{
	struct ibv_qp_init_attr ia = {
	    .send_cq = s->cq,
	    .recv_cq = s->cq,
	    .qp_type = IBV_QPT_RAW_PACKET,
	    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 1}};
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = PORT};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &ia);

	if (!qp || ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PORT))
		die("raw packet QP");
	a.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("raw packet QP to RTR");
	a.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE))
		die("raw packet QP to RTS");
	return qp;
}

/* A flow on UDP/IPv4 to port 4000 at dst MAC mac (attr and its specs, back to back). */
struct udp_flow {
	struct ibv_flow_attr attr;
	struct ibv_flow_spec_eth eth;
	struct ibv_flow_spec_ipv4 ip;
	struct ibv_flow_spec_tcp_udp udp;
};
_Static_assert(sizeof(struct udp_flow) ==
		   sizeof(struct ibv_flow_attr) + sizeof(struct ibv_flow_spec_eth) +
		       sizeof(struct ibv_flow_spec_ipv4) + sizeof(struct ibv_flow_spec_tcp_udp),
	       "the specs follow each other without padding");

static void udp_flow(struct udp_flow *f, const uint8_t mac[6])
{
	memset(f, 0, sizeof(*f));
	f->attr.type = IBV_FLOW_ATTR_NORMAL;
	f->attr.size = sizeof(*f);
	f->attr.num_of_specs = 3;
	f->attr.port = PORT;
	f->eth.type = IBV_FLOW_SPEC_ETH;
	f->eth.size = sizeof(f->eth);
	memcpy(f->eth.val.dst_mac, mac, 6);
	memset(f->eth.mask.dst_mac, 0xff, 6);
	f->ip.type = IBV_FLOW_SPEC_IPV4;
	f->ip.size = sizeof(f->ip);
	f->udp.type = IBV_FLOW_SPEC_UDP;
	f->udp.size = sizeof(f->udp);
	f->udp.val.dst_port = htons(4000);
	f->udp.mask.dst_port = 0xffff;
}

/* A UDP/IPv4 datagram to mac, port 4000, checksums left to the HCA; its length. */
static uint32_t udp_frame(char *buf, const uint8_t mac[6])
{
	static const uint8_t ip[20] = {0x45, 0, 0,   40, 0, 1, 0x40, 0,	 64, 17,
				       0,    0, 198, 18, 0, 1, 198,  18, 0,  2};
	uint8_t *b = (uint8_t *)buf;

	memset(b, 0, 54);
	memcpy(b, mac, 6);
	memcpy(b + 6, mac, 6);
	b[12] = 0x08;
	memcpy(b + 14, ip, sizeof(ip));
	b[34] = 0x30;
	b[35] = 0x39;
	b[36] = 4000 >> 8;
	b[37] = 4000 & 0xff;
	b[39] = 20; /* UDP length: 8 + 12 bytes */
	memcpy(b + 42, "vfab raw 12b", 12);
	return 54;
}

static void raw_traffic_checks(struct side *s, struct ibv_qp *qp, const uint8_t mac[6])
{
	struct udp_flow fa;
	struct ibv_flow *flow;
	struct ibv_sge g, r;
	struct ibv_wc wc;
	int rc;

	udp_flow(&fa, mac);
	flow = ibv_create_flow(qp, &fa.attr);
	if (!check(flow != NULL, "raw: a flow on eth + IPv4 + UDP", "errno %d", errno))
		return;
	rc = ibv_destroy_qp(qp);
	check(rc == EBUSY, "raw: a QP with a flow is not destroyed (EBUSY)", "rc %d", rc);

	r = sge_of(s, 4096, 2048);
	post_recv(s, 7, &r, 1);
	g = sge_of(s, 0, udp_frame(s->buf, mac));
	rc = post(s, IBV_WR_RDMA_WRITE, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	check(rc == EINVAL, "raw: an RDMA WRITE is not posted (EINVAL)", "rc %d", rc);
	rc = post(s, IBV_WR_SEND, &g, 0, 0, 0, IBV_SEND_SIGNALED);
	check(rc == EINVAL, "raw: a frame without segments is not posted (EINVAL)", "rc %d", rc);
	g.length = 10;
	rc = post(s, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	check(!rc && expect_wc(s->cq, "raw: a 10-byte frame completes with LOC_LEN_ERR",
			       IBV_WC_LOC_LEN_ERR, 2000),
	      "raw: a 10-byte frame is posted", "rc %d", rc);
	/*
	 * The error moved the QP to ERR: a fresh one receives, and another
	 * sends (a QP never sees its own frames).
	 */
	ibv_destroy_flow(flow);
	ibv_destroy_qp(qp);
	while (ibv_poll_cq(s->cq, 1, &wc) > 0)
		;
	s->qp = raw_qp(s);
	flow = ibv_create_flow(s->qp, &fa.attr);
	if (!flow)
		die("raw: flow on the second QP");
	post_recv(s, 7, &r, 1);
	qp = s->qp;
	s->qp = raw_qp(s);
	g.length = 54;
	rc = post(s, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED | IBV_SEND_IP_CSUM);
	check(!rc, "raw: a frame to the port's own MAC is posted", "rc %d", rc);
	/* Its send completion and, looped back by the port, its receive. */
	for (int got = 0; got < 2;) {
		if (wait_wc(s->cq, &wc, 3000)) {
			check(false, "raw: both completions of the looped-back frame", "got %d",
			      got);
			break;
		}
		got++;
		if (wc.opcode != IBV_WC_RECV)
			continue;
		check(wc.status == IBV_WC_SUCCESS && wc.byte_len == 54 && wc.wr_id == 7 &&
			  !memcmp(s->buf + 4096 + 42, "vfab raw 12b", 12),
		      "raw: the frame lands in the posted receive", "status %d len %u", wc.status,
		      wc.byte_len);
		check(wc.wc_flags & IBV_WC_IP_CSUM_OK,
		      "raw: IBV_WC_IP_CSUM_OK (the HCA filled in the checksums)", "flags 0x%x",
		      wc.wc_flags);
	}
	ibv_destroy_flow(flow);
	ibv_destroy_qp(qp);
}

static void rss_checks(struct side *s)
{
	struct ibv_wq_init_attr wa = {
	    .wq_type = IBV_WQT_RQ, .max_wr = 8, .max_sge = 1, .pd = s->pd, .cq = s->cq};
	uint8_t key[40] = {1, 2, 3};
	struct ibv_rwq_ind_table_init_attr ta = {.log_ind_tbl_size = 1};
	struct ibv_qp_init_attr_ex qa = {
	    .qp_type = IBV_QPT_RAW_PACKET,
	    .comp_mask =
		IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_IND_TABLE | IBV_QP_INIT_ATTR_RX_HASH,
	    .pd = s->pd,
	    .rx_hash_conf = {.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
			     .rx_hash_key_len = 40,
			     .rx_hash_key = key,
			     .rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4}};
	struct ibv_wq *wqs[2];
	struct ibv_rwq_ind_table *t;
	struct ibv_qp *qp;
	int rc;

	wqs[0] = ibv_create_wq(s->ctx, &wa);
	wqs[1] = ibv_create_wq(s->ctx, &wa);
	if (!check(wqs[0] && wqs[1], "RSS: work queues", "errno %d", errno))
		return;
	ta.ind_tbl = wqs;
	t = ibv_create_rwq_ind_table(s->ctx, &ta);
	if (!check(t != NULL, "RSS: an indirection table of 2", "errno %d", errno))
		return;
	rc = ibv_destroy_wq(wqs[0]);
	check(rc == EBUSY, "RSS: a WQ in a table is not destroyed (EBUSY)", "rc %d", rc);
	qa.rwq_ind_tbl = t;
	qa.rx_hash_conf.rx_hash_key_len = 16;
	check(!ibv_create_qp_ex(s->ctx, &qa) && errno == EINVAL,
	      "RSS: a key that is not 40 bytes (EINVAL)", "errno %d", errno);
	qa.rx_hash_conf.rx_hash_key_len = 40;
	qa.rx_hash_conf.rx_hash_fields_mask |= IBV_RX_HASH_SRC_IPV6;
	check(!ibv_create_qp_ex(s->ctx, &qa) && errno == EINVAL,
	      "RSS: IPv4 and IPv6 fields together (EINVAL)", "errno %d", errno);
	qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_IPSEC_SPI;
	check(!ibv_create_qp_ex(s->ctx, &qa) && errno == EOPNOTSUPP,
	      "RSS: hashing the IPsec SPI (EOPNOTSUPP)", "errno %d", errno);
	qa.rx_hash_conf.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4;
	qp = ibv_create_qp_ex(s->ctx, &qa);
	if (!check(qp != NULL, "RSS: an RSS QP", "errno %d", errno))
		return;
	rc = ibv_destroy_rwq_ind_table(t);
	check(rc == EBUSY, "RSS: the table of an RSS QP is not destroyed (EBUSY)", "rc %d", rc);
	check(!ibv_destroy_qp(qp) && !ibv_destroy_rwq_ind_table(t) && !ibv_destroy_wq(wqs[0]) &&
		  !ibv_destroy_wq(wqs[1]),
	      "RSS: the QP, then the table, then its WQs go", "errno %d", errno);
}

void test_raw(void)
{
	struct ibv_qp_init_attr ua = {
	    .qp_type = IBV_QPT_UD,
	    .cap = {.max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1}};
	struct udp_flow fa;
	struct side s;
	struct ibv_qp *ud, *qp;
	uint8_t mac[6];

	side_open(&s, IBV_ACCESS_LOCAL_WRITE);
	own_mac(s.ctx, mac);
	udp_flow(&fa, mac);
	ua.send_cq = ua.recv_cq = s.cq;
	ud = ibv_create_qp(s.pd, &ua);
	if (!ud)
		die("UD QP");
	check(!ibv_create_flow(ud, &fa.attr) && errno == EOPNOTSUPP,
	      "raw: a flow on a UD QP of a RoCE port (EOPNOTSUPP)", "errno %d", errno);
	ibv_destroy_qp(ud);

	qp = raw_qp(&s);
	s.qp = qp;
	fa.eth.size = sizeof(fa.eth) - 8;
	check(!ibv_create_flow(qp, &fa.attr) && errno == EINVAL,
	      "raw: a spec shorter than its type (EINVAL)", "errno %d", errno);
	fa.eth.size = sizeof(fa.eth);
	fa.eth.type = IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER;
	check(!ibv_create_flow(qp, &fa.attr) && errno == EOPNOTSUPP,
	      "raw: inner headers (EOPNOTSUPP)", "errno %d", errno);
	raw_traffic_checks(&s, qp, mac);
	rss_checks(&s);
	side_close(&s);
}
