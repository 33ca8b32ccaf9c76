/* SPDX-License-Identifier: MIT */
/*
 * Leaves and the spine: leaf groups (leaf_size, nodes[].leaf), planes
 * (several netdevs per node), per-netdev MTU, subnets learned or derived,
 * gateways, default IPv4/IPv6 addresses, the region's leaves[], uplinks
 * sized by oversubscription, and the errors of each rule.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config_fixture.h"

#include "fabric/gid.h"
#include "fabric_fixture.h"

static const char *addr_text(const struct vfab_config *cfg, uint32_t node, const char *dev,
			     uint32_t i)
{
	int d = vfab_config_netdev_index(&cfg->nodes[node], dev);

	assert_true(d >= 0);
	assert_true(i < cfg->nodes[node].netdevs[d].naddrs);
	return cfg->nodes[node].netdevs[d].addrs[i].text;
}

static void test_leaf_size(void **state)
{
	static const char yaml[] = "nodes: [{id: n0}, {id: n1}, {id: n2}, {id: n3}, {id: n4}]\n"
				   "fabric:\n"
				   "  leaf_size: 2\n"
				   "  inter_node: {bandwidth_gbps: 100, oversubscription: 4}\n"
				   "  spine: {latency_us: 3}\n";
	struct vfab_config cfg;
	struct vfab_region *r;
	const struct vfab_leaf *l1;

	(void)state;
	load_ok(yaml, &cfg);
	assert_int_equal(cfg.ngroups, 3);
	assert_int_equal(cfg.nleaves, 3);
	assert_true(cfg.spine);
	assert_int_equal(cfg.nodes[3].group, 1);
	assert_int_equal(cfg.nodes[4].group, 2);
	assert_string_equal(cfg.leaves[1].name, "leaf1");
	assert_string_equal(cfg.leaves[1].ipv4.text, "198.18.1.0/24");
	assert_string_equal(cfg.leaves[1].ipv4_gw.text, "198.18.1.254/24");
	/* Default addresses count from 1 within each leaf. */
	assert_string_equal(addr_text(&cfg, 1, "eth0", 0), "198.18.0.2/24");
	assert_string_equal(addr_text(&cfg, 2, "eth0", 0), "198.18.1.1/24");
	assert_string_equal(addr_text(&cfg, 4, "eth0", 0), "198.18.2.1/24");
	vfab_config_free(&cfg);
	assert_null(cfg.leaves);

	r = fixture_fill(yaml, NULL);
	assert_int_equal(r->nleaves, 3);
	assert_true(r->spine.present);
	assert_int_equal(r->spine.ipv4_net, htonl(0xc6120000u));
	assert_int_equal(r->spine.ipv4_prefix, 15);
	assert_false(r->spine.has_ipv6);
	l1 = &r->leaves[1];
	assert_int_equal(l1->group, 1);
	assert_int_equal(l1->nmembers, 2);
	assert_string_equal(l1->bridge, "vfbr1");
	assert_int_equal(l1->ipv4_gw, htonl(0xc61201feu));
	/* Two 100 Gb/s ports below it, 4:1 oversubscribed: a 50 Gb/s uplink. */
	assert_int_equal(l1->node_capacity_bps, 200000000000ull);
	assert_int_equal(l1->oversub_milli, 4000);
	assert_int_equal(r->links[l1->uplink].rate_bps, 50000000000ull);
	assert_int_equal(r->links[l1->downlink].rate_bps, 50000000000ull);
	assert_int_equal(r->links[l1->uplink].latency_ns + r->links[l1->downlink].latency_ns, 3000);
	assert_string_equal(r->links[l1->downlink].name, "leaf1/down");
	assert_int_equal(r->nodes[2].group, 1);
	assert_int_equal(fixture_port(r, 2, 0, NULL)->segment, 1);
	assert_int_equal(fixture_port(r, 2, 0, NULL)->subnet, htonl(0xc6120100u));
	assert_int_equal(r->nodes[2].netdevs[0].leaf, 1);
	/* 5 ports x 2 + 5 loopbacks + 3 leaves x 2 */
	assert_int_equal(r->nlinks, 21);
	fixture_region_free(r);
}

