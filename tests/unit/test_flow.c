/* SPDX-License-Identifier: MIT */
/*
 * Raw Ethernet flow rules and checksum offloads (provider/vfab_flow.c):
 * specs as ibv_create_flow lays them out compiled or refused, frames of
 * every layer matched and missed byte for byte under their masks, VLAN
 * tags, VXLAN VNIs, the default and sniffer rules, checksums against a
 * textbook IPv4 header and the receive side's verdict, and the RSS hash
 * against Microsoft's published Toeplitz values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_flow.h"

#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

static const uint8_t own_mac[6] = {0x02, 0x76, 0x66, 0x5f, 0x01, 0x00};
static const uint8_t peer_mac[6] = {0x02, 0x76, 0x66, 0x5f, 0x00, 0x00};
static const uint8_t mc_mac[6] = {0x01, 0x50, 0x56, 0x19, 0x20, 0xa7};

/* An ibv_flow_attr followed by its specs, as a program builds it. */
struct attr_buf {
	struct ibv_flow_attr attr;
	uint8_t specs[512];
	size_t used;
};

static void attr_init(struct attr_buf *b, enum ibv_flow_attr_type type)
{
	memset(b, 0, sizeof(*b));
	b->attr.type = type;
	b->attr.port = 1;
	b->attr.size = sizeof(b->attr);
}

static void attr_add(struct attr_buf *b, const void *spec, uint16_t size)
{
	memcpy(b->specs + b->used, spec, size);
	b->used += size;
	b->attr.num_of_specs++;
	b->attr.size = (uint16_t)(b->attr.size + size);
}

static void add_eth(struct attr_buf *b, const uint8_t *dst, uint16_t ether_type, uint16_t vlan)
{
	struct ibv_flow_spec_eth s;

	memset(&s, 0, sizeof(s));
	s.type = IBV_FLOW_SPEC_ETH;
	s.size = sizeof(s);
	if (dst) {
		memcpy(s.val.dst_mac, dst, 6);
		memset(s.mask.dst_mac, 0xff, 6);
	}
	if (ether_type) {
		s.val.ether_type = htons(ether_type);
		s.mask.ether_type = 0xffff;
	}
	if (vlan) {
		s.val.vlan_tag = htons(vlan);
		s.mask.vlan_tag = htons(0x0fff); /* the VLAN id, any priority */
	}
	attr_add(b, &s, sizeof(s));
}

static void add_ipv4(struct attr_buf *b, const char *dst)
{
	struct ibv_flow_spec_ipv4_ext s;

	memset(&s, 0, sizeof(s));
	s.type = IBV_FLOW_SPEC_IPV4_EXT;
	s.size = sizeof(s);
	inet_pton(AF_INET, dst, &s.val.dst_ip);
	s.mask.dst_ip = 0xffffffff;
	attr_add(b, &s, sizeof(s));
}

static void add_l4(struct attr_buf *b, enum ibv_flow_spec_type type, uint16_t dport)
{
	struct ibv_flow_spec_tcp_udp s;

	memset(&s, 0, sizeof(s));
	s.type = type;
	s.size = sizeof(s);
	s.val.dst_port = htons(dport);
	s.mask.dst_port = 0xffff;
	attr_add(b, &s, sizeof(s));
}

/* A UDP/IPv4 frame (optionally VLAN tagged) with payload bytes; its length. */
static size_t udp4_frame(uint8_t *f, const uint8_t *dst, uint16_t vlan, const char *dip,
			 uint16_t dport, size_t payload)
{
	size_t at = 12;
	uint16_t tot = (uint16_t)(20 + 8 + payload), ulen = (uint16_t)(8 + payload);

	memcpy(f, dst, 6);
	memcpy(f + 6, peer_mac, 6);
	if (vlan) {
		f[at++] = 0x81;
		f[at++] = 0x00;
		f[at++] = (uint8_t)(vlan >> 8);
		f[at++] = (uint8_t)vlan;
	}
	f[at++] = 0x08;
	f[at++] = 0x00;
	memset(f + at, 0, 28);
	f[at] = 0x45;
	f[at + 2] = (uint8_t)(tot >> 8);
	f[at + 3] = (uint8_t)tot;
	f[at + 6] = 0x40; /* don't fragment */
	f[at + 8] = 64;
	f[at + 9] = 17;
	inet_pton(AF_INET, "198.18.0.1", f + at + 12);
	inet_pton(AF_INET, dip, f + at + 16);
	f[at + 20] = 0x30;
	f[at + 21] = 0x39; /* source port 12345 */
	f[at + 22] = (uint8_t)(dport >> 8);
	f[at + 23] = (uint8_t)dport;
	f[at + 24] = (uint8_t)(ulen >> 8);
	f[at + 25] = (uint8_t)ulen;
	for (size_t i = 0; i < payload; i++)
		f[at + 28 + i] = (uint8_t)(i * 7 + 1);
	return at + 28 + payload;
}

