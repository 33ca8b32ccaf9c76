/* SPDX-License-Identifier: MIT */
/* The YAML config: the seed file, the default, extensions and exact errors. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <cmocka.h>

#include "config_fixture.h"

#include "config/config.h"

/* want ending in '*': only that prefix is checked (libyaml's own wording). */
static void file_fails(const char *name, const char *want)
{
	struct vfab_config cfg;
	char path[512], full[1024];
	size_t n;

	snprintf(path, sizeof(path), "%s/%s", VFAB_TEST_DATA, name);
	n = (size_t)snprintf(full, sizeof(full), "%s:%s", path, want);
	assert_int_equal(vfab_config_load_file(path, &cfg, err, sizeof(err)), -EINVAL);
	if (full[n - 1] == '*') {
		full[n - 1] = '\0';
		if (strncmp(err, full, n - 1))
			fail_msg("\"%s\" does not start with \"%s\"", err, full);
	} else {
		assert_string_equal(err, full);
	}
}

static const struct vfab_cfg_addr *addr(const struct vfab_cfg_node *n, const char *dev, int i)
{
	int d = vfab_config_netdev_index(n, dev);

	assert_true(d >= 0);
	assert_true((uint32_t)i < n->netdevs[d].naddrs);
	return &n->netdevs[d].addrs[i];
}

static void test_seed_file(void **state)
{
	struct vfab_config cfg;
	const struct vfab_cfg_node *n1;

	(void)state;
	assert_int_equal(
	    vfab_config_load_file(VFAB_CONFIGS_DIR "/seed-cluster.yaml", &cfg, err, sizeof(err)),
	    0);
	assert_string_equal(cfg.name, "dev-cluster");
	assert_string_equal(cfg.default_backend, "nccl");
	assert_int_equal(cfg.nnodes, 2);
	n1 = &cfg.nodes[1];
	assert_string_equal(n1->id, "node1");
	assert_string_equal(n1->host, "127.0.0.1");
	assert_int_equal(n1->nranks, 2);
	assert_int_equal(n1->ranks[0], 2);
	assert_int_equal(n1->ranks[1], 3);
	assert_int_equal(n1->ngpus, 2);
	assert_string_equal(n1->gpu_profiles[1], "h100");
	assert_string_equal(cfg.nodes[0].gpu_profiles[0], "a100");
	/* Extensions take their defaults. */
	assert_int_equal(n1->nhcas, 1);
	assert_string_equal(n1->hcas[0].name, "mlx5_0");
	assert_string_equal(n1->hcas[0].netdev[0], "eth0");
	assert_string_equal(addr(&cfg.nodes[0], "eth0", 0)->text, "198.18.0.1/24");
	assert_string_equal(addr(n1, "eth0", 0)->text, "198.18.0.2/24");
	assert_int_equal(cfg.mtu, 9000);
	assert_string_equal(cfg.intra_node.type, "nvlink");
	assert_true(cfg.intra_node.shaped);
	assert_true(cfg.intra_node.bandwidth_gbps == 300.0);
	assert_string_equal(cfg.inter_node.type, "infiniband");
	assert_true(cfg.inter_node.shaped);
	assert_true(cfg.inter_node.bandwidth_gbps == 200.0);
	assert_true(cfg.inter_node.latency_us == 15.0);
	assert_true(cfg.inter_node.oversubscription == 1.5);
	assert_true(cfg.inter_node.loss == 0.0);
	vfab_config_free(&cfg);
	assert_null(cfg.nodes);
}

