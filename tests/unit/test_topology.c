/* SPDX-License-Identifier: MIT */
/*
 * Topology fill: nodes, HCAs, ports (MAC, GUID, MTU, speed), GID tables and
 * links in a real region built from real configs; port attribute encodings.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric/gid.h"
#include "fabric/topology.h"

#define SHM_FIXTURE_PREFIX "unit-topo"
#include "tests/unit/shm_region_fixture.h"

static char err[512];

static void cleanup_files(void)
{
	vfab_region_unlink(fabric);
}

static void fill_from(struct vfab_region *r, const char *yaml)
{
	struct vfab_config cfg;

	if (yaml ? vfab_config_load_string(yaml, "t.yaml", &cfg, err, sizeof(err))
		 : vfab_config_load_default(&cfg, err, sizeof(err)))
		fail_msg("config: %s", err);
	assert_int_equal(vfab_topology_fill(r, &cfg), 0);
	assert_int_equal(vfab_topology_fill(r, &cfg), -EEXIST);
	vfab_config_free(&cfg);
}

/* copy_engines: as configured, else one per CPU of the node, at most 8. */
static void test_copy_engines(void **state)
{
	struct vfab_region *r = *state;

	fill_from(r, "nodes:\n  - {id: a, cpus: \"0-1\", hcas: [{copy_engines: 3}, {name: m1}]}\n"
		     "  - {id: b, cpus: \"0-11\"}\n  - {id: c, cpus: 5}\n");
	assert_int_equal(r->hcas[r->nodes[0].hcas[0]].copy_engines, 3);
	assert_int_equal(r->hcas[r->nodes[0].hcas[1]].copy_engines, 2);
	assert_int_equal(r->hcas[r->nodes[1].hcas[0]].copy_engines, VFAB_DEFAULT_COPY_ENGINES_MAX);
	assert_int_equal(r->hcas[r->nodes[2].hcas[0]].copy_engines, 1);
}

