/* SPDX-License-Identifier: MIT */
/*
 * RoCE reachability on real topologies: v1 stays on its leaf, v2 is routed
 * through the spine, families must match, link-local stays local, on-link
 * addresses need the same segment, and the spine only routes leaf subnets.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "fabric/gid.h"
#include "fabric/link_model.h"
#include "fabric/reach.h"
#include "fabric_fixture.h"

/*
 * a, b on leaf group 0, c on group 1; two HCAs each (eth0, eth1 planes):
 * leaves 0 leaf0-eth0, 1 leaf1-eth0, 2 leaf0-eth1, 3 leaf1-eth1. Every port:
 * GIDs 0/1 default, 2/3 IPv4, 4/5 IPv6.
 */
static const char two_leaves[] = "nodes:\n"
				 "  - {id: a, hcas: 2}\n"
				 "  - {id: b, hcas: 2}\n"
				 "  - {id: c, hcas: 2, leaf: 1}\n"
				 "fabric: {ipv6: true}\n";

static void v4gid(const char *ip, uint8_t g[16])
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	assert_int_equal(inet_pton(AF_INET, ip, g + 12), 1);
}

static void v6gid(const char *ip, uint8_t g[16])
{
	assert_int_equal(inet_pton(AF_INET6, ip, g), 1);
}

/* From port 1 of node `node`'s HCA h with the GID at sgid_index. */
static int reach(struct vfab_region *r, uint32_t node, uint32_t h, uint32_t sgid_index,
		 const uint8_t dgid[16], struct fabric_reach *out)
{
	uint32_t hi;

	fixture_port(r, node, h, &hi);
	return fabric_reach_by_index(r, hi, 1, sgid_index, dgid, out);
}

static void expect_reach(struct vfab_region *r, uint32_t node, uint32_t h, uint32_t sgid_index,
			 const uint8_t dgid[16], uint32_t to_node, uint32_t to_h, uint32_t routed)
{
	struct fabric_reach out = {0};
	uint32_t want;

	fixture_port(r, to_node, to_h, &want);
	assert_int_equal(reach(r, node, h, sgid_index, dgid, &out), 0);
	assert_int_equal(out.hca, want);
	assert_int_equal(out.port, 1);
	assert_int_equal(out.routed, routed);
}

static void test_roce_versions(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	struct fabric_reach out;
	uint8_t g[16];

	(void)state;
	assert_int_equal(r->nleaves, 4);
	v4gid("198.18.0.2", g); /* b, same leaf */
	expect_reach(r, 0, 0, 3, g, 1, 0, 0);
	expect_reach(r, 0, 0, 2, g, 1, 0, 0); /* v1 on one segment: fine */
	v4gid("198.18.1.1", g);		      /* c, other leaf */
	expect_reach(r, 0, 0, 3, g, 2, 0, 1);
	memset(&out, 0xff, sizeof(out));
	assert_int_equal(reach(r, 0, 0, 3, g, &out), 0);
	assert_int_equal(out.dgid_index, 3);
	/* RoCE v1 is not routed. */
	assert_int_equal(reach(r, 0, 0, 2, g, &out), -EHOSTUNREACH);
	/* IPv6 v2 is routed too. */
	v6gid("fd00:198:18:1::1", g);
	expect_reach(r, 0, 0, 5, g, 2, 0, 1);
	assert_int_equal(reach(r, 0, 0, 4, g, &out), -EHOSTUNREACH);
	/* Another rail of the same node is another leaf: through the spine. */
	v4gid("198.18.2.1", g);
	expect_reach(r, 0, 0, 3, g, 0, 1, 1);
	/* A port reaches itself (a QP connected to its own GID). */
	v4gid("198.18.0.1", g);
	expect_reach(r, 0, 0, 3, g, 0, 0, 0);
	fixture_region_free(r);
}