static void test_default_config(void **state)
{
	struct vfab_config cfg;
	char buf[8192];
	FILE *f;
	size_t n;

	(void)state;
	assert_int_equal(vfab_config_load_default(&cfg, err, sizeof(err)), 0);
	assert_string_equal(cfg.name, "vfab");
	assert_int_equal(cfg.nnodes, 2);
	for (uint32_t i = 0; i < 2; i++) {
		const struct vfab_cfg_node *n = &cfg.nodes[i];

		assert_int_equal(n->nhcas, 1);
		assert_string_equal(n->hcas[0].name, "mlx5_0");
		assert_int_equal(n->hcas[0].nports, 1);
		assert_string_equal(n->hcas[0].netdev[0], "eth0");
		assert_int_equal(n->nnetdevs, 1);
		assert_int_equal(n->netdevs[0].naddrs, 1);
	}
	assert_string_equal(cfg.nodes[0].id, "node0");
	assert_string_equal(cfg.nodes[1].id, "node1");
	assert_string_equal(addr(&cfg.nodes[1], "eth0", 0)->text, "198.18.0.2/24");
	assert_string_equal(cfg.inter_node.type, "roce");
	assert_false(cfg.inter_node.shaped);
	assert_false(cfg.intra_node.shaped);
	vfab_config_free(&cfg);

	/* The embedded text is configs/default.yaml byte for byte. */
	f = fopen(VFAB_CONFIGS_DIR "/default.yaml", "r");
	assert_non_null(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, vfab_default_config_yaml);
}

/* fabric.ring_pool_mib: the region's ring pool (fabric/region.h vfab_pool_bytes). */
static void test_ring_pool(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("nodes: [{id: a}]\n", &cfg);
	assert_int_equal(cfg.ring_pool_mib, 0);
	vfab_config_free(&cfg);
	load_ok("nodes: [{id: a}]\nfabric:\n  ring_pool_mib: 4096\n", &cfg);
	assert_int_equal(cfg.ring_pool_mib, 4096);
	vfab_config_free(&cfg);
	load_fails("nodes: [{id: a}]\nfabric:\n  ring_pool_mib: 32\n",
		   "3: fabric.ring_pool_mib: 32 is out of range 64..65536");
}

/* fabric.limits: per-HCA object limits (fabric/region.h vfab_dev_limit). */
static void test_limits(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("nodes: [{id: a}]\n", &cfg);
	for (int k = 0; k < VFAB_OBJ_KINDS; k++)
		assert_int_equal(cfg.limits[k], 0);
	vfab_config_free(&cfg);
	load_ok("nodes: [{id: a}]\nfabric:\n  limits: {max_qp: 1000, max_mr: 65536}\n", &cfg);
	assert_int_equal(cfg.limits[VFAB_OBJ_QP], 1000);
	assert_int_equal(cfg.limits[VFAB_OBJ_MR], 65536);
	assert_int_equal(cfg.limits[VFAB_OBJ_CQ], 0);
	vfab_config_free(&cfg);
	load_fails("nodes: [{id: a}]\nfabric:\n  limits:\n    max_cq: 0\n",
		   "4: fabric.limits.max_cq: 0 is out of range 1..16777216");
	load_fails("nodes: [{id: a}]\nfabric:\n  limits:\n    max_ah: 5\n",
		   "4: fabric.limits.max_ah: unknown key 'max_ah'");
}