static void test_default_fabric(void **state)
{
	struct vfab_region *r = *state;
	uint8_t fb = vfab_topology_fabric_byte(fabric);
	char buf[64];

	fill_from(r, NULL);
	assert_int_equal(r->ready, 1);
	assert_int_equal(r->nnodes, 2);
	assert_int_equal(r->nhcas, 2);
	/* Two ports x (up, down) + two node loopbacks; one leaf, so no spine. */
	assert_int_equal(r->nlinks, 6);
	assert_int_equal(r->nleaves, 1);
	assert_false(r->spine.present);
	assert_string_equal(r->leaves[0].name, "leaf0");
	assert_string_equal(r->leaves[0].bridge, "vfbr0");
	assert_string_equal(r->leaves[0].netdev, "eth0");
	assert_int_equal(r->leaves[0].nmembers, 2);
	assert_int_equal(r->leaves[0].mtu, 9000);
	assert_int_equal(r->leaves[0].ipv4_net, htonl(0xc6120000u));
	assert_int_equal(r->leaves[0].ipv4_prefix, 24);
	assert_int_equal(r->leaves[0].ipv4_gw, 0);
	assert_int_equal(r->leaves[0].uplink, VFAB_LINK_NONE);
	for (uint32_t i = 0; i < 2; i++) {
		const struct vfab_node *n = &r->nodes[i];
		const struct vfab_hca *h = &r->hcas[n->hcas[0]];
		const struct vfab_port *p = &h->ports[0];
		const uint8_t mac[6] = {0x02, 0x76, 0x66, fb, (uint8_t)i, 0};
		uint32_t want_ip = htonl(0xc6120001u + i), hca, port;

		assert_true(n->in_use);
		assert_int_equal(n->nhcas, 1);
		assert_int_equal(n->ipv4, want_ip);
		assert_string_equal(h->name, "mlx5_0");
		assert_int_equal(h->node, i);
		assert_int_equal(h->uverbs_idx, 0);
		assert_int_equal(h->nports, 1);
		assert_int_equal(h->node_guid, 0x027666fffe000000ull | (uint64_t)fb << 16 | i << 8);
		assert_int_equal(h->sys_image_guid, h->node_guid);
		assert_int_equal(p->state, 4);
		assert_string_equal(p->netdev, "eth0");
		assert_memory_equal(p->mac, mac, 6);
		assert_int_equal(p->netdev_mtu, 9000);
		assert_int_equal(p->active_mtu, 5);
		assert_int_equal(p->speed_mbps, 200000);
		assert_int_equal(vfab_topology_sysfs_rate(p, buf, sizeof(buf)), 19);
		assert_string_equal(buf, "200 Gb/sec (4X HDR)");
		assert_int_equal(p->ngids, 4);
		assert_int_equal(p->gid_gen, 1);
		assert_int_equal(p->gids[3].type, VFAB_GID_ROCE_V2);
		assert_int_equal(p->gids[3].index, 3);
		assert_memory_equal(p->gids[3].raw + 12, &want_ip, 4);
		/* The provider resolves a destination GID to this port. */
		assert_int_equal(vfab_gid_find(r, p->gids[3].raw, VFAB_GID_ROCE_V2, &hca, &port),
				 0);
		assert_int_equal(hca, n->hcas[0]);
		assert_int_equal(port, 1);
		assert_int_equal(r->links[p->link_up].kind, VFAB_LINK_NODE_UP);
		assert_int_equal(r->links[p->link_down].kind, VFAB_LINK_NODE_DOWN);
		assert_int_equal(r->links[p->link_up].rate_bps, 0);
		assert_int_equal(r->links[p->link_down].latency_ns, 0);
		assert_int_equal(p->segment, 0);
		assert_int_equal(p->subnet, htonl(0xc6120000u));
		assert_int_equal(n->group, 0);
		assert_int_equal(n->nnetdevs, 1);
		assert_string_equal(n->netdevs[0].name, "eth0");
		assert_memory_equal(n->netdevs[0].mac, mac, 6);
		assert_int_equal(n->netdevs[0].leaf, 0);
		assert_int_equal(r->links[n->loopback].kind, VFAB_LINK_LOOPBACK);
	}
	assert_string_equal(r->links[r->nodes[1].loopback].name, "node1/loopback");
	assert_string_equal(r->links[0].name, "node0/mlx5_0/1/up");
}

static void test_seed_links(void **state)
{
	struct vfab_region *r = *state;
	const struct vfab_port *p;
	FILE *f = fopen(VFAB_CONFIGS_DIR "/seed-cluster.yaml", "r");
	char yaml[4096];
	size_t n;

	assert_non_null(f);
	n = fread(yaml, 1, sizeof(yaml) - 1, f);
	fclose(f);
	yaml[n] = '\0';
	fill_from(r, yaml);
	p = &r->hcas[1].ports[0];
	assert_int_equal(r->links[p->link_up].rate_bps, 200000000000ull);
	assert_int_equal(r->links[p->link_down].rate_bps, 200000000000ull);
	/* 15 us one way, split over the two hops. */
	assert_int_equal(r->links[p->link_up].latency_ns + r->links[p->link_down].latency_ns,
			 15000);
	assert_int_equal(r->links[p->link_up].latency_ns, 7500);
}

