/* SPDX-License-Identifier: MIT */
/*
 * UD multicast groups (fabric/mcast.c): which GIDs are multicast, the rules
 * of ib_attach_mcast and the uverbs commands (a second attach is one
 * attachment, a detach of what is not attached is EINVAL), the ConnectX-6
 * limit of one device's QPs per group, a full table, the detach of every group of a QP
 * (its destroy, the reaper), and a table whose bound anyone may forge.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <infiniband/verbs.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/mcast.h"
#define SHM_FIXTURE_PREFIX "unit-mcast"
#include "tests/unit/shm_region_fixture.h"

static void v4(const char *ip, uint8_t g[16])
{
	memset(g, 0, 16);
	g[10] = g[11] = 0xff;
	assert_int_equal(inet_pton(AF_INET, ip, g + 12), 1);
}

static void v6(const char *ip, uint8_t g[16])
{
	assert_int_equal(inet_pton(AF_INET6, ip, g), 1);
}

/* Attachments of g, as a sender finds them. */
static int members(struct vfab_region *r, const uint8_t g[16])
{
	uint32_t cursor = 0, h, q;
	int n = 0;

	while (!vfab_mcast_next(r, g, &cursor, &h, &q))
		n++;
	return n;
}

static void multicast_gids(void **state)
{
	uint8_t g[16];

	(void)state;
	v4("224.0.0.1", g);
	assert_true(vfab_mcast_gid_is_mc(g));
	v4("239.255.255.255", g);
	assert_true(vfab_mcast_gid_is_mc(g));
	assert_int_equal(vfab_mcast_check(IBV_QPT_UD, g), 0);
	v4("240.0.0.1", g);
	assert_false(vfab_mcast_gid_is_mc(g));
	v4("198.18.0.1", g);
	assert_false(vfab_mcast_gid_is_mc(g));
	assert_int_equal(vfab_mcast_check(IBV_QPT_UD, g), -EINVAL);
	v6("ff0e::1:2", g);
	assert_true(vfab_mcast_gid_is_mc(g));
	v6("ff02::1", g);
	assert_true(vfab_mcast_gid_is_mc(g));
	/* Only UD QPs attach. */
	assert_int_equal(vfab_mcast_check(IBV_QPT_RC, g), -EINVAL);
	assert_int_equal(vfab_mcast_check(IBV_QPT_UC, g), -EINVAL);
	v6("fe80::1", g);
	assert_false(vfab_mcast_gid_is_mc(g));
	v6("::", g);
	assert_false(vfab_mcast_gid_is_mc(g));
	/* An IPv4 multicast address not IPv4-mapped is not one. */
	memset(g, 0, 16);
	g[12] = 239;
	assert_false(vfab_mcast_gid_is_mc(g));
}

static void attach_detach(void **state)
{
	struct vfab_region *r = *state;
	uint8_t g[16], g2[16];
	uint32_t cursor = 0, h, q;

	v4("239.1.1.1", g);
	v6("ff0e::7", g2);
	assert_int_equal(vfab_mcast_attach(r, 1, 0x100, g), 0);
	/* Twice: still one attachment (the QP gets one copy). */
	assert_int_equal(vfab_mcast_attach(r, 1, 0x100, g), 0);
	assert_int_equal(members(r, g), 1);
	assert_int_equal(vfab_mcast_next(r, g, &cursor, &h, &q), 0);
	assert_int_equal(h, 1);
	assert_int_equal(q, 0x100);
	assert_int_equal(vfab_mcast_next(r, g, &cursor, &h, &q), -ENOENT);
	/* The same QPN on another device is another QP. */
	assert_int_equal(vfab_mcast_attach(r, 2, 0x100, g), 0);
	assert_int_equal(members(r, g), 2);
	assert_int_equal(members(r, g2), 0);
	/* Detach of what is not attached: EINVAL. */
	assert_int_equal(vfab_mcast_detach(r, 1, 0x101, g), -EINVAL);
	assert_int_equal(vfab_mcast_detach(r, 1, 0x100, g2), -EINVAL);
	assert_int_equal(vfab_mcast_detach(r, 1, 0x100, g), 0);
	assert_int_equal(vfab_mcast_detach(r, 1, 0x100, g), -EINVAL);
	assert_int_equal(members(r, g), 1);
	assert_int_equal(vfab_mcast_detach(r, 2, 0x100, g), 0);
	assert_int_equal(members(r, g), 0);
	/* Nothing left: a scan looks at nothing. */
	assert_int_equal(atomic_load(&r->shard[0].mcast_top), 0);
}