static void test_extensions(void **state)
{
	struct vfab_config cfg;
	const struct vfab_cfg_node *n;

	(void)state;
	load_ok("nodes:\n"
		"  - id: a\n"
		"    hcas:\n"
		"      - {name: mlx5_0}\n"
		"      - {name: mlx5_1, ports: 2, netdev: [eth3, eth2]}\n"
		"      - {name: rxe_x}\n"
		"    addresses:\n"
		"      - 198.18.0.10\n"
		"      - fd00::a/64\n"
		"      - {netdev: eth2, address: 198.18.4.10/24}\n"
		"      - 198.18.0.11/24\n"
		"  - id: b\n"
		"fabric:\n"
		"  subnet: 198.18.0.0/23\n"
		"  mtu: 1500\n"
		"  inter_node: {latency_us: 2.5, loss: 0.01}\n",
		&cfg);
	n = &cfg.nodes[0];
	assert_int_equal(n->nhcas, 3);
	assert_string_equal(n->hcas[0].netdev[0], "eth0");
	assert_string_equal(n->hcas[1].netdev[0], "eth3");
	assert_string_equal(n->hcas[1].netdev[1], "eth2");
	/* Ports without a netdev take the lowest free ethN. */
	assert_string_equal(n->hcas[2].netdev[0], "eth1");
	/* An IPv4 address without prefix gets the subnet's. */
	assert_string_equal(addr(n, "eth0", 0)->text, "198.18.0.10/23");
	assert_int_equal(addr(n, "eth0", 1)->family, AF_INET6);
	assert_string_equal(addr(n, "eth0", 1)->text, "fd00::a/64");
	assert_string_equal(addr(n, "eth0", 2)->text, "198.18.0.11/24");
	assert_string_equal(addr(n, "eth2", 0)->text, "198.18.4.10/24");
	assert_int_equal(addr(n, "eth2", 0)->line, 10);
	assert_true(vfab_config_netdev_index(n, "eth1") >= 0);
	/* Node b (index 1) keeps the default address. */
	assert_string_equal(addr(&cfg.nodes[1], "eth0", 0)->text, "198.18.0.2/23");
	assert_int_equal(cfg.mtu, 1500);
	assert_true(cfg.inter_node.shaped);
	assert_false(cfg.inter_node.has_bandwidth);
	assert_true(cfg.inter_node.latency_us == 2.5);
	assert_true(cfg.inter_node.loss == 0.01);
	vfab_config_free(&cfg);

	/* Unknown keys under `cluster` are the seed tool's: accepted. */
	load_ok("cluster: {name: x, coordinator: {transport: unix}, report: r.json}\n"
		"nodes: [{id: n, gpus: 2, ranks: [0, 1]}]\n",
		&cfg);
	assert_int_equal(cfg.nodes[0].ngpus, 2);
	vfab_config_free(&cfg);
}

static void test_file_errors(void **state)
{
	(void)state;
	file_fails("bad_indent.yaml", "5: yaml: did not find expected *");
	file_fails("wrong_type.yaml", "6: nodes[1].ranks: expected a sequence of integers");
	file_fails("unknown_key.yaml", "7: fabric.inter_node.bandwith_gbps: unknown key "
				       "'bandwith_gbps'");
	file_fails("duplicate_node.yaml", "6: nodes[2].id: duplicate node id 'node0' (also "
					  "nodes[0])");
	file_fails("noncontiguous_ranks.yaml",
		   "7: nodes[1].ranks[1]: rank 4 leaves a gap: ranks must be contiguous from 0 "
		   "(4 ranks: 0..3)");
	file_fails("subnet_outside.yaml",
		   "5: fabric.subnet: 10.0.0.0/24 is outside 198.18.0.0/15 (vfab only uses the "
		   "benchmarking range, never networks the host may use)");
	file_fails("too_many_nodes.yaml", "67: nodes[64]: too many nodes (65; at most 64)");
}

static void test_io_error(void **state)
{
	struct vfab_config cfg;

	(void)state;
	assert_int_equal(vfab_config_load_file("/nonexistent/x.yaml", &cfg, err, sizeof(err)),
			 -ENOENT);
	assert_string_equal(err, "/nonexistent/x.yaml: No such file or directory");
}

