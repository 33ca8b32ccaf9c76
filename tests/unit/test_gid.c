/* SPDX-License-Identifier: MIT */
/* GID table rules: kernel ordering, EUI-64, sysfs formatting and parsing. */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/gid.h"

static const uint8_t mac[6] = {0x02, 0x76, 0x66, 0x2a, 0x01, 0x00};

static void expect_gid(const struct vfab_gid *g, uint32_t index, uint8_t type, const char *text)
{
	char buf[VFAB_GID_STR_LEN];

	vfab_gid_format(g->raw, buf);
	assert_string_equal(buf, text);
	assert_int_equal(g->type, type);
	assert_int_equal(g->index, index);
}

static void test_eui64(void **state)
{
	static const uint8_t global_mac[6] = {0x00, 0x76, 0x66, 0x00, 0x01, 0x00};
	uint8_t gid[16];
	char buf[VFAB_GID_STR_LEN];

	(void)state;
	/* The U/L bit flips: a locally administered 02:.. MAC gives 00.. in the GID. */
	vfab_gid_default(mac, gid);
	vfab_gid_format(gid, buf);
	assert_string_equal(buf, "fe80:0000:0000:0000:0076:66ff:fe2a:0100");
	vfab_gid_default(global_mac, gid);
	vfab_gid_format(gid, buf);
	assert_string_equal(buf, "fe80:0000:0000:0000:0276:66ff:fe00:0100");
}

static void test_default_order(void **state)
{
	struct vfab_gid t[8];
	struct in_addr v4;

	(void)state;
	inet_pton(AF_INET, "198.18.0.1", &v4);
	assert_int_equal(vfab_gid_table_build(mac, &v4, 1, NULL, 0, t, 8), 4);
	expect_gid(&t[0], 0, VFAB_GID_ROCE_V1, "fe80:0000:0000:0000:0076:66ff:fe2a:0100");
	expect_gid(&t[1], 1, VFAB_GID_ROCE_V2, "fe80:0000:0000:0000:0076:66ff:fe2a:0100");
	expect_gid(&t[2], 2, VFAB_GID_ROCE_V1, "0000:0000:0000:0000:0000:ffff:c612:0001");
	/* What NCCL_IB_GID_INDEX=3 and the seed's sysfs one-liner rely on. */
	expect_gid(&t[3], 3, VFAB_GID_ROCE_V2, "0000:0000:0000:0000:0000:ffff:c612:0001");
}

static void test_many_addresses(void **state)
{
	struct vfab_gid t[32];
	struct in_addr v4[3];
	struct in6_addr v6[3];
	uint8_t dflt[16];

	(void)state;
	inet_pton(AF_INET, "198.18.0.7", &v4[0]);
	inet_pton(AF_INET, "198.18.1.7", &v4[1]);
	inet_pton(AF_INET, "198.18.0.7", &v4[2]); /* repeated: no new entries */
	inet_pton(AF_INET6, "fd00::7", &v6[0]);
	vfab_gid_default(mac, dflt);
	memcpy(v6[1].s6_addr, dflt, 16); /* the link-local address = the default GID */
	inet_pton(AF_INET6, "fd00:1::7", &v6[2]);
	assert_int_equal(vfab_gid_table_build(mac, v4, 3, v6, 3, t, 32), 10);
	expect_gid(&t[4], 4, VFAB_GID_ROCE_V1, "0000:0000:0000:0000:0000:ffff:c612:0107");
	expect_gid(&t[5], 5, VFAB_GID_ROCE_V2, "0000:0000:0000:0000:0000:ffff:c612:0107");
	expect_gid(&t[6], 6, VFAB_GID_ROCE_V1, "fd00:0000:0000:0000:0000:0000:0000:0007");
	expect_gid(&t[7], 7, VFAB_GID_ROCE_V2, "fd00:0000:0000:0000:0000:0000:0000:0007");
	expect_gid(&t[8], 8, VFAB_GID_ROCE_V1, "fd00:0001:0000:0000:0000:0000:0000:0007");
	expect_gid(&t[9], 9, VFAB_GID_ROCE_V2, "fd00:0001:0000:0000:0000:0000:0000:0007");
	/* A table that cannot hold everything is an error, not a silent cut. */
	assert_int_equal(vfab_gid_table_build(mac, v4, 3, v6, 3, t, 9), -ENOSPC);
	assert_int_equal(vfab_gid_table_build(mac, NULL, 0, NULL, 0, t, 1), -ENOSPC);
}

static void test_format_parse(void **state)
{
	uint8_t raw[16], back[16];
	char buf[VFAB_GID_STR_LEN];

	(void)state;
	assert_int_equal(vfab_gid_parse("fe80:0000:0000:0000:0276:66ff:fe00:0100\n", raw), 0);
	vfab_gid_format(raw, buf);
	assert_string_equal(buf, "fe80:0000:0000:0000:0276:66ff:fe00:0100");
	assert_int_equal(raw[8], 0x02);
	assert_int_equal(raw[15], 0x00);
	assert_int_equal(vfab_gid_parse("FE80::276:66FF:FE00:100", back), 0);
	assert_memory_equal(raw, back, 16);
	assert_int_equal(vfab_gid_parse("::ffff:198.18.0.1", back), 0);
	vfab_gid_format(back, buf);
	assert_string_equal(buf, "0000:0000:0000:0000:0000:ffff:c612:0001");
	assert_int_equal(vfab_gid_parse("fe80:0000:0000", raw), -EINVAL);
	assert_int_equal(vfab_gid_parse("fe80:0000:0000:0000:0276:66ff:fe00:01000", raw), -EINVAL);
	assert_int_equal(vfab_gid_parse("198.18.0.1", raw), -EINVAL);
	assert_int_equal(vfab_gid_parse("", raw), -EINVAL);
	assert_string_equal(vfab_gid_type_name(VFAB_GID_ROCE_V1), "IB/RoCE v1");
	assert_string_equal(vfab_gid_type_name(VFAB_GID_ROCE_V2), "RoCE v2");
	assert_string_equal(vfab_gid_type_name(VFAB_GID_EMPTY), "IB/RoCE v1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_eui64),
	    cmocka_unit_test(test_default_order),
	    cmocka_unit_test(test_many_addresses),
	    cmocka_unit_test(test_format_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
