/* SPDX-License-Identifier: MIT */
/*
 * The GID index allocation vfabd applies when a node's addresses change at
 * run time (daemon/vfabd_gidslots.c): default GID at 0/1, entries that stay
 * keep their index, a removed address leaves an empty pair, a new one takes
 * the lowest free pair, v1 before v2; starting from the tables the topology
 * fill builds.
 */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "daemon/vfabd_gidslots.h"
#include "fabric/gid.h"

static const uint8_t mac[6] = {0x02, 0x76, 0x66, 0x12, 0x00, 0x00};

static struct vfab_gid_addr addr(const char *text)
{
	struct vfab_gid_addr a;
	char buf[64];
	char *slash;

	memset(&a, 0, sizeof(a));
	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	assert_non_null(slash);
	*slash = '\0';
	a.prefix = (uint8_t)atoi(slash + 1);
	if (inet_pton(AF_INET, buf, a.addr) == 1) {
		a.family = AF_INET;
	} else {
		assert_int_equal(inet_pton(AF_INET6, buf, a.addr), 1);
		a.family = AF_INET6;
	}
	return a;
}

/* The table the topology fill publishes for these addresses (contiguous). */
static int initial(const struct vfab_gid_addr *a, size_t n, struct vfab_gid *t)
{
	int k;

	memset(t, 0, VFAB_PORT_GIDS * sizeof(*t));
	k = vfab_gid_table_build_ordered(mac, a, n, t, VFAB_PORT_GIDS);
	assert_true(k >= 2);
	return k;
}

/* Index i holds the GID of text (an address or "default") with type. */
static void assert_entry(const struct vfab_gid *t, int i, const char *text, uint8_t type)
{
	uint8_t want[16];

	if (!strcmp(text, "default")) {
		vfab_gid_default(mac, want);
	} else {
		struct vfab_gid_addr a = addr(text);

		memset(want, 0, sizeof(want));
		if (a.family == AF_INET) {
			want[10] = want[11] = 0xff;
			memcpy(want + 12, a.addr, 4);
		} else {
			memcpy(want, a.addr, 16);
		}
	}
	assert_int_equal(t[i].index, i);
	assert_int_equal(t[i].type, type);
	assert_memory_equal(t[i].raw, want, 16);
}

static void assert_empty(const struct vfab_gid *t, int i)
{
	static const struct vfab_gid zero;

	assert_int_equal(t[i].type, VFAB_GID_EMPTY);
	assert_memory_equal(&t[i], &zero, sizeof(zero));
}

static void assert_pair(const struct vfab_gid *t, int i, const char *text)
{
	assert_entry(t, i, text, VFAB_GID_ROCE_V1);
	assert_entry(t, i + 1, text, VFAB_GID_ROCE_V2);
}

static void test_unchanged_addresses_keep_the_table(void **state)
{
	struct vfab_gid_addr a[] = {addr("2001:db8:18:1::1/64"), addr("198.18.1.1/24")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	int k = initial(a, 2, cur);
	size_t dropped;

	(void)state;
	/* The dump lists IPv4 first: the order of known addresses changes nothing. */
	struct vfab_gid_addr dump_order[] = {a[1], a[0]};
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, dump_order, 2, out, &dropped), 6);
	assert_int_equal(dropped, 0);
	assert_memory_equal(out, cur, sizeof(cur));
	assert_pair(out, 0, "default");
	assert_pair(out, 2, "2001:db8:18:1::1/64");
	assert_pair(out, 4, "198.18.1.1/24");
	assert_int_equal(out[4].prefix, 96 + 24);
	assert_int_equal(out[2].prefix, 64);
}

static void test_added_address_takes_the_next_pair(void **state)
{
	struct vfab_gid_addr a[] = {addr("198.18.0.1/24"), addr("198.19.5.1/24")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	int k = initial(a, 1, cur);
	size_t dropped;

	(void)state;
	assert_int_equal(k, 4);
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, a, 2, out, &dropped), 6);
	assert_pair(out, 2, "198.18.0.1/24");
	assert_pair(out, 4, "198.19.5.1/24");
	assert_empty(out, 6);
}

static void test_removed_address_leaves_a_hole(void **state)
{
	struct vfab_gid_addr a[] = {addr("198.18.0.1/24"), addr("198.19.5.1/24"),
				    addr("fd00::1/64")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	struct vfab_gid_addr left[] = {a[0], a[2]};
	int k = initial(a, 3, cur);
	size_t dropped;

	(void)state;
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, left, 2, out, &dropped), 8);
	assert_pair(out, 2, "198.18.0.1/24");
	assert_empty(out, 4);
	assert_empty(out, 5);
	assert_pair(out, 6, "fd00::1/64");
	/* Removing the last pair shortens the table. */
	memcpy(cur, out, sizeof(out));
	assert_int_equal(vfabd_gid_slots(mac, cur, 8, a, 1, out, &dropped), 4);
	assert_pair(out, 2, "198.18.0.1/24");
	for (int i = 4; i < VFAB_PORT_GIDS; i++)
		assert_empty(out, i);
}