static void test_multi_hca(void **state)
{
	struct vfab_region *r = *state;
	const struct vfab_node *n;
	const struct vfab_hca *h1;
	struct vfab_config cfg;
	uint8_t mac[6];
	char buf[64];

	fill_from(r, "nodes:\n"
		     "  - id: a\n"
		     "    hcas: [{name: mlx5_0}, {name: mlx5_1, ports: 2, netdev: [eth1, eth2]}]\n"
		     "    addresses: [198.18.0.5/24, {netdev: eth2, address: 198.18.1.5/24},\n"
		     "                {netdev: eth2, address: \"fd00::5/64\"},\n"
		     "                {netdev: eth7, address: 198.18.2.5/24}]\n"
		     "fabric:\n"
		     "  mtu: 1500\n"
		     "  inter_node: {bandwidth_gbps: 100, latency_us: 0.001, loss: 0.25}\n");
	n = &r->nodes[0];
	assert_int_equal(n->nhcas, 2);
	h1 = &r->hcas[n->hcas[1]];
	assert_int_equal(h1->uverbs_idx, 1);
	assert_int_equal(h1->nports, 2);
	assert_string_equal(h1->ports[1].netdev, "eth2");
	assert_int_equal(h1->ports[0].mac[5], 0x01);
	assert_int_equal(h1->ports[1].mac[5], 0x11);
	assert_int_equal(h1->ports[0].active_mtu, 3); /* 1500 -> 1024 */
	assert_int_equal(h1->ports[1].active_width, 2);
	assert_int_equal(h1->ports[1].active_speed, 32);
	assert_int_equal(vfab_topology_sysfs_rate(&h1->ports[1], buf, sizeof(buf)), 19);
	assert_string_equal(buf, "100 Gb/sec (4X EDR)");
	/* eth2: default pair, IPv4 pair, IPv6 pair. eth1: only the default pair. */
	assert_int_equal(h1->ports[1].ngids, 6);
	assert_int_equal(h1->ports[1].gids[4].raw[0], 0xfd);
	assert_int_equal(h1->ports[0].ngids, 2);
	assert_int_equal(r->links[h1->ports[1].link_up].latency_ns, 1);
	assert_int_equal(r->links[h1->ports[1].link_down].latency_ns, 0);
	assert_int_equal(r->links[h1->ports[1].link_up].loss_ppm, 250000);
	assert_int_equal(r->links[h1->ports[1].link_down].loss_ppm, 0);
	/* 3 ports x 2 + a loopback + 4 leaves (eth0, eth1, eth2, eth7) x 2. */
	assert_int_equal(r->nlinks, 15);
	assert_int_equal(r->nleaves, 4);
	assert_true(r->spine.present);
	assert_string_equal(r->leaves[2].name, "leaf0-eth2");
	assert_int_equal(h1->ports[1].segment, 2);
	/* eth1 has no address; its subnet skips the blocks eth2 and eth7 took. */
	assert_int_equal(r->leaves[1].ipv4_net, htonl(0xc6120300u));
	assert_int_equal(r->leaves[2].ipv4_net, htonl(0xc6120100u));
	assert_int_equal(r->leaves[2].ipv4_gw, htonl(0xc61201feu));
	assert_int_equal(r->leaves[2].ipv6_prefix, 64);
	assert_int_equal(r->leaves[2].ipv6_net[0], 0xfd);
	assert_int_equal(r->leaves[2].ipv6_gw[15], 0xfe);
	assert_int_equal(r->leaves[0].ipv6_prefix, 0);
	assert_int_equal(r->leaves[2].uplink, 11);
	assert_int_equal(r->links[r->leaves[2].uplink].kind, VFAB_LINK_LEAF_UP);
	assert_int_equal(r->links[r->leaves[2].downlink].kind, VFAB_LINK_LEAF_DOWN);
	assert_string_equal(r->links[r->leaves[2].uplink].name, "leaf0-eth2/up");
	/* One 100 Gb/s port on that leaf, oversubscription 1. */
	assert_int_equal(r->leaves[2].node_capacity_bps, 100000000000ull);
	assert_int_equal(r->links[r->leaves[2].uplink].rate_bps, 100000000000ull);
	assert_true(r->spine.has_ipv6);
	assert_int_equal(r->spine.ipv6_prefix, 64);

	/* A netdev without an HCA port: 0x80 | its index. */
	assert_int_equal(vfab_config_load_string("nodes:\n  - id: a\n    addresses:\n"
						 "      - {netdev: eth7, address: 198.18.2.5/24}\n"
						 "    hcas: [{netdev: eth1}]\n",
						 "t.yaml", &cfg, err, sizeof(err)),
			 0);
	assert_int_equal(vfab_topology_netdev_mac("x", &cfg, 0, "eth0", mac), 0);
	assert_int_equal(mac[5], 0x80);
	/* Netdev order is eth0, HCA netdevs, then address-only ones: eth7 is #2. */
	assert_int_equal(vfab_topology_netdev_mac("x", &cfg, 0, "eth7", mac), 0);
	assert_int_equal(mac[5], 0x82);
	assert_int_equal(vfab_topology_netdev_mac("x", &cfg, 0, "eth1", mac), 0);
	assert_int_equal(mac[5], 0x00);
	assert_int_equal(mac[3], vfab_topology_fabric_byte("x"));
	assert_int_equal(vfab_topology_netdev_mac("x", &cfg, 0, "eth9", mac), -ENOENT);
	assert_int_equal(vfab_topology_netdev_mac("x", &cfg, 1, "eth0", mac), -ENOENT);
	vfab_config_free(&cfg);
}