static bool matches(struct attr_buf *b, const uint8_t *frame, size_t len)
{
	struct vfab_flow_rule rule;
	struct vfab_frame f;

	assert_int_equal(vfab_flow_compile(&b->attr, &rule), 0);
	assert_true(vfab_frame_parse(frame, len, &f));
	return vfab_flow_match(&rule, &f, own_mac);
}

static void test_compile_refusals(void **state)
{
	struct vfab_flow_rule rule;
	struct attr_buf b;
	struct ibv_flow_spec_eth eth;

	(void)state;
	/* A spec shorter than its type's structure. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	memset(&eth, 0, sizeof(eth));
	eth.type = IBV_FLOW_SPEC_ETH;
	eth.size = sizeof(eth) - 4;
	attr_add(&b, &eth, sizeof(eth));
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EINVAL);
	/* Inner headers and egress rules are not steered. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	eth.type = IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER;
	eth.size = sizeof(eth);
	attr_add(&b, &eth, sizeof(eth));
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EOPNOTSUPP);
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	b.attr.flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EOPNOTSUPP);
	/* Default and sniffer rules take no specs; unknown types and flags are errors. */
	attr_init(&b, IBV_FLOW_ATTR_SNIFFER);
	add_eth(&b, mc_mac, 0, 0);
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EINVAL);
	attr_init(&b, (enum ibv_flow_attr_type)7);
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EINVAL);
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	b.attr.flags = 1u << 8;
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), EINVAL);
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	b.attr.flags = IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), 0);
}

static void test_eth_ip_udp(void **state)
{
	uint8_t frame[256];
	size_t len = udp4_frame(frame, own_mac, 0, "198.18.0.2", 4791, 40);
	struct attr_buf b;

	(void)state;
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	add_eth(&b, own_mac, 0x0800, 0);
	add_ipv4(&b, "198.18.0.2");
	add_l4(&b, IBV_FLOW_SPEC_UDP, 4791);
	assert_true(matches(&b, frame, len));
	/* Each layer missed on its own. */
	len = udp4_frame(frame, peer_mac, 0, "198.18.0.2", 4791, 40);
	assert_false(matches(&b, frame, len));
	len = udp4_frame(frame, own_mac, 0, "198.18.0.3", 4791, 40);
	assert_false(matches(&b, frame, len));
	len = udp4_frame(frame, own_mac, 0, "198.18.0.2", 4792, 40);
	assert_false(matches(&b, frame, len));
	/* A TCP spec never takes a UDP datagram. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	add_l4(&b, IBV_FLOW_SPEC_TCP, 4791);
	len = udp4_frame(frame, own_mac, 0, "198.18.0.2", 4791, 40);
	assert_false(matches(&b, frame, len));
	/* No spec: everything. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	assert_true(matches(&b, frame, len));
}

static void test_vlan_and_masks(void **state)
{
	uint8_t frame[256];
	size_t len = udp4_frame(frame, own_mac, 0xa00c, "198.18.0.2", 9, 8);
	struct attr_buf b;

	(void)state;
	/* The ether type after the tag; the VLAN id under its mask, priority aside. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	add_eth(&b, NULL, 0x0800, 0x000c);
	assert_true(matches(&b, frame, len));
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	add_eth(&b, NULL, 0x0800, 0x000d);
	assert_false(matches(&b, frame, len));
	/* Bits of a value outside its mask do not count. */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	{
		struct ibv_flow_spec_eth s;

		memset(&s, 0, sizeof(s));
		s.type = IBV_FLOW_SPEC_ETH;
		s.size = sizeof(s);
		memcpy(s.val.dst_mac, own_mac, 6);
		s.val.dst_mac[5] = 0x7f;
		memset(s.mask.dst_mac, 0xff, 5);
		attr_add(&b, &s, sizeof(s));
	}
	assert_true(matches(&b, frame, len));
}

