/* SPDX-License-Identifier: MIT */
/*
 * Several hosts: hosts[].uplink, each node's machine, the rules on uplink
 * addresses, and one host's share (nodes, leaves, pods, the routes to the
 * other hosts' leaves, the leaves that span hosts) as `vfab up --host` keeps it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "config_fixture.h"

#include "config/config.h"
#include "fabric/topology.h"
#define HOSTS                                                                                      \
	"hosts:\n"                                                                                 \
	"  - id: ha\n"                                                                             \
	"    uplink: {netdev: eth1, addresses: [198.19.255.1/24]}\n"                               \
	"  - id: hb\n"                                                                             \
	"    uplink: {netdev: eth1, addresses: [198.19.255.2/24]}\n"

#define TWO_HOSTS                                                                                  \
	"version: 1\n" HOSTS "nodes:\n"                                                            \
	"  - {id: a0, host: ha, leaf: 0}\n"                                                        \
	"  - {id: b0, host: hb, leaf: 1}\n"                                                        \
	"  - {id: a1, host: ha, leaf: 0}\n"                                                        \
	"  - {id: b1, host: hb, leaf: 1}\n"

static void test_cluster(void **state)
{
	struct vfab_config cfg;
	uint32_t n;

	(void)state;
	load_ok(TWO_HOSTS, &cfg);
	assert_true(cfg.multihost);
	assert_int_equal(cfg.local_host, -1);
	assert_int_equal(cfg.nnodes, 4);
	assert_int_equal(cfg.nleaves, 2);
	assert_int_equal(cfg.nodes[0].machine, 1);
	assert_int_equal(cfg.nodes[1].machine, 2);
	assert_string_equal(cfg.hosts[1].uplink_netdev, "eth1");
	assert_string_equal(cfg.hosts[1].uplink_addrs[0].text, "198.19.255.2/24");
	/* Unselected, the cluster is nodes[]. */
	assert_ptr_equal(vfab_config_cluster(&cfg, &n), cfg.nodes);
	assert_int_equal(n, 4);
	vfab_config_free(&cfg);
}

static void test_select(void **state)
{
	struct vfab_config cfg;
	const struct vfab_cfg_node *all;
	uint32_t n;

	(void)state;
	load_ok(TWO_HOSTS, &cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "hb", err, sizeof(err)), 0);
	assert_int_equal(cfg.local_host, 1);
	assert_int_equal(cfg.nnodes, 2);
	assert_string_equal(cfg.nodes[0].id, "b0");
	assert_string_equal(cfg.nodes[1].id, "b1");
	/* Their places in the file: MACs and GUIDs stay unique across the hosts. */
	assert_int_equal(cfg.nodes[0].cluster_index, 1);
	assert_int_equal(cfg.nodes[1].cluster_index, 3);
	{
		uint8_t mac[6];

		/* b1 on hb, in a fabric called as on ha: not a0's or a1's MAC. */
		assert_int_equal(vfab_topology_netdev_mac("vfab", &cfg, 1, "eth0", mac), 0);
		assert_int_equal(mac[4], 3);
	}
	/* Its one leaf, now leaves[0], keeps its name and subnet. */
	assert_int_equal(cfg.nleaves, 1);
	assert_string_equal(cfg.leaves[0].name, "leaf1");
	assert_string_equal(cfg.leaves[0].ipv4.text, "198.18.1.0/24");
	assert_int_equal(cfg.nodes[1].netdevs[0].leaf, 0);
	assert_string_equal(cfg.nodes[1].netdevs[0].addrs[0].text, "198.18.1.2/24");
	assert_true(cfg.spine);
	/* The other host's leaf, via its uplink. */
	assert_int_equal(cfg.nroutes, 1);
	assert_string_equal(cfg.routes[0].dst.text, "198.18.0.0/24");
	assert_string_equal(cfg.routes[0].via.text, "198.19.255.1/24");
	assert_int_equal(cfg.routes[0].host, 0);
	assert_int_equal(cfg.routes[0].leaf_group, 0);
	/* The whole cluster, in file order, for names and launchers. */
	all = vfab_config_cluster(&cfg, &n);
	assert_int_equal(n, 4);
	assert_string_equal(all[0].id, "a0");
	assert_string_equal(all[3].id, "b1");
	assert_string_equal(all[0].netdevs[0].addrs[0].text, "198.18.0.1/24");
	/* Once only. */
	assert_int_equal(vfab_config_select_host(&cfg, "ha", err, sizeof(err)), -EINVAL);
	vfab_config_free(&cfg);
}