static void test_family_and_link_local(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	const struct vfab_port *pb = fixture_port(r, 1, 0, NULL);
	const struct vfab_port *pc = fixture_port(r, 2, 0, NULL);
	struct fabric_reach out;
	uint8_t g[16];

	(void)state;
	/* IPv4-mapped source to an IPv6 destination and back: never. */
	v6gid("fd00:198:18::2", g);
	assert_int_equal(reach(r, 0, 0, 3, g, &out), -EHOSTUNREACH);
	expect_reach(r, 0, 0, 5, g, 1, 0, 0);
	v4gid("198.18.0.2", g);
	assert_int_equal(reach(r, 0, 0, 5, g, &out), -EHOSTUNREACH);
	/* Link-local GIDs (the defaults) stay on their segment, v1 or v2. */
	expect_reach(r, 0, 0, 1, pb->gids[1].raw, 1, 0, 0);
	expect_reach(r, 0, 0, 0, pb->gids[0].raw, 1, 0, 0);
	assert_int_equal(reach(r, 0, 0, 1, pc->gids[1].raw, &out), -EHOSTUNREACH);
	/* A link-local source cannot reach a routed destination either. */
	v4gid("198.18.1.1", g);
	assert_int_equal(reach(r, 0, 0, 1, g, &out), -EHOSTUNREACH);
	fixture_region_free(r);
}

static void test_errors(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	struct fabric_reach out;
	struct vfab_gid empty;
	uint32_t ha;
	uint8_t g[16];

	(void)state;
	memset(&empty, 0, sizeof(empty));
	fixture_port(r, 0, 0, &ha);
	v4gid("198.18.0.77", g);
	assert_int_equal(reach(r, 0, 0, 3, g, &out), -ENOENT);
	v4gid("198.18.0.2", g);
	assert_int_equal(reach(r, 0, 0, 6, g, &out), -EADDRNOTAVAIL);
	assert_int_equal(fabric_reach_by_index(r, ha, 2, 3, g, &out), -EINVAL);
	assert_int_equal(fabric_reach_by_index(r, 999, 1, 3, g, &out), -EINVAL);
	assert_int_equal(fabric_reach(r, ha, 1, &empty, g, &out), -EINVAL);
	fixture_region_free(r);
}

/*
 * The region's counts and indices are any local user's to write: readers
 * (the provider's route and path lookups) stay inside the tables whatever
 * they say (issue 27; found by tests/fuzz/fuzz_region). Under the sanitizer
 * build a read past them fails this test.
 */
static void test_forged_counts(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	struct fabric_reach out;
	struct fabric_path path;
	uint32_t ha, hb, hca, port;
	uint8_t g[16];

	(void)state;
	fixture_port(r, 0, 0, &ha);
	fixture_port(r, 1, 0, &hb);
	v4gid("198.18.0.77", g);
	r->nhcas = r->nnodes = r->nleaves = r->nlinks = UINT32_MAX;
	for (uint32_t h = 0; h < VFAB_MAX_HCAS; h++) {
		r->hcas[h].in_use = 1;
		r->hcas[h].nports = 200;
	}
	r->hcas[hb].ports[0].segment = VFAB_MAX_LEAVES + 7;
	assert_int_equal(vfab_gid_find(r, g, VFAB_GID_ROCE_V2, &hca, &port), -ENOENT);
	assert_int_equal(fabric_reach_by_index(r, ha, 1, 3, g, &out), -ENOENT);
	assert_int_equal(fabric_reach_by_index(r, ha, 3, 3, g, &out), -EINVAL);
	assert_int_equal(fabric_path_resolve(r, ha, 3, hb, 1, &path), -EINVAL);
	r->spine.present = 1;
	assert_int_equal(fabric_path_resolve(r, ha, 1, hb, 1, &path), -EHOSTUNREACH);
	r->hcas[ha].node = VFAB_MAX_NODES + 3;
	assert_int_equal(fabric_path_resolve(r, ha, 1, hb, 1, &path), -EINVAL);
	fixture_region_free(r);
}

/* One leaf, no spine: IPv6 subnets the node has no address in are unreachable. */
static void test_on_link_only(void **state)
{
	struct vfab_region *r =
	    fixture_fill("nodes:\n"
			 "  - {id: a, addresses: [198.18.0.1/24, \"fd00:5::1/64\"]}\n"
			 "  - {id: b, addresses: [198.18.0.2/24, \"fd00:6::2/64\",\n"
			 "                        \"fd00:5::2/64\"]}\n",
			 NULL);
	struct fabric_reach out;
	uint8_t g[16];

	(void)state;
	assert_false(r->spine.present);
	v6gid("fd00:6::2", g);
	assert_int_equal(reach(r, 0, 0, 5, g, &out), -EHOSTUNREACH);
	v6gid("fd00:5::2", g);
	expect_reach(r, 0, 0, 5, g, 1, 0, 0);
	/* b reaches a through its own secondary address's prefix. */
	v6gid("fd00:5::1", g);
	expect_reach(r, 1, 0, 7, g, 0, 0, 0);
	/* ... and its fd00:6:: address sees fd00:5::1 on-link too (same segment). */
	expect_reach(r, 1, 0, 5, g, 0, 0, 0);
	fixture_region_free(r);
}

