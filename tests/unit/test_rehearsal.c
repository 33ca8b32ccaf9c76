/* SPDX-License-Identifier: MIT */
/*
 * The rehearsal configs in configs/ load and give the fabric they promise.
 * For runai-roce.yaml the seed's GID one-liner runs verbatim (only the /sys
 * root moved) over GID files written from the region, and must print the
 * index of the IPv4 RoCE v2 GID, which is not 3 there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric/gid.h"
#include "fabric_fixture.h"

/* From ../shared/seeds/runai-multinode-roce-nccl.txt, character for character. */
static const char oneliner[] =
    "grep 'RoCE v2' $(grep '0000:0000:0000:0000:0000:ffff' "
    "/sys/class/infiniband/mlx5_bond_0/ports/1/gids/* | cut -d ':' -f 1 | sed "
    "'s/gids/gid_attrs\\/types/') | sed -e 's/.*\\/\\([0-9]*\\):.*/\\1/'";

static struct vfab_region *load(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", VFAB_CONFIGS_DIR, name);
	return fixture_fill(NULL, path);
}

static const struct vfab_port *port_named(struct vfab_region *r, uint32_t node, const char *hca)
{
	for (uint32_t h = 0; h < r->nodes[node].nhcas; h++) {
		const struct vfab_hca *x = &r->hcas[r->nodes[node].hcas[h]];

		if (!strcmp(x->name, hca))
			return &x->ports[0];
	}
	fail_msg("no HCA %s on node %u", hca, node);
	return NULL;
}

/* What NCCL and the one-liner look for: IPv4-mapped and RoCE v2. */
static int ipv4_v2_index(const struct vfab_port *p)
{
	for (uint32_t i = 0; i < p->ngids; i++)
		if (p->gids[i].type == VFAB_GID_ROCE_V2 && vfab_gid_is_v4mapped(p->gids[i].raw))
			return (int)p->gids[i].index;
	return -1;
}

static void write_text(const char *dir, uint32_t i, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%u", dir, i);
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%s\n", text);
	assert_int_equal(fclose(f), 0);
}

/* gids/N and gid_attrs/types/N for all 256 entries, as sysfs shows them. */
static void write_gid_files(const char *port_dir, const struct vfab_port *p)
{
	static const uint8_t zero[16];
	char gids[400], types[400], cmd[1024], text[VFAB_GID_STR_LEN];

	snprintf(gids, sizeof(gids), "%s/gids", port_dir);
	snprintf(types, sizeof(types), "%s/gid_attrs/types", port_dir);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' '%s'", gids, types);
	assert_int_equal(system(cmd), 0);
	for (uint32_t i = 0; i < VFAB_SYSFS_GID_TBL_LEN; i++) {
		const struct vfab_gid *g = NULL;

		for (uint32_t k = 0; k < p->ngids; k++)
			if (p->gids[k].index == i)
				g = &p->gids[k];
		vfab_gid_format(g ? g->raw : zero, text);
		write_text(gids, i, text);
		write_text(types, i, vfab_gid_type_name(g ? g->type : VFAB_GID_EMPTY));
	}
}

static void test_runai(void **state)
{
	struct vfab_region *r = load("runai-roce.yaml");
	const struct vfab_port *p0 = port_named(r, 0, "mlx5_bond_0");
	char root[] = "/tmp/vfab-oneliner-XXXXXX", dir[256], cmd[2048], out[64] = "";
	const char *at;
	int idx = ipv4_v2_index(p0), status;
	bool got;
	FILE *f;

	(void)state;
	assert_string_equal(p0->netdev, "bond0");
	assert_int_equal(p0->netdev_mtu, 9000);
	assert_int_equal(r->nodes[0].netdevs[0].mtu, 1500);
	assert_int_equal(r->nleaves, 2);
	assert_string_equal(r->leaves[1].name, "leaf0-bond0");
	assert_int_equal(r->leaves[p0->segment].nmembers, 2);
	/* Three IPv6 pairs before the IPv4 pair: 9, as the seed's author found. */
	assert_int_equal(idx, 9);
	assert_int_equal(ipv4_v2_index(port_named(r, 1, "mlx5_bond_0")), 9);

	assert_non_null(mkdtemp(root));
	snprintf(dir, sizeof(dir), "%s/sys/class/infiniband/mlx5_bond_0/ports/1", root);
	write_gid_files(dir, p0);
	at = strstr(oneliner, "/sys/");
	assert_non_null(at);
	snprintf(cmd, sizeof(cmd), "%.*s%s%s", (int)(at - oneliner), oneliner, root, at);
	f = popen(cmd, "r");
	got = f && fgets(out, sizeof(out), f);
	status = f ? pclose(f) : -1;
	/* Clean up before any assertion can leave the tree behind. */
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	assert_int_equal(system(cmd), 0);
	assert_true(got);
	assert_int_equal(status, 0);
	assert_int_equal(atoi(out), idx);
	assert_string_equal(out, "9\n");
	fixture_region_free(r);
}