static void test_ipv6_tcp_and_vxlan(void **state)
{
	uint8_t f[128];
	struct attr_buf b;
	struct ibv_flow_spec_ipv6 v6;
	struct ibv_flow_spec_tunnel vx;
	size_t len;

	(void)state;
	memset(f, 0, sizeof(f));
	memcpy(f, own_mac, 6);
	memcpy(f + 6, peer_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60 | 0x0a; /* traffic class 0xa1, flow label 0x12345 */
	f[15] = 0x11;
	f[16] = 0x23;
	f[17] = 0x45;
	f[19] = 20; /* payload length */
	f[20] = 6;  /* TCP */
	f[21] = 64;
	inet_pton(AF_INET6, "fd00::1", f + 22);
	inet_pton(AF_INET6, "fd00::2", f + 38);
	f[54 + 2] = 0x13;
	f[54 + 3] = 0x88; /* port 5000 */
	len = 54 + 20;
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	memset(&v6, 0, sizeof(v6));
	v6.type = IBV_FLOW_SPEC_IPV6;
	v6.size = sizeof(v6);
	inet_pton(AF_INET6, "fd00::2", v6.val.dst_ip);
	memset(v6.mask.dst_ip, 0xff, 16);
	v6.val.flow_label = htonl(0x12345);
	v6.mask.flow_label = htonl(0xfffff);
	v6.val.traffic_class = 0xa1;
	v6.mask.traffic_class = 0xff;
	v6.val.next_hdr = 6;
	v6.mask.next_hdr = 0xff;
	attr_add(&b, &v6, sizeof(v6));
	add_l4(&b, IBV_FLOW_SPEC_TCP, 5000);
	assert_true(matches(&b, f, len));
	f[17] = 0x46; /* another flow label */
	assert_false(matches(&b, f, len));

	/* VXLAN: UDP port 4789, the I flag, the VNI. */
	len = udp4_frame(f, own_mac, 0, "198.18.0.2", 4789, 8);
	f[42] = 0x08;
	f[46] = 0x76;
	f[47] = 0xad;
	f[48] = 0xf1; /* VNI 7777777 */
	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	memset(&vx, 0, sizeof(vx));
	vx.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
	vx.size = sizeof(vx);
	vx.val.tunnel_id = htonl(7777777);
	vx.mask.tunnel_id = 0xffffffff;
	attr_add(&b, &vx, sizeof(vx));
	assert_true(matches(&b, f, len));
	f[48] = 0xf2;
	assert_false(matches(&b, f, len));
}

static void test_default_rules_and_drop(void **state)
{
	uint8_t frame[128];
	size_t len;
	struct attr_buf b;
	struct ibv_flow_spec_action_drop drop = {.type = IBV_FLOW_SPEC_ACTION_DROP,
						 .size = sizeof(drop)};
	struct vfab_flow_rule rule;

	(void)state;
	attr_init(&b, IBV_FLOW_ATTR_MC_DEFAULT);
	len = udp4_frame(frame, mc_mac, 0, "198.18.0.2", 9, 8);
	assert_true(matches(&b, frame, len));
	len = udp4_frame(frame, own_mac, 0, "198.18.0.2", 9, 8);
	assert_false(matches(&b, frame, len));
	attr_init(&b, IBV_FLOW_ATTR_ALL_DEFAULT);
	assert_true(matches(&b, frame, len));
	len = udp4_frame(frame, peer_mac, 0, "198.18.0.2", 9, 8);
	assert_false(matches(&b, frame, len));
	attr_init(&b, IBV_FLOW_ATTR_SNIFFER);
	assert_true(matches(&b, frame, len));

	attr_init(&b, IBV_FLOW_ATTR_NORMAL);
	add_eth(&b, peer_mac, 0, 0);
	attr_add(&b, &drop, sizeof(drop));
	assert_int_equal(vfab_flow_compile(&b.attr, &rule), 0);
	assert_true(rule.drop);
	assert_int_equal(rule.nspecs, 1);
}

static void test_checksums(void **state)
{
	/* The textbook IPv4 header, whose checksum is 0xb861. */
	static const uint8_t hdr[20] = {0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
					0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7};
	uint8_t f[14 + 0x73];
	struct vfab_frame pf;
	size_t len;

	(void)state;
	memset(f, 0, sizeof(f));
	memcpy(f, own_mac, 6);
	f[12] = 0x08;
	memcpy(f + 14, hdr, sizeof(hdr));
	f[34 + 4] = 0x00;
	f[34 + 5] = 0x73 - 20; /* UDP length */
	vfab_frame_fill_csum(f, sizeof(f));
	assert_int_equal(f[24], 0xb8);
	assert_int_equal(f[25], 0x61);
	assert_true(vfab_frame_parse(f, sizeof(f), &pf));
	assert_true(vfab_frame_csum_ok(&pf));

	len = udp4_frame(f, own_mac, 0, "198.18.0.2", 9, 33);
	vfab_frame_fill_csum(f, len);
	assert_true(vfab_frame_parse(f, len, &pf));
	assert_true(vfab_frame_csum_ok(&pf));
	f[len - 1] ^= 1; /* a flipped payload bit */
	assert_false(vfab_frame_csum_ok(&pf));
	f[40] = f[41] = 0; /* UDP without a checksum is fine */
	assert_true(vfab_frame_csum_ok(&pf));
	f[24] ^= 0x10; /* a broken IPv4 header is not */
	assert_false(vfab_frame_csum_ok(&pf));
	/* Short or non-IP frames are left alone and never vouched for. */
	vfab_frame_fill_csum(f, 20);
	assert_false(vfab_frame_parse(f, 10, &pf));
}

/* A TCP frame between these addresses and ports (IPv4 or IPv6 by af). */
static size_t tcp_frame(uint8_t *f, int af, const char *src, uint16_t sport, const char *dst,
			uint16_t dport)
{
	size_t l3 = 14, l4;

	memset(f, 0, 128);
	memcpy(f, own_mac, 6);
	if (af == AF_INET) {
		f[12] = 0x08;
		f[l3] = 0x45;
		f[l3 + 3] = 40;
		f[l3 + 9] = 6;
		inet_pton(AF_INET, src, f + l3 + 12);
		inet_pton(AF_INET, dst, f + l3 + 16);
		l4 = l3 + 20;
	} else {
		f[12] = 0x86;
		f[13] = 0xdd;
		f[l3] = 0x60;
		f[l3 + 5] = 20;
		f[l3 + 6] = 6;
		inet_pton(AF_INET6, src, f + l3 + 8);
		inet_pton(AF_INET6, dst, f + l3 + 24);
		l4 = l3 + 40;
	}
	f[l4] = (uint8_t)(sport >> 8);
	f[l4 + 1] = (uint8_t)sport;
	f[l4 + 2] = (uint8_t)(dport >> 8);
	f[l4 + 3] = (uint8_t)dport;
	f[l4 + 12] = 0x50;
	return l4 + 20;
}

/* Microsoft's RSS verification values ("Verifying the RSS Hash Calculation"). */
static void test_rss_toeplitz(void **state)
{
	static const uint8_t key[40] = {0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67,
					0x25, 0x3d, 0x43, 0xa3, 0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb,
					0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3, 0x80, 0x30,
					0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
	const uint64_t ip4 = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4,
		       ip6 = IBV_RX_HASH_SRC_IPV6 | IBV_RX_HASH_DST_IPV6,
		       tcp = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP;
	uint8_t frame[128];
	struct vfab_frame f;
	size_t len;

	(void)state;
	len = tcp_frame(frame, AF_INET, "66.9.149.187", 2794, "161.142.100.80", 1766);
	assert_true(vfab_frame_parse(frame, len, &f));
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip4, &f), 0x323e8fc2);
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip4 | tcp, &f), 0x51ccc178);
	len = tcp_frame(frame, AF_INET, "199.92.111.2", 14230, "65.69.140.83", 4739);
	assert_true(vfab_frame_parse(frame, len, &f));
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip4, &f), 0xd718262a);
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip4 | tcp, &f), 0xc626b0ea);
	/* Fields of another IP version or L4 protocol: nothing to hash. */
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip6, &f), 0);
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip4 | IBV_RX_HASH_DST_PORT_UDP, &f), 0);
	len = tcp_frame(frame, AF_INET6, "3ffe:2501:200:1fff::7", 2794, "3ffe:2501:200:3::1", 1766);
	assert_true(vfab_frame_parse(frame, len, &f));
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip6, &f), 0x2cc18cd5);
	assert_int_equal(vfab_rss_hash(key, sizeof(key), ip6 | tcp, &f), 0x40207d3d);
}