static void test_select_errors(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok(TWO_HOSTS, &cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "hc", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml: no host 'hc' (hosts: ha, hb)");
	assert_int_equal(cfg.nnodes, 4); /* untouched */
	vfab_config_free(&cfg);
	load_ok("nodes: [{id: n0}, {id: n1}]\n", &cfg);
	assert_false(cfg.multihost);
	assert_int_equal(vfab_config_select_host(&cfg, "ha", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml: --host needs a config whose hosts[] have uplinks (a "
				 "multi-host cluster)");
	vfab_config_free(&cfg);
	load_ok(HOSTS "nodes: [{id: a0, host: ha}]\n", &cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "hb", err, sizeof(err)), -EINVAL);
	assert_string_equal(err, "t.yaml: host 'hb' has no nodes");
	vfab_config_free(&cfg);
}

/*
 * leaf0 spans both hosts (a0, b0), leaf1 is ha's, leaf2 hb's: each host keeps
 * leaf0 with its VNI, routes the other's own leaf by subnet and the other's
 * leaf0 nodes by host routes, tagged with its own leaf0.
 */
static void test_spanning_leaf(void **state)
{
	static const char yaml[] = "fabric: {ipv6: true}\n"
				   "hosts:\n"
				   "  - id: ha\n"
				   "    uplink: {netdev: eth1, addresses: [198.19.255.1/24, "
				   "'fd00:199::1/64']}\n"
				   "  - id: hb\n"
				   "    uplink: {netdev: eth1, addresses: [198.19.255.2/24, "
				   "'fd00:199::2/64']}\n"
				   "nodes:\n"
				   "  - {id: a0, host: ha, leaf: 0}\n"
				   "  - {id: a1, host: ha, leaf: 1}\n"
				   "  - {id: b0, host: hb, leaf: 0}\n"
				   "  - {id: b1, host: hb, leaf: 2}\n";
	struct vfab_config cfg;
	uint8_t mac[6];

	(void)state;
	load_ok(yaml, &cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "hb", err, sizeof(err)), 0);
	assert_int_equal(cfg.nleaves, 2);
	assert_string_equal(cfg.leaves[0].name, "leaf0");
	assert_int_equal(cfg.leaves[0].vni, 1);
	assert_string_equal(cfg.leaves[1].name, "leaf2");
	assert_int_equal(cfg.leaves[1].vni, 0);
	assert_int_equal(cfg.nodes[0].netdevs[0].leaf, 0);
	assert_int_equal(cfg.nodes[1].netdevs[0].leaf, 1);
	assert_true(cfg.spine);
	/* a0's addresses on leaf0 (host routes), then leaf1 (subnets), via ha. */
	assert_int_equal(cfg.nroutes, 4);
	assert_int_equal(cfg.routes[0].dst.family, AF_INET);
	assert_int_equal(cfg.routes[0].dst.prefix, 32);
	assert_memory_equal(cfg.routes[0].dst.addr, cfg.cluster[0].netdevs[0].addrs[0].addr, 4);
	assert_string_equal(cfg.routes[0].via.text, "198.19.255.1/24");
	assert_int_equal(cfg.routes[0].leaf, 0);
	assert_int_equal(cfg.routes[1].dst.family, AF_INET6);
	assert_int_equal(cfg.routes[1].dst.prefix, 128);
	assert_string_equal(cfg.routes[1].via.text, "fd00:199::1/64");
	assert_int_equal(cfg.routes[1].leaf, 0);
	assert_string_equal(cfg.routes[2].dst.text, "198.18.1.0/24");
	assert_int_equal(cfg.routes[2].leaf, -1);
	assert_int_equal(cfg.routes[3].dst.family, AF_INET6);
	assert_int_equal(cfg.routes[3].dst.prefix, 64);
	/* b0 keeps the address its place in the file gives it on either host. */
	assert_memory_equal(cfg.nodes[0].netdevs[0].addrs[0].addr,
			    cfg.cluster[2].netdevs[0].addrs[0].addr, 4);
	/* The anycast gateway MAC is no netdev's. */
	vfab_topology_gateway_mac(1, mac);
	assert_int_equal(mac[0], VFAB_MAC_OUI0);
	assert_int_equal(mac[4], 1);
	assert_int_equal(mac[5], 0xff);
	vfab_config_free(&cfg);
	/* A leaf spanning hosts without a node on the selected one: host routes only. */
	load_ok(HOSTS "nodes:\n"
		      "  - {id: a0, host: ha, leaf: 1}\n"
		      "  - {id: b0, host: hb, leaf: 0}\n"
		      "  - {id: a1, host: ha, leaf: 0}\n",
		&cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "hb", err, sizeof(err)), 0);
	assert_int_equal(cfg.nleaves, 1);
	assert_int_equal(cfg.leaves[0].vni, 1);
	assert_int_equal(cfg.nroutes, 2);
	assert_string_equal(cfg.routes[0].dst.text, "198.18.0.2/32");
	assert_string_equal(cfg.routes[1].dst.text, "198.18.1.0/24");
	vfab_config_free(&cfg);
}