static void test_explicit_leaf(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("nodes:\n"
		"  - {id: a, leaf: 1}\n"
		"  - {id: b}\n"
		"  - {id: c, leaf: 1}\n"
		"  - {id: d, leaf: 0}\n"
		"fabric: {leaf_size: 1}\n",
		&cfg);
	/* An explicit leaf wins over leaf_size (b: index 1 / 1 = leaf 1). */
	assert_int_equal(cfg.nodes[0].group, 1);
	assert_int_equal(cfg.nodes[1].group, 1);
	assert_int_equal(cfg.nodes[3].group, 0);
	assert_int_equal(cfg.nleaves, 2);
	assert_int_equal(cfg.leaves[1].nmembers, 3);
	assert_string_equal(addr_text(&cfg, 2, "eth0", 0), "198.18.1.3/24");
	assert_string_equal(addr_text(&cfg, 3, "eth0", 0), "198.18.0.1/24");
	vfab_config_free(&cfg);

	load_fails("nodes:\n  - {id: a, leaf: 2}\n  - {id: b}\n",
		   "2: nodes[0].leaf: leaf 1 has no nodes: leaves are numbered from 0 without "
		   "gaps");
	load_fails("nodes: [{id: a, leaf: 64}]\n", "1: nodes[0].leaf: 64 is out of range 0..63");
	load_fails("nodes: [{id: a}]\nfabric: {leaf_size: 0}\n",
		   "2: fabric.leaf_size: 0 is out of range 1..64");
}

static void test_planes_and_mtu(void **state)
{
	static const char yaml[] = "nodes:\n"
				   "  - id: a\n"
				   "    hcas: 2\n"
				   "    netdevs:\n"
				   "      - {name: eth1, mtu: 4200}\n"
				   "      - {name: eth0, mtu: 1500}\n"
				   "  - id: b\n"
				   "    hcas: 2\n"
				   "fabric: {mtu: 9000}\n";
	struct vfab_config cfg;
	struct vfab_region *r;
	const struct vfab_port *p;

	(void)state;
	load_ok(yaml, &cfg);
	assert_int_equal(cfg.nodes[0].nhcas, 2);
	assert_string_equal(cfg.nodes[0].hcas[1].name, "mlx5_1");
	assert_string_equal(cfg.nodes[0].hcas[1].netdev[0], "eth1");
	assert_int_equal(cfg.nodes[0].netdevs[0].mtu, 1500);
	assert_int_equal(cfg.nodes[0].netdevs[1].mtu, 4200);
	assert_int_equal(cfg.nodes[1].netdevs[1].mtu, 9000);
	assert_int_equal(cfg.nleaves, 2);
	assert_string_equal(cfg.leaves[0].name, "leaf0-eth0");
	assert_string_equal(cfg.leaves[1].name, "leaf0-eth1");
	/* Every netdev gets a default address in its own leaf's subnet. */
	assert_string_equal(addr_text(&cfg, 0, "eth1", 0), "198.18.1.1/24");
	assert_string_equal(addr_text(&cfg, 1, "eth1", 0), "198.18.1.2/24");
	assert_string_equal(addr_text(&cfg, 1, "eth0", 0), "198.18.0.2/24");
	vfab_config_free(&cfg);

	r = fixture_fill(yaml, NULL);
	p = fixture_port(r, 0, 0, NULL);
	assert_int_equal(p->netdev_mtu, 1500);
	assert_int_equal(p->active_mtu, 3);
	p = fixture_port(r, 0, 1, NULL);
	assert_string_equal(p->netdev, "eth1");
	assert_int_equal(p->netdev_mtu, 4200);
	assert_int_equal(p->active_mtu, 5);
	assert_int_equal(p->segment, 1);
	assert_int_equal(r->leaves[0].mtu, 9000);
	assert_int_equal(r->nodes[0].nnetdevs, 2);
	assert_int_equal(r->nodes[0].netdevs[1].mtu, 4200);
	assert_int_equal(r->nodes[0].netdevs[1].mac[5], 0x01);
	fixture_region_free(r);

	load_fails("nodes:\n  - id: a\n    netdevs:\n      - {name: eth1}\n      - {name: eth1}\n",
		   "5: nodes[0].netdevs[1].name: eth1 is listed twice (also netdevs[0])");
	load_fails("nodes:\n  - id: a\n    netdevs: [{mtu: 1500}]\n",
		   "3: nodes[0].netdevs[0].name: missing");
	load_fails("nodes:\n  - id: a\n    netdevs: [{name: eth0, mtu: 100}]\n",
		   "3: nodes[0].netdevs[0].mtu: 100 is out of range 1280..9000");
	load_fails("nodes:\n  - id: a\n    hcas: 9\n", "3: nodes[0].hcas: 9 is out of range 0..8");
}