/* Run-time address changes republish the table and bump the generation. */
static void test_port_gids(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_port *p;
	struct vfab_gid_addr a[16];

	fill_from(r, NULL);
	p = &r->hcas[0].ports[0];
	memset(a, 0, sizeof(a));
	a[0].family = AF_INET6;
	inet_pton(AF_INET6, "fd00:1::5", a[0].addr);
	a[0].prefix = 64;
	a[1].family = AF_INET;
	inet_pton(AF_INET, "198.18.0.9", a[1].addr);
	a[1].prefix = 24;
	assert_int_equal(vfab_topology_port_gids(p, a, 2), 0);
	assert_int_equal(p->gid_gen, 2);
	assert_int_equal(p->ngids, 6);
	assert_int_equal(p->gids[2].raw[0], 0xfd);
	assert_int_equal(p->gids[5].type, VFAB_GID_ROCE_V2);
	assert_int_equal(p->gids[5].prefix, 120);
	assert_int_equal(p->gids[5].raw[15], 9);
	/* All addresses gone: the default pair stays, the rest is emptied. */
	assert_int_equal(vfab_topology_port_gids(p, a, 0), 0);
	assert_int_equal(p->ngids, 2);
	assert_int_equal(p->gids[3].type, VFAB_GID_EMPTY);
	assert_int_equal(p->gid_gen, 3);
	/* More than the table holds: refused, nothing changes. */
	for (int i = 0; i < 16; i++) {
		a[i].family = AF_INET;
		a[i].addr[0] = 198;
		a[i].addr[1] = 18;
		a[i].addr[3] = (uint8_t)(i + 1);
		a[i].prefix = 24;
	}
	assert_int_equal(vfab_topology_port_gids(p, a, 16), -ENOSPC);
	assert_int_equal(p->ngids, 2);
	assert_int_equal(p->gid_gen, 3);
}

/* The GID identity of entry i: index, type, the pod (node + 1), the IPv4 address's last byte. */
static void expect_gid(const struct vfab_port *p, uint32_t i, uint8_t type, uint8_t pod,
		       int v4_last)
{
	assert_int_equal(p->gids[i].index, i);
	assert_int_equal(p->gids[i].type, type);
	assert_int_equal(p->gids[i].pod, pod);
	if (v4_last >= 0) {
		assert_true(vfab_gid_is_v4mapped(p->gids[i].raw));
		assert_int_equal(p->gids[i].raw[15], v4_last);
	} else {
		assert_true(vfab_gid_is_link_local(p->gids[i].raw));
	}
}

/*
 * configs/k8s-shared.yaml: the pods of a host list one HCA on the PF, whose
 * table is the PF's default GID then each pod's net1 address and link-local.
 */