/* Pods of a Kubernetes host that is one of several machines. */
static void test_pods(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("hosts:\n"
		"  - id: ha\n"
		"    rdma_netns: exclusive\n"
		"    pods: [p1, p0]\n"
		"    uplink: {netdev: ens2, addresses: [198.19.0.1/24]}\n"
		"  - id: hb\n"
		"    uplink: {netdev: ens2, addresses: [198.19.0.2/24]}\n"
		"nodes:\n"
		"  - {id: q0, host: hb, leaf: 1}\n"
		"  - {id: p0, leaf: 0}\n"
		"  - {id: p1, host: ha, leaf: 0}\n",
		&cfg);
	assert_int_equal(cfg.nodes[1].machine, 1);
	assert_int_equal(vfab_config_select_host(&cfg, "ha", err, sizeof(err)), 0);
	assert_int_equal(cfg.nnodes, 2);
	assert_int_equal(cfg.hosts[0].npods, 2);
	assert_string_equal(cfg.nodes[cfg.hosts[0].pods[0]].id, "p1");
	assert_string_equal(cfg.nodes[cfg.hosts[0].pods[1]].id, "p0");
	assert_int_equal(cfg.hosts[1].npods, 0);
	vfab_config_free(&cfg);
}

static void test_ipv6(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("fabric: {ipv6: true}\n"
		"hosts:\n"
		"  - id: ha\n"
		"    uplink: {netdev: eth1, addresses: [198.19.255.1/24, 'fd00:199::1/64']}\n"
		"  - id: hb\n"
		"    uplink: {netdev: eth1, addresses: [198.19.255.2/24, 'fd00:199::2/64']}\n"
		"nodes:\n"
		"  - {id: a0, host: ha, leaf: 0}\n"
		"  - {id: b0, host: hb, leaf: 1}\n",
		&cfg);
	assert_int_equal(vfab_config_select_host(&cfg, "ha", err, sizeof(err)), 0);
	assert_int_equal(cfg.nroutes, 2);
	assert_string_equal(cfg.routes[0].dst.text, "198.18.1.0/24");
	assert_int_equal(cfg.routes[1].dst.family, AF_INET6);
	assert_string_equal(cfg.routes[1].via.text, "fd00:199::2/64");
	vfab_config_free(&cfg);
	load_fails("fabric: {ipv6: true}\n" HOSTS "nodes:\n"
		   "  - {id: a0, host: ha, leaf: 0}\n"
		   "  - {id: b0, host: hb, leaf: 1}\n",
		   "4: hosts[0].uplink: the leaves have IPv6 prefixes: give the uplink an IPv6 "
		   "address too");
}