static void test_ipv6_defaults(void **state)
{
	static const char yaml[] = "nodes: [{id: a}, {id: b, leaf: 1}]\n"
				   "fabric: {ipv6: true}\n";
	struct vfab_config cfg;
	struct vfab_region *r;
	const struct vfab_port *p;
	uint8_t want[16];

	(void)state;
	load_ok(yaml, &cfg);
	assert_true(cfg.ipv6);
	assert_string_equal(addr_text(&cfg, 0, "eth0", 0), "198.18.0.1/24");
	assert_string_equal(addr_text(&cfg, 0, "eth0", 1), "fd00:198:18::1/64");
	assert_string_equal(addr_text(&cfg, 1, "eth0", 1), "fd00:198:18:1::1/64");
	assert_string_equal(cfg.leaves[1].ipv6_gw.text, "fd00:198:18:1:ffff:ffff:ffff:fffe/64");
	vfab_config_free(&cfg);

	r = fixture_fill(yaml, NULL);
	p = fixture_port(r, 0, 0, NULL);
	/* Defaults in the kernel's enumeration order: IPv4, then IPv6. */
	assert_int_equal(p->ngids, 6);
	assert_true(vfab_gid_is_v4mapped(p->gids[3].raw));
	assert_int_equal(p->gids[3].prefix, 96 + 24);
	inet_pton(AF_INET6, "fd00:198:18::1", want);
	assert_memory_equal(p->gids[5].raw, want, 16);
	assert_int_equal(p->gids[5].prefix, 64);
	assert_int_equal(p->gids[0].prefix, 64);
	assert_int_equal(r->leaves[1].ipv6_prefix, 64);
	assert_int_equal(r->leaves[1].ipv6_gw[15], 0xfe);
	assert_true(r->spine.has_ipv6);
	assert_int_equal(r->spine.ipv6_prefix, 63);
	fixture_region_free(r);

	load_ok("nodes: [{id: a}, {id: b, leaf: 1}]\n"
		"fabric: {ipv6: true, ipv6_prefix: \"fd12:3456::/32\"}\n",
		&cfg);
	assert_string_equal(addr_text(&cfg, 1, "eth0", 1), "fd12:3456:0:1::1/64");
	vfab_config_free(&cfg);
	load_fails("nodes: [{id: a}]\nfabric: {ipv6_prefix: \"fd00::/96\"}\n",
		   "2: fabric.ipv6_prefix: prefix length must be 16..64 (leaves get /64s)");
	load_fails("nodes: [{id: a}]\nfabric: {ipv6_prefix: 198.18.0.0/24}\n",
		   "2: fabric.ipv6_prefix: expected an IPv6 network such as fd00:198:18::/48");
	load_fails("nodes: [{id: a}]\nfabric: {ipv6_prefix: \"fd00::1/48\"}\n",
		   "2: fabric.ipv6_prefix: fd00::1/48 has host bits set");
	load_fails("nodes: [{id: a}]\nfabric: {ipv6: yes}\n",
		   "2: fabric.ipv6: expected true or false, got 'yes'");
}

/* The GID table follows the configured order, families mixed. */
static void test_configured_order(void **state)
{
	struct vfab_region *r =
	    fixture_fill("nodes:\n"
			 "  - id: a\n"
			 "    netdevs:\n"
			 "      - name: eth0\n"
			 "        addresses: [\"fd00:1::1/64\", 198.18.0.1/24]\n",
			 NULL);
	const struct vfab_port *p = fixture_port(r, 0, 0, NULL);

	(void)state;
	assert_int_equal(p->ngids, 6);
	assert_int_equal(p->gids[2].raw[0], 0xfd);
	assert_true(vfab_gid_is_v4mapped(p->gids[5].raw));
	assert_int_equal(p->gids[5].type, VFAB_GID_ROCE_V2);
	assert_int_equal(p->gids[5].index, 5);
	/* The IPv6 address names the leaf's IPv6 prefix without fabric.ipv6. */
	assert_int_equal(r->leaves[0].ipv6_prefix, 64);
	fixture_region_free(r);
}