static void test_new_addresses_fill_the_lowest_holes_in_order(void **state)
{
	struct vfab_gid_addr a[] = {addr("10.0.0.1/8"), addr("10.0.0.2/8"), addr("10.0.0.3/8"),
				    addr("10.0.0.4/8")};
	struct vfab_gid_addr now[] = {a[1], a[3], addr("fd00::9/64"), addr("10.9.9.9/16"),
				      addr("10.7.7.7/16")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	int k = initial(a, 4, cur);
	size_t dropped;

	(void)state;
	/* 10.0.0.1 (2,3) and 10.0.0.3 (6,7) go; three come, in this order. */
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, now, 5, out, &dropped), 12);
	assert_pair(out, 2, "fd00::9/64");
	assert_pair(out, 4, "10.0.0.2/8");
	assert_pair(out, 6, "10.9.9.9/16");
	assert_pair(out, 8, "10.0.0.4/8");
	assert_pair(out, 10, "10.7.7.7/16");
	assert_int_equal(dropped, 0);
}

static void test_link_local_and_duplicates(void **state)
{
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	uint8_t def[16];
	char text[64], buf[INET6_ADDRSTRLEN];
	size_t dropped;
	int k = initial(NULL, 0, cur);

	(void)state;
	vfab_gid_default(mac, def);
	inet_ntop(AF_INET6, def, buf, sizeof(buf));
	snprintf(text, sizeof(text), "%s/64", buf);
	/* The EUI-64 link-local is the default GID: nothing to add. Another link-local is. */
	struct vfab_gid_addr now[] = {addr(text), addr("fe80::1234/64"), addr("198.19.5.1/24"),
				      addr("198.19.5.1/16")};
	assert_int_equal(k, 2);
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, now, 4, out, &dropped), 6);
	assert_pair(out, 0, "default");
	assert_pair(out, 2, "fe80::1234/64");
	assert_pair(out, 4, "198.19.5.1/24"); /* one pair, with the first prefix */
	assert_int_equal(out[4].prefix, 96 + 24);
	assert_empty(out, 6);
}

static void test_prefix_follows_the_address(void **state)
{
	struct vfab_gid_addr a[] = {addr("198.19.5.1/24")};
	struct vfab_gid_addr b[] = {addr("198.19.5.1/16")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	int k = initial(a, 1, cur);
	size_t dropped;

	(void)state;
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, b, 1, out, &dropped), 4);
	assert_pair(out, 2, "198.19.5.1/16");
	assert_int_equal(out[2].prefix, 96 + 16);
	assert_int_equal(out[3].prefix, 96 + 16);
}

static void test_full_table_drops_and_counts(void **state)
{
	struct vfab_gid_addr a[17];
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	char text[32];
	size_t dropped;
	int k = initial(NULL, 0, cur);

	(void)state;
	for (int i = 0; i < 17; i++) {
		snprintf(text, sizeof(text), "10.1.0.%d/24", i + 1);
		a[i] = addr(text);
	}
	/* 2 default + 15 pairs = 32 entries: the 16th and 17th find no room. */
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, a, 17, out, &dropped),
			 VFAB_PORT_GIDS);
	assert_int_equal(dropped, 2);
	assert_pair(out, 30, "10.1.0.15/24");
	/* One goes: the 16th takes its pair, the 17th still finds no room. */
	memcpy(cur, out, sizeof(out));
	assert_int_equal(vfabd_gid_slots(mac, cur, VFAB_PORT_GIDS, a + 1, 16, out, &dropped),
			 VFAB_PORT_GIDS);
	assert_int_equal(dropped, 1);
	assert_pair(out, 2, "10.1.0.16/24");
	assert_pair(out, 4, "10.1.0.2/24");
}

/* A table whose v2 entry of an address was lost keeps v1 and gets v2 at the lowest hole. */
static void test_missing_type_is_added_alone(void **state)
{
	struct vfab_gid_addr a[] = {addr("198.18.0.1/24"), addr("198.18.0.9/24")};
	struct vfab_gid cur[VFAB_PORT_GIDS], out[VFAB_PORT_GIDS];
	int k = initial(a, 2, cur);
	size_t dropped;

	(void)state;
	memset(&cur[3], 0, sizeof(cur[3])); /* 198.18.0.1 RoCE v2 */
	assert_int_equal(vfabd_gid_slots(mac, cur, (size_t)k, a, 2, out, &dropped), 6);
	assert_entry(out, 2, "198.18.0.1/24", VFAB_GID_ROCE_V1);
	assert_entry(out, 3, "198.18.0.1/24", VFAB_GID_ROCE_V2);
	assert_pair(out, 4, "198.18.0.9/24");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unchanged_addresses_keep_the_table),
	    cmocka_unit_test(test_added_address_takes_the_next_pair),
	    cmocka_unit_test(test_removed_address_leaves_a_hole),
	    cmocka_unit_test(test_new_addresses_fill_the_lowest_holes_in_order),
	    cmocka_unit_test(test_link_local_and_duplicates),
	    cmocka_unit_test(test_prefix_follows_the_address),
	    cmocka_unit_test(test_full_table_drops_and_counts),
	    cmocka_unit_test(test_missing_type_is_added_alone),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