static void test_errors(void **state)
{
	(void)state;
	load_fails(HOSTS "nodes: [{id: a0, host: hc}]\n",
		   "6: nodes[0].host: no host 'hc' (hosts[].id)");
	load_fails(HOSTS "nodes: [{id: a0, host: ha}, {id: b0}]\n",
		   "6: nodes[1].host: missing: node 'b0' is on no host (give nodes[].host or "
		   "list it in a host's pods)");
	load_fails("hosts:\n"
		   "  - id: ha\n"
		   "    uplink: {netdev: eth1, addresses: [198.19.255.1/24]}\n"
		   "  - {id: hb, rdma_netns: exclusive, pods: [b0]}\n"
		   "nodes: [{id: a0, host: ha, leaf: 0}, {id: b0, leaf: 1}]\n",
		   "4: hosts[1].uplink: missing: once one host has an uplink, the hosts are "
		   "machines of one cluster and each needs one");
	load_fails("hosts:\n"
		   "  - id: ha\n"
		   "    uplink: {netdev: eth1, addresses: [198.18.0.200/24]}\n"
		   "  - id: hb\n"
		   "    uplink: {netdev: eth1, addresses: [198.18.0.201/24]}\n"
		   "nodes: [{id: a0, host: ha, leaf: 0}, {id: b0, host: hb, leaf: 1}]\n",
		   "3: hosts[0].uplink.addresses: 198.18.0.200/24 overlaps leaf0's subnet "
		   "198.18.0.0/24: the uplinks need a subnet of their own");
	load_fails("hosts:\n"
		   "  - id: ha\n"
		   "    uplink: {netdev: eth1, addresses: [198.19.255.1/24]}\n"
		   "  - id: hb\n"
		   "    uplink: {netdev: eth1, addresses: [198.19.254.2/24]}\n"
		   "nodes: [{id: a0, host: ha, leaf: 0}, {id: b0, host: hb, leaf: 1}]\n",
		   "5: hosts[1].uplink.addresses: 198.19.254.2/24 is not in the subnet of "
		   "198.19.255.1/24 (hosts[0]): the uplinks share one segment");
	load_fails("hosts:\n"
		   "  - id: ha\n"
		   "    uplink: {netdev: eth1, addresses: [198.19.255.1/24]}\n"
		   "  - id: hb\n"
		   "    uplink: {netdev: eth1, addresses: [198.19.255.1/24]}\n"
		   "nodes: [{id: a0, host: ha, leaf: 0}, {id: b0, host: hb, leaf: 1}]\n",
		   "5: hosts[1].uplink.addresses: 198.19.255.1/24 is hosts[0]'s too");
	load_fails("hosts: [{id: ha, uplink: {netdev: eth1, addresses: [198.19.255.1]}}]\n"
		   "nodes: [{id: a0, host: ha}]\n",
		   "1: hosts[0].uplink.addresses[0]: give the prefix length: the hosts' uplinks "
		   "share one subnet");
	load_fails("hosts: [{id: ha, uplink: {netdev: eth1, addresses: ['fd00::1/64']}}]\n"
		   "nodes: [{id: a0, host: ha}]\n",
		   "1: hosts[0].uplink.addresses: an uplink needs an IPv4 address");
	load_fails("hosts: [{id: ha, uplink: {netdev: eth1}}]\nnodes: [{id: a0, host: ha}]\n",
		   "1: hosts[0].uplink: an uplink needs netdev and addresses");
	load_fails("hosts: [{id: ha}]\nnodes: [{id: a0, host: ha}]\n",
		   "1: hosts[0]: a host needs rdma_netns and pods (Kubernetes), or an uplink (one "
		   "of several machines)");
}

/* What `vfab up --host` left in a run dir, read back by vfabd and the CLI. */
static void test_host_file(void **state)
{
	char dir[] = "/tmp/test_machines.XXXXXX", path[64];
	struct vfab_config cfg;
	FILE *f;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/host", dir);
	load_ok(TWO_HOSTS, &cfg);
	assert_int_equal(vfab_config_apply_host_file(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.local_host, -1); /* no file: the whole cluster */
	f = fopen(path, "w");
	assert_non_null(f);
	fputs("ha\n", f);
	fclose(f);
	assert_int_equal(vfab_config_apply_host_file(&cfg, path, err, sizeof(err)), 0);
	assert_int_equal(cfg.local_host, 0);
	assert_int_equal(cfg.nnodes, 2);
	assert_string_equal(cfg.nodes[1].id, "a1");
	vfab_config_free(&cfg);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cluster),	  cmocka_unit_test(test_select),
	    cmocka_unit_test(test_select_errors), cmocka_unit_test(test_spanning_leaf),
	    cmocka_unit_test(test_pods),	  cmocka_unit_test(test_ipv6),
	    cmocka_unit_test(test_errors),	  cmocka_unit_test(test_host_file),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