static void test_inline_errors(void **state)
{
	(void)state;
	load_fails("nodes:\n  - id: a\n    id: b\n", "3: nodes[0].id: duplicate key (first at "
						     "line 2)");
	load_fails("nodes:\n  - id: a\n    ranks: [0, 1]\n    gpus: [{profile: a100}]\n",
		   "4: nodes[0].gpus: 1 gpus for 2 ranks: each node must list the same number "
		   "of ranks and gpus");
	load_fails("nodes:\n  - {id: a, ranks: [0]}\n  - {id: b, ranks: [0]}\n",
		   "3: nodes[1].ranks[0]: rank 0 is used twice (also nodes[0]): ranks must be "
		   "unique");
	load_fails("nodes:\n  - id: node-with-long-name\n",
		   "2: nodes[0].id: 'node-with-long-name' is too long (at most 15 characters: "
		   "it becomes a hostname and a netns name)");
	load_fails("nodes:\n  - id: a.b\n", "2: nodes[0].id: 'a.b' may only contain letters, "
					    "digits, '_' and '-'");
	load_fails("nodes: [{id: a}]\nfabric:\n  mtu: 9001\n",
		   "3: fabric.mtu: 9001 is out of range 1280..9000");
	load_fails("nodes: [{id: a}]\nfabric:\n  mtu: \"1500\"\n",
		   "3: fabric.mtu: expected an integer");
	load_fails("nodes: [{id: a}]\nfabric:\n  inter_node: {loss: 1.5}\n",
		   "3: fabric.inter_node.loss: 1.5 is out of range 0..1");
	load_fails("nodes:\n  - id: a\n    addresses: [192.168.1.1/24]\n",
		   "3: nodes[0].addresses[0]: 192.168.1.1/24 is outside 198.18.0.0/15 (vfab "
		   "only uses the benchmarking range, never networks the host may use)");
	load_fails("nodes:\n  - id: a\n  - id: b\n    addresses: [198.18.0.1/24]\n",
		   "4: nodes[1].addresses: address 198.18.0.1/24 is used twice (nodes a and b)");
	load_fails("nodes:\n  - id: a\n    addresses: [198.18.0.0/24]\n",
		   "3: nodes[0].addresses: 198.18.0.0/24 is the network or broadcast address of "
		   "its prefix");
	load_fails("nodes:\n  - id: a\n    hcas:\n      - {name: m0, netdev: eth0}\n"
		   "      - {name: m1, netdev: eth0}\n",
		   "5: nodes[0].hcas[1].netdev: eth0 is bound to another HCA port already");
	load_fails("nodes:\n  - id: a\n    hcas:\n      - {name: m0}\n      - {name: m0}\n",
		   "5: nodes[0].hcas[1].name: duplicate HCA name 'm0' on node a");
	load_fails("nodes:\n  - id: a\n    hcas: [{ports: 2, netdev: eth0}]\n",
		   "3: nodes[0].hcas[0].netdev: a 2-port HCA needs a list of 2 netdevs");
	load_fails("nodes:\n  - id: a\n    hcas: [{ports: 3}]\n",
		   "3: nodes[0].hcas[0].ports: 3 is out of range 1..2");
	load_fails("version: 2\nnodes: [{id: a}]\n", "1: version: 2 is out of range 1..1");
	load_fails("nodes:\n  - host: h\n", "2: nodes[0].id: missing");
	load_fails("nodes:\n  - id: a\n    gpus: [{profile: a100, mem: 80}]\n",
		   "3: nodes[0].gpus[0].mem: unknown key 'mem'");
	load_fails("version: 1\n", "1: nodes: missing: a fabric needs nodes");
	load_fails("", "1: nodes: the config is empty");
	load_fails("nodes: []\n", "1: nodes: at least one node is needed");
	load_fails("nodes: [{id: a}]\nfabric: {subnet: 198.18.0.0/30}\nextra: 1\n",
		   "3: extra: unknown key 'extra'");
	load_fails("nodes: [{id: a}, {id: b}, {id: c}]\nfabric: {subnet: 198.18.0.0/30}\n",
		   "2: fabric.subnet: 198.18.0.0/30 has room for 2 nodes, leaf0 has 3");
	load_fails("nodes: [{id: a}]\nfabric: {subnet: 198.18.0.1/24}\n",
		   "2: fabric.subnet: 198.18.0.1/24 has host bits set");
}