static void test_shared_hca(void **state)
{
	struct vfab_region *r = *state;
	FILE *f = fopen(VFAB_CONFIGS_DIR "/k8s-shared.yaml", "r");
	const struct vfab_port *p;
	uint8_t ll[16];
	char yaml[8192];
	size_t n;

	assert_non_null(f);
	n = fread(yaml, 1, sizeof(yaml) - 1, f);
	fclose(f);
	yaml[n] = '\0';
	fill_from(r, yaml);
	assert_int_equal(r->nnodes, 5);
	assert_int_equal(r->nhcas, 2); /* one per host */
	for (uint32_t i = 0; i < 5; i++) {
		assert_int_equal(r->nodes[i].nhcas, 1);
		assert_int_equal(r->nodes[i].hcas[0], i < 3 ? 0 : 1);
	}
	assert_int_equal(r->hcas[0].shared, 1);
	assert_int_equal(r->hcas[0].node, 0);
	assert_int_equal(r->hcas[1].node, 3);
	p = &r->hcas[0].ports[0];
	assert_string_equal(p->netdev, "ens1f0");
	assert_string_equal(p->pod_netdev, "net1");
	assert_int_equal(p->ngids, 14);
	expect_gid(p, 1, VFAB_GID_ROCE_V2, 0, -1);
	expect_gid(p, 3, VFAB_GID_ROCE_V2, 1, 11);
	expect_gid(p, 5, VFAB_GID_ROCE_V2, 1, -1);
	expect_gid(p, 7, VFAB_GID_ROCE_V2, 2, 12);
	expect_gid(p, 10, VFAB_GID_ROCE_V1, 3, 13);
	expect_gid(p, 13, VFAB_GID_ROCE_V2, 3, -1);
	/* pod-b's link-local is its net1's (the macvlan's own MAC), not the PF's. */
	vfab_gid_default(r->nodes[1].netdevs[1].mac, ll);
	assert_string_equal(r->nodes[1].netdevs[1].name, "net1");
	assert_memory_equal(p->gids[9].raw, ll, 16);
	vfab_gid_default(p->mac, ll);
	assert_memory_equal(p->gids[0].raw, ll, 16);
	assert_int_equal(r->hcas[1].ports[0].ngids, 10);
	/* The pods share their host's port links: a pair per host, a loopback per pod, 4 leaves. */
	assert_int_equal(r->nlinks, 2 * 2 + 5 + 2 * 4);
	assert_int_equal(r->hcas[0].ports[0].segment, r->nodes[2].netdevs[1].leaf);
}

static void expect_hosts_error(const char *yaml, const char *msg)
{
	struct vfab_config cfg;

	assert_int_equal(vfab_config_load_string(yaml, "h.yaml", &cfg, err, sizeof(err)), -EINVAL);
	if (!strstr(err, msg))
		fail_msg("error '%s' lacks '%s'", err, msg);
}

static void test_hosts_errors(void **state)
{
	static const char pods[] = "nodes:\n"
				   "  - {id: a, hcas: [{name: mlx5_0, netdev: net1}],"
				   " netdevs: [{name: net1, addresses: [198.18.10.1/24]}]}\n"
				   "  - {id: b, leaf: 1, hcas: [{name: mlx5_0, netdev: net1}],"
				   " netdevs: [{name: net1, addresses: [198.18.11.1/24]}]}\n";
	char yaml[1024];

	(void)state;
	snprintf(yaml, sizeof(yaml), "%shosts: [{id: h, rdma_netns: shared, pods: [a]}]\n", pods);
	expect_hosts_error(yaml, "a shared host needs hca");
	snprintf(
	    yaml, sizeof(yaml),
	    "%shosts: [{id: h, rdma_netns: shard, hca: {name: mlx5_0, netdev: p0}, pods: [a]}]\n",
	    pods);
	expect_hosts_error(yaml, "expected shared or exclusive");
	snprintf(yaml, sizeof(yaml),
		 "%shosts: [{id: h, rdma_netns: shared, hca: {name: mlx5_0, netdev: p0}, pods: [a, "
		 "c]}]\n",
		 pods);
	expect_hosts_error(yaml, "no node 'c'");
	snprintf(yaml, sizeof(yaml),
		 "%shosts: [{id: h, rdma_netns: shared, hca: {name: mlx5_0, netdev: p0}, pods: [a, "
		 "b]}]\n",
		 pods);
	expect_hosts_error(yaml, "another leaf");
	snprintf(yaml, sizeof(yaml),
		 "%shosts: [{id: h, rdma_netns: shared, hca: {name: mlx5_1, netdev: p0}, pods: "
		 "[a]}]\n",
		 pods);
	expect_hosts_error(yaml, "no one-port HCA 'mlx5_1'");
	snprintf(yaml, sizeof(yaml),
		 "%shosts: [{id: h, rdma_netns: exclusive, pods: [a]}, {id: g, rdma_netns: "
		 "exclusive, pods: [a]}]\n",
		 pods);
	expect_hosts_error(yaml, "already on host 'h'");
}