/* The spine routes a leaf's primary prefix only: replies must find the way back. */
static void test_secondary_prefix(void **state)
{
	struct vfab_region *r = fixture_fill(
	    "nodes:\n"
	    "  - {id: a, addresses: [198.18.0.1/24, \"fd00:a::1/64\", \"fd00:b::1/64\"]}\n"
	    "  - {id: c, leaf: 1, addresses: [198.18.1.1/24, \"fd00:c::1/64\",\n"
	    "                                 \"fd00:d::1/64\"]}\n",
	    NULL);
	struct fabric_reach out;
	uint8_t g[16];

	(void)state;
	assert_true(r->spine.present);
	v6gid("fd00:c::1", g);
	expect_reach(r, 0, 0, 5, g, 1, 0, 1);			     /* from fd00:a::1 */
	assert_int_equal(reach(r, 0, 0, 7, g, &out), -EHOSTUNREACH); /* from fd00:b::1 */
	v6gid("fd00:d::1", g);
	assert_int_equal(reach(r, 0, 0, 5, g, &out), -EHOSTUNREACH);
	fixture_region_free(r);
}

/* An address that (at run time) sits on two ports: the reachable owner wins. */
static void test_duplicate_owner(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	struct vfab_port *pb = fixture_port(r, 1, 0, NULL);
	const struct vfab_port *pc = fixture_port(r, 2, 0, NULL);
	uint8_t g[16];

	(void)state;
	v4gid("198.18.1.1", g); /* c's; now also on b (leaf0) */
	memcpy(pb->gids[2].raw, pc->gids[2].raw, 16);
	memcpy(pb->gids[3].raw, pc->gids[3].raw, 16);
	expect_reach(r, 0, 0, 2, g, 1, 0, 0); /* v1: only b's copy is on the segment */
	expect_reach(r, 0, 0, 3, g, 2, 0, 1); /* v2: routed to the leaf of that subnet */
	fixture_region_free(r);
}

/* Multicast stays on the sender's segment (no multicast routing at the spine). */
static void test_mcast(void **state)
{
	struct vfab_region *r = fixture_fill(two_leaves, NULL);
	const struct vfab_port *pa = fixture_port(r, 0, 0, NULL);
	uint32_t ha, ha1, hb, hc;
	uint8_t g4[16], g6[16];

	(void)state;
	fixture_port(r, 0, 0, &ha);
	fixture_port(r, 0, 1, &ha1);
	fixture_port(r, 1, 0, &hb);
	fixture_port(r, 2, 0, &hc);
	v4gid("239.1.1.1", g4);
	v6gid("ff0e::1", g6);
	/* RoCE v2 IPv4 source (index 3): IPv4 groups on its leaf, itself included. */
	assert_true(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, hb, 1));
	assert_true(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, ha, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, hc, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, ha1, 1)); /* other rail */
	/* v2 carries an IP header: the group's family is the source's. */
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g6, hb, 1));
	assert_true(fabric_reach_mcast(r, ha, 1, &pa->gids[5], g6, hb, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[5], g4, hb, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[5], g6, hc, 1));
	/* RoCE v1 (index 2): the GRH takes either; one segment still. */
	assert_true(fabric_reach_mcast(r, ha, 1, &pa->gids[2], g6, hb, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[2], g4, hc, 1));
	/* Unknown ports or an empty GID: nowhere. */
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, hb, 2));
	assert_false(fabric_reach_mcast(r, ha, 1, &pa->gids[3], g4, VFAB_MAX_HCAS, 1));
	assert_false(fabric_reach_mcast(r, ha, 1, NULL, g4, hb, 1));
	fixture_region_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_roce_versions),    cmocka_unit_test(test_family_and_link_local),
	    cmocka_unit_test(test_errors),	     cmocka_unit_test(test_on_link_only),
	    cmocka_unit_test(test_secondary_prefix), cmocka_unit_test(test_duplicate_owner),
	    cmocka_unit_test(test_forged_counts),    cmocka_unit_test(test_mcast),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