static void group_limit(void **state)
{
	struct vfab_region *r = *state;
	uint8_t g[16], g2[16];
	uint32_t i;

	v4("239.1.1.2", g);
	v4("239.1.1.3", g2);
	for (i = 0; i < VFAB_MCAST_MAX_QP_ATTACH; i++)
		assert_int_equal(vfab_mcast_attach(r, 0, 0x200 + i, g), 0);
	assert_int_equal(vfab_mcast_attach(r, 0, 0x200 + i, g), -ENOMEM);
	/* A member attaching again is no new member. */
	assert_int_equal(vfab_mcast_attach(r, 0, 0x200, g), 0);
	assert_int_equal(vfab_mcast_attach(r, 0, 0x200 + i, g2), 0);
	assert_int_equal(members(r, g), (int)VFAB_MCAST_MAX_QP_ATTACH);
	/* The limit is each device's (its own group table): another HCA's QPs join. */
	assert_int_equal(vfab_mcast_attach(r, 1, 0x200 + i, g), 0);
	assert_int_equal(vfab_mcast_attach(r, 1, 0x200, g), 0);
	assert_int_equal(members(r, g), (int)VFAB_MCAST_MAX_QP_ATTACH + 2);
	assert_int_equal(vfab_mcast_detach(r, 0, 0x200, g), 0);
	assert_int_equal(vfab_mcast_attach(r, 0, 0x200 + i, g), 0);
}

static void table_full(void **state)
{
	struct vfab_region *r = *state;
	uint8_t g[16];
	uint32_t i;

	v6("ff0e::1", g);
	for (i = 0; i < VFAB_MAX_MCAST_ATTACH; i++) {
		g[14] = (uint8_t)(i / 200); /* 200 QPs a group: under the limit */
		assert_int_equal(vfab_mcast_attach(r, 0, 0x1000 + i, g), 0);
	}
	g[14] = 0x7f;
	assert_int_equal(vfab_mcast_attach(r, 0, 0x1000 + i, g), -ENOMEM);
	g[14] = 0;
	assert_int_equal(vfab_mcast_detach(r, 0, 0x1000, g), 0);
	g[14] = 0x7f;
	assert_int_equal(vfab_mcast_attach(r, 0, 0x1000 + i, g), 0);
	assert_int_equal(members(r, g), 1);
}

static void detach_qp(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 42, .hca = 0};
	uint8_t g[3][16];
	int slot, i;

	v4("239.0.0.1", g[0]);
	v4("239.0.0.2", g[1]);
	v6("ff05::2", g[2]);
	for (i = 0; i < 3; i++) {
		assert_int_equal(vfab_mcast_attach(r, 3, 0x300, g[i]), 0);
		assert_int_equal(vfab_mcast_attach(r, 3, 0x301, g[i]), 0);
	}
	assert_int_equal(vfab_mcast_detach_qp(r, 3, 0x300), 3);
	assert_int_equal(vfab_mcast_detach_qp(r, 3, 0x300), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(members(r, g[i]), 1);
	/* Destroying a QP (and the reaper, which frees it the same way) detaches it. */
	slot = vfab_qp_alloc(r, &o, 4, 1);
	assert_true(slot >= 0);
	r->qps[slot].hca = 0;
	assert_int_equal(vfab_mcast_attach(r, 0, r->qps[slot].qpn, g[0]), 0);
	assert_int_equal(vfab_mcast_attach(r, 0, r->qps[slot].qpn, g[2]), 0);
	assert_int_equal(members(r, g[0]), 2);
	assert_int_equal(vfab_region_reap_pid(r, 42), 1);
	assert_int_equal(members(r, g[0]), 1);
	assert_int_equal(members(r, g[2]), 1);
}

/* Any user can write the table: a forged bound or slot never leads a reader outside it. */
static void forged(void **state)
{
	struct vfab_region *r = *state;
	uint32_t cursor = 0, h, q;
	uint8_t g[16];

	v4("239.9.9.9", g);
	atomic_store(&r->shard[0].mcast_top, 0xffffffffu);
	memcpy(r->shard[0].mcast[VFAB_MAX_MCAST_ATTACH - 1].gid, g, 16);
	r->shard[0].mcast[VFAB_MAX_MCAST_ATTACH - 1].hca = 0xdeadbeef;
	atomic_store(&r->shard[0].mcast[VFAB_MAX_MCAST_ATTACH - 1].state, 1);
	assert_int_equal(vfab_mcast_next(r, g, &cursor, &h, &q), 0);
	assert_int_equal(h, 0xdeadbeef); /* named, but only vfab_qp_lookup is followed */
	assert_int_equal(vfab_mcast_next(r, g, &cursor, &h, &q), -ENOENT);
	assert_int_equal(cursor, VFAB_SHARDS * VFAB_MAX_MCAST_ATTACH); /* past every shard's */
	/* Attach and detach still work within the table. */
	assert_int_equal(vfab_mcast_attach(r, 0, 0x400, g), 0);
	assert_int_equal(vfab_mcast_detach(r, 0, 0x400, g), 0);
	assert_int_equal(vfab_mcast_detach(r, 0xdeadbeef, 0, g), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(multicast_gids),
	    cmocka_unit_test_setup_teardown(attach_detach, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(group_limit, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(table_full, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(detach_qp, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(forged, shm_setup, shm_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