static void expect_speed(uint32_t gbps, uint8_t width, uint8_t speed, const char *rate)
{
	struct vfab_port p = {0};
	char buf[64];

	vfab_topology_encode_speed(gbps * 1000, &p.active_width, &p.active_speed);
	assert_int_equal(p.active_width, width);
	assert_int_equal(p.active_speed, speed);
	assert_true(vfab_topology_sysfs_rate(&p, buf, sizeof(buf)) > 0);
	assert_string_equal(buf, rate);
}

static void test_speed_encoding(void **state)
{
	struct vfab_port p = {.active_width = 2, .active_speed = 32};
	char small[8];

	(void)state;
	expect_speed(1, 1, 1, "2.5 Gb/sec (1X)");
	expect_speed(10, 1, 4, "10 Gb/sec (1X QDR)");
	expect_speed(25, 1, 32, "25 Gb/sec (1X EDR)");
	expect_speed(40, 2, 4, "40 Gb/sec (4X QDR)");
	expect_speed(50, 1, 64, "50 Gb/sec (1X HDR)");
	expect_speed(56, 2, 16, "56 Gb/sec (4X FDR)");
	expect_speed(100, 2, 32, "100 Gb/sec (4X EDR)");
	expect_speed(200, 2, 64, "200 Gb/sec (4X HDR)");
	expect_speed(300, 2, 64, "200 Gb/sec (4X HDR)"); /* a tie goes to the slower */
	expect_speed(400, 2, 128, "400 Gb/sec (4X NDR)");
	expect_speed(1000, 4, 128, "800 Gb/sec (8X NDR)");
	expect_speed(5000, 8, 128, "1200 Gb/sec (12X NDR)");
	assert_int_equal(vfab_topology_sysfs_rate(&p, small, sizeof(small)), -ENOSPC);
	p.active_width = 3;
	assert_int_equal(vfab_topology_sysfs_rate(&p, small, sizeof(small)), -EINVAL);
	p.active_width = 16;
	p.active_speed = 8;
	assert_int_equal(vfab_topology_sysfs_rate(&p, small, sizeof(small)), -ENOSPC);
}

static void test_active_mtu(void **state)
{
	(void)state;
	assert_int_equal(vfab_topology_active_mtu(1280), 3);
	assert_int_equal(vfab_topology_active_mtu(1500), 3);
	assert_int_equal(vfab_topology_active_mtu(2144), 4); /* 2048 + 96 */
	assert_int_equal(vfab_topology_active_mtu(2143), 3);
	assert_int_equal(vfab_topology_active_mtu(4191), 4);
	assert_int_equal(vfab_topology_active_mtu(4192), 5);
	assert_int_equal(vfab_topology_active_mtu(9000), 5);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_default_fabric, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_copy_engines, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_seed_links, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_multi_hca, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_port_gids, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_shared_hca, shm_setup, shm_teardown),
	    cmocka_unit_test(test_hosts_errors),
	    cmocka_unit_test(test_speed_encoding),
	    cmocka_unit_test(test_active_mtu),
	};

	atexit(cleanup_files);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
