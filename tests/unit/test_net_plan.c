/* SPDX-License-Identifier: MIT */
/*
 * The network plan of a node (netns/net_plan.c) for the shipped configs and
 * a few edge cases: which bridge each veth joins, its MTU and MAC, the
 * addresses in configured order, and the route towards the spine.
 */
#include <sys/mman.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <arpa/inet.h>
#include <cmocka.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/fabric_net.h"

struct fixture {
	struct vfab_region *r;
	struct vfab_config cfg;
};

static struct fixture *load(const char *file, const char *yaml)
{
	struct fixture *f = calloc(1, sizeof(*f));
	char path[512], err[512] = "";
	int ret;

	assert_non_null(f);
	/* Page-aligned as the region's layout needs (calloc is not). */
	f->r = mmap(NULL, sizeof(*f->r), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	assert_true(f->r != MAP_FAILED);
	assert_non_null(f->r);
	if (file) {
		snprintf(path, sizeof(path), "%s/%s", VFAB_CONFIGS_DIR, file);
		ret = vfab_config_load_file(path, &f->cfg, err, sizeof(err));
	} else {
		ret = vfab_config_load_string(yaml, "plan.yaml", &f->cfg, err, sizeof(err));
	}
	if (ret)
		fail_msg("config: %s", err);
	snprintf(f->r->fabric, sizeof(f->r->fabric), "tplan");
	assert_int_equal(vfab_topology_fill(f->r, &f->cfg), 0);
	return f;
}

static void unload(struct fixture *f)
{
	vfab_config_free(&f->cfg);
	munmap(f->r, sizeof(*f->r));
	free(f);
}

static void plan(struct fixture *f, uint32_t node, struct vfab_net_node *out)
{
	assert_int_equal(vfab_net_plan_node(f->r, node, &f->cfg.nodes[node], node, out), 0);
}

static void assert_route(const struct vfab_net_route *rt, const char *dst, unsigned prefix,
			 const char *gw, uint32_t iface)
{
	uint8_t want[16] = {0};
	int family = strchr(dst, ':') ? AF_INET6 : AF_INET;
	size_t len = family == AF_INET ? 4 : 16;

	assert_int_equal(rt->family, family);
	assert_int_equal(inet_pton(family, dst, want), 1);
	assert_memory_equal(rt->dst, want, len);
	assert_int_equal(rt->prefix, prefix);
	assert_int_equal(inet_pton(family, gw, want), 1);
	assert_memory_equal(rt->gw, want, len);
	assert_int_equal(rt->iface, iface);
}

static void test_default_single_leaf(void **state)
{
	struct fixture *f = load("default.yaml", NULL);
	struct vfab_net_node n;
	uint8_t mac[6];

	(void)state;
	plan(f, 1, &n);
	assert_string_equal(n.id, "node1");
	assert_int_equal(n.niface, 1);
	assert_string_equal(n.iface[0].name, "eth0");
	assert_string_equal(n.iface[0].host_end, "node1-v");
	assert_string_equal(n.iface[0].bridge, "vfbr0");
	assert_int_equal(n.iface[0].mtu, 9000);
	assert_int_equal(vfab_topology_netdev_mac("tplan", &f->cfg, 1, "eth0", mac), 0);
	assert_memory_equal(n.iface[0].mac, mac, 6);
	assert_int_equal(n.iface[0].naddrs, 1);
	assert_string_equal(n.iface[0].addrs[0].text, "198.18.0.2/24");
	assert_int_equal(n.nroutes, 0); /* one leaf: no spine, nothing to route */
	unload(f);
}

static void test_leafspine_routes_via_own_leaf(void **state)
{
	struct fixture *f = load("leafspine-oversub.yaml", NULL);
	struct vfab_net_node n;

	(void)state;
	plan(f, 0, &n);
	assert_string_equal(n.iface[0].bridge, "vfbr0");
	assert_int_equal(n.nroutes, 1);
	assert_route(&n.route[0], "198.18.0.0", 15, "198.18.0.254", 0);
	plan(f, 4, &n);
	assert_string_equal(n.iface[0].bridge, "vfbr1");
	assert_string_equal(n.iface[0].addrs[0].text, "198.18.1.1/24");
	assert_int_equal(n.nroutes, 1);
	assert_route(&n.route[0], "198.18.0.0", 15, "198.18.1.254", 0);
	unload(f);
}

static void test_dgx_rails(void **state)
{
	struct fixture *f = load("dgx-2x8.yaml", NULL);
	struct vfab_net_node n;
	char want[32];

	(void)state;
	plan(f, 1, &n);
	assert_int_equal(n.niface, 8);
	for (uint32_t k = 0; k < 8; k++) {
		snprintf(want, sizeof(want), "eth%u", k);
		assert_string_equal(n.iface[k].name, want);
		/* Rail k of every node shares one leaf, a leaf per rail. */
		assert_string_equal(n.iface[k].bridge, f->r->leaves[k].bridge);
		snprintf(want, sizeof(want), "vfbr%u", k);
		assert_string_equal(n.iface[k].bridge, want);
		snprintf(want, sizeof(want), k ? "node1-v%u" : "node1-v", k);
		assert_string_equal(n.iface[k].host_end, want);
		assert_int_equal(n.iface[k].mtu, 9000);
		snprintf(want, sizeof(want), "198.18.%u.2/24", k);
		assert_string_equal(n.iface[k].addrs[0].text, want);
	}
	assert_int_equal(n.nroutes, 1); /* one route per family: the first rail's gateway */
	assert_route(&n.route[0], "198.18.0.0", 15, "198.18.0.254", 0);
	unload(f);
}

static void test_runai_bond0(void **state)
{
	struct fixture *f = load("runai-roce.yaml", NULL);
	struct vfab_net_node n;

	(void)state;
	plan(f, 0, &n);
	assert_int_equal(n.niface, 2);
	assert_string_equal(n.iface[0].name, "eth0");
	assert_int_equal(n.iface[0].mtu, 1500);
	assert_string_equal(n.iface[1].name, "bond0");
	assert_int_equal(n.iface[1].mtu, 9000);
	assert_string_not_equal(n.iface[0].bridge, n.iface[1].bridge);
	assert_int_equal(n.iface[1].naddrs, 4);
	assert_string_equal(n.iface[1].addrs[0].text, "2001:db8:18:1::1/64");
	assert_string_equal(n.iface[1].addrs[3].text, "198.18.1.1/24");
	/* The lone IPv6 leaf is the whole IPv6 aggregate: on-link, no route. */
	assert_int_equal(n.nroutes, 1);
	assert_route(&n.route[0], "198.18.0.0", 15, "198.18.0.254", 0);
	unload(f);
}

static void test_ipv6_aggregate(void **state)
{
	struct fixture *f = load(NULL, "version: 1\n"
				       "nodes: [{id: a0}, {id: a1}, {id: b0}, {id: b1}]\n"
				       "fabric: {leaf_size: 2, ipv6: true}\n");
	struct vfab_net_node n;

	(void)state;
	plan(f, 2, &n);
	assert_int_equal(n.nroutes, 2);
	assert_route(&n.route[0], "198.18.0.0", 15, "198.18.1.254", 0);
	assert_route(&n.route[1], "fd00:198:18::", 63, "fd00:198:18:1:ffff:ffff:ffff:fffe", 0);
	unload(f);
}

/* A gateway is reachable only from an address on its leaf: skip a bare eth0. */
static void test_route_skips_netdev_without_address(void **state)
{
	struct fixture *f = load(NULL, "version: 1\n"
				       "nodes:\n"
				       "  - id: a\n"
				       "    hcas: 2\n"
				       "    netdevs: [{name: eth0, addresses: []}]\n"
				       "  - id: b\n"
				       "    hcas: 2\n"
				       "fabric: {leaf_size: 1}\n");
	struct vfab_net_node n;
	char gw[INET_ADDRSTRLEN];

	(void)state;
	plan(f, 0, &n);
	assert_int_equal(n.iface[0].naddrs, 0);
	assert_int_equal(n.nroutes, 1);
	assert_int_equal(n.route[0].iface, 1);
	inet_ntop(AF_INET, &f->r->leaves[f->r->nodes[0].netdevs[1].leaf].ipv4_gw, gw, sizeof(gw));
	assert_route(&n.route[0], "198.18.0.0", 15, gw, 1);
	unload(f);
}

static void test_bad_node(void **state)
{
	struct fixture *f = load("default.yaml", NULL);
	struct vfab_net_node n;

	(void)state;
	assert_int_equal(vfab_net_plan_node(f->r, 2, &f->cfg.nodes[0], 0, &n), -EINVAL);
	/* Region and config disagree: the config node lacks the region's eth0. */
	struct vfab_cfg_node other = f->cfg.nodes[0];

	snprintf(other.netdevs[0].name, sizeof(other.netdevs[0].name), "eth9");
	assert_int_equal(vfab_net_plan_node(f->r, 0, &other, 0, &n), -EINVAL);
	unload(f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_default_single_leaf),
	    cmocka_unit_test(test_leafspine_routes_via_own_leaf),
	    cmocka_unit_test(test_dgx_rails),
	    cmocka_unit_test(test_runai_bond0),
	    cmocka_unit_test(test_ipv6_aggregate),
	    cmocka_unit_test(test_route_skips_netdev_without_address),
	    cmocka_unit_test(test_bad_node),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