/* hcas[].copy_engines: 1..VFAB_MAX_COPY_ENGINES; left out, 0 (from the node's CPUs). */
static void test_copy_engines(void **state)
{
	struct vfab_config cfg;

	(void)state;
	load_ok("nodes:\n  - id: a\n    hcas: [{name: m0, copy_engines: 4}, {name: m1}]\n"
		"  - {id: b, hcas: 2}\n",
		&cfg);
	assert_int_equal(cfg.nodes[0].hcas[0].copy_engines, 4);
	assert_int_equal(cfg.nodes[0].hcas[1].copy_engines, 0);
	assert_int_equal(cfg.nodes[1].hcas[1].copy_engines, 0);
	vfab_config_free(&cfg);
	load_fails("nodes:\n  - id: a\n    hcas: [{copy_engines: 0}]\n",
		   "3: nodes[0].hcas[0].copy_engines: 0 is out of range 1..16");
	load_fails("nodes:\n  - id: a\n    hcas:\n      - {name: m0, copy_engines: 17}\n",
		   "4: nodes[0].hcas[0].copy_engines: 17 is out of range 1..16");
}

/*
 * Nesting: libyaml's loader takes time in the square of the depth (100k
 * levels took 31 s); past 32 levels the load stops first, at once, naming
 * file, line and field (issue 27 #7).
 */
static void test_nesting_depth(void **state)
{
	const size_t levels = 1u << 20; /* 2 MiB of brackets: the 4 MiB cap allows it */
	const char *head = "version: 1\nnodes:\n  - id: a\n    hcas: ";
	char *yaml = malloc(strlen(head) + 2 * levels + 2), *p;
	struct vfab_config cfg;
	struct timespec a, b;

	(void)state;
	assert_non_null(yaml);
	p = yaml + sprintf(yaml, "%s", head);
	memset(p, '[', levels);
	memset(p + levels, ']', levels);
	strcpy(p + 2 * levels, "\n");
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(vfab_config_load_string(yaml, "t.yaml", &cfg, err, sizeof(err)), -EINVAL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	free(yaml);
	assert_true(b.tv_sec - a.tv_sec < 2);
	assert_string_equal(err, "t.yaml:4: nodes[0].hcas[0][0][0][0][0][0][0][0][0][0][0][0][0]"
				 "[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]: nested deeper "
				 "than 32 levels");
	/* Block style too, with the keys on the way: x, k0, k1, ... one level each. */
	char block[4096], want[512];
	size_t n =
	    (size_t)snprintf(block, sizeof(block), "version: 1\nnodes:\n  - id: a\n    x:\n");
	size_t w = (size_t)snprintf(want, sizeof(want), "t.yaml:34: nodes[0].x");

	for (int i = 0; i < 40; i++) {
		n += (size_t)snprintf(block + n, sizeof(block) - n, "%*sk%d:\n", 6 + 2 * i, "", i);
		if (i < 29) /* k28: the field whose value would be level 33 */
			w += (size_t)snprintf(want + w, sizeof(want) - w, ".k%d", i);
	}
	snprintf(want + w, sizeof(want) - w, ": nested deeper than 32 levels");
	assert_int_equal(vfab_config_load_string(block, "t.yaml", &cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, want);
	/* 32 levels are fine for the depth check (the schema then says what is wrong). */
	load_fails(
	    "version: 1\nnodes: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n",
	    "2: nodes[0]: expected a mapping, got a sequence");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_seed_file),	 cmocka_unit_test(test_default_config),
	    cmocka_unit_test(test_extensions),	 cmocka_unit_test(test_file_errors),
	    cmocka_unit_test(test_io_error),	 cmocka_unit_test(test_inline_errors),
	    cmocka_unit_test(test_copy_engines), cmocka_unit_test(test_ring_pool),
	    cmocka_unit_test(test_limits),	 cmocka_unit_test(test_nesting_depth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