static void test_rss_check(void **state)
{
	uint8_t key[40] = {0};
	struct ibv_rx_hash_conf c = {.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ,
				     .rx_hash_key_len = 40,
				     .rx_hash_key = key,
				     .rx_hash_fields_mask =
					 IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_PORT_UDP};

	(void)state;
	assert_int_equal(vfab_rss_check(&c), 0);
	c.rx_hash_key_len = 16;
	assert_int_equal(vfab_rss_check(&c), EINVAL);
	c.rx_hash_key_len = 40;
	c.rx_hash_fields_mask |= IBV_RX_HASH_DST_IPV6;
	assert_int_equal(vfab_rss_check(&c), EINVAL);
	c.rx_hash_fields_mask = IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_UDP;
	assert_int_equal(vfab_rss_check(&c), EINVAL);
	c.rx_hash_fields_mask = IBV_RX_HASH_IPSEC_SPI;
	assert_int_equal(vfab_rss_check(&c), EOPNOTSUPP);
	c.rx_hash_fields_mask = IBV_RX_HASH_SRC_IPV4;
	c.rx_hash_function = 2;
	assert_int_equal(vfab_rss_check(&c), EOPNOTSUPP);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_compile_refusals),
	    cmocka_unit_test(test_eth_ip_udp),
	    cmocka_unit_test(test_vlan_and_masks),
	    cmocka_unit_test(test_ipv6_tcp_and_vxlan),
	    cmocka_unit_test(test_default_rules_and_drop),
	    cmocka_unit_test(test_checksums),
	    cmocka_unit_test(test_rss_toeplitz),
	    cmocka_unit_test(test_rss_check),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