static void test_subnet_rules(void **state)
{
	(void)state;
	load_fails("nodes:\n"
		   "  - {id: a, addresses: [198.18.0.1/24]}\n"
		   "  - {id: b, addresses: [198.18.5.1/24]}\n",
		   "3: nodes[1].addresses: 198.18.5.1/24 is not in 198.18.0.0/24, the subnet of "
		   "leaf0 (one IPv4 subnet per leaf)");
	load_fails("nodes:\n"
		   "  - {id: a, addresses: [198.18.0.1/23]}\n"
		   "  - {id: b, leaf: 1, addresses: [198.18.1.1/24]}\n",
		   "3: nodes[1].addresses: 198.18.1.1/24 overlaps 198.18.0.0/23, the subnet of "
		   "leaf0: every leaf (L2 segment) needs its own subnet");
	load_fails("nodes:\n"
		   "  - {id: a, addresses: [\"fd00::1/64\"]}\n"
		   "  - {id: b, leaf: 1, addresses: [\"fd00::2/64\"]}\n",
		   "3: nodes[1].addresses: fd00::2/64 overlaps fd00::/64, the subnet of leaf0: "
		   "every leaf (L2 segment) needs its own subnet");
	load_fails("nodes:\n"
		   "  - {id: a, addresses: [198.18.0.254/24]}\n"
		   "  - {id: b, leaf: 1}\n",
		   "2: nodes[0].addresses: 198.18.0.254/24 is the spine's address on leaf0 (its "
		   "gateway)");
	load_fails("nodes:\n"
		   "  - {id: a, addresses: [198.18.0.0/31]}\n"
		   "  - {id: b, leaf: 1}\n",
		   "2: nodes[0].addresses: 198.18.0.0/31: a /31 subnet leaves no address for the "
		   "spine (leaf0 needs a gateway)");
	load_fails("nodes:\n"
		   "  - id: a\n"
		   "    netdevs:\n"
		   "      - {name: eth0, addresses: [198.18.0.1/24, 198.18.9.1/24]}\n",
		   "4: nodes[0].netdevs[0].addresses: 198.18.9.1/24 is not in 198.18.0.0/24, the "
		   "subnet of leaf0 (one IPv4 subnet per leaf)");
	/* With a spine each leaf loses one address to the gateway. */
	load_fails("nodes: [{id: a}, {id: b}, {id: c, leaf: 1}]\n"
		   "fabric: {subnet: 198.18.0.0/30}\n",
		   "2: fabric.subnet: 198.18.0.0/30 has room for 1 nodes, leaf0 has 2");
}

/* A leaf whose first address is explicit; defaults of other nodes follow it. */
static void test_learned_subnet(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("nodes:\n"
		"  - {id: a, addresses: [198.18.7.10/24]}\n"
		"  - {id: b}\n"
		"  - {id: c, leaf: 1}\n",
		&cfg);
	assert_string_equal(cfg.leaves[0].ipv4.text, "198.18.7.0/24");
	assert_string_equal(addr_text(&cfg, 1, "eth0", 0), "198.18.7.2/24");
	/* leaf1's natural block is 198.18.1.0/24: still free. */
	assert_string_equal(addr_text(&cfg, 2, "eth0", 0), "198.18.1.1/24");
	vfab_config_free(&cfg);

	load_ok("nodes:\n"
		"  - {id: a}\n"
		"  - {id: c, leaf: 1, addresses: [198.18.0.9/24]}\n",
		&cfg);
	/* leaf0's natural block is taken by leaf1's address: the next one is used. */
	assert_string_equal(cfg.leaves[0].ipv4.text, "198.18.1.0/24");
	assert_string_equal(addr_text(&cfg, 0, "eth0", 0), "198.18.1.1/24");
	vfab_config_free(&cfg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_leaf_size),	     cmocka_unit_test(test_explicit_leaf),
	    cmocka_unit_test(test_planes_and_mtu),   cmocka_unit_test(test_ipv6_defaults),
	    cmocka_unit_test(test_configured_order), cmocka_unit_test(test_subnet_rules),
	    cmocka_unit_test(test_learned_subnet),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