static void test_dgx(void **state)
{
	struct vfab_region *r = load("dgx-2x8.yaml");
	const struct vfab_port *p = port_named(r, 1, "mlx5_5");
	char rate[64];
	uint32_t want = htonl(0xc6120502u);

	(void)state;
	assert_int_equal(r->nhcas, 16);
	assert_int_equal(r->nleaves, 8); /* one leaf per rail */
	assert_true(r->spine.present);
	assert_string_equal(p->netdev, "eth5");
	assert_string_equal(r->leaves[p->segment].name, "leaf0-eth5");
	assert_int_equal(vfab_topology_sysfs_rate(p, rate, sizeof(rate)), 19);
	assert_string_equal(rate, "400 Gb/sec (4X NDR)");
	assert_int_equal(ipv4_v2_index(p), 3);
	assert_memory_equal(p->gids[3].raw + 12, &want, 4);
	/* Each rail leaf: two 400 Gb/s ports, 1:1, so an 800 Gb/s uplink. */
	assert_int_equal(r->links[r->leaves[5].uplink].rate_bps, 800000000000ull);
	assert_int_equal(r->links[r->nodes[0].loopback].rate_bps, 3600000000000ull);
	fixture_region_free(r);
}

static void test_leafspine(void **state)
{
	struct vfab_region *r = load("leafspine-oversub.yaml");
	const struct vfab_port *p4 = port_named(r, 4, "mlx5_0");
	uint32_t want = htonl(0xc6120101u);

	(void)state;
	assert_int_equal(r->nnodes, 8);
	assert_int_equal(r->nleaves, 2);
	assert_int_equal(p4->segment, 1);
	assert_memory_equal(p4->gids[3].raw + 12, &want, 4);
	assert_int_equal(r->leaves[1].ipv4_gw, htonl(0xc61201feu));
	assert_int_equal(r->leaves[0].node_capacity_bps, 400000000000ull);
	assert_int_equal(r->links[r->leaves[0].uplink].rate_bps, 200000000000ull);
	assert_int_equal(r->leaves[0].oversub_milli, 2000);
	fixture_region_free(r);
}

/* The seed tool's file as is: one leaf, so its oversubscription has no uplink to act on. */
static void test_seed(void **state)
{
	struct vfab_region *r = load("seed-cluster.yaml");
	const struct vfab_port *p = port_named(r, 1, "mlx5_0");

	(void)state;
	assert_int_equal(r->nleaves, 1);
	assert_false(r->spine.present);
	assert_int_equal(r->leaves[0].oversub_milli, 1500);
	assert_int_equal(r->leaves[0].node_capacity_bps, 400000000000ull);
	assert_int_equal(r->links[p->link_up].rate_bps, 200000000000ull);
	assert_int_equal(r->links[r->nodes[0].loopback].rate_bps, 300000000000ull);
	assert_int_equal(r->links[r->nodes[0].loopback].latency_ns, 3000);
	fixture_region_free(r);
	r = load("default.yaml");
	assert_int_equal(ipv4_v2_index(port_named(r, 0, "mlx5_0")), 3);
	fixture_region_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_runai),
	    cmocka_unit_test(test_dgx),
	    cmocka_unit_test(test_leafspine),
	    cmocka_unit_test(test_seed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
