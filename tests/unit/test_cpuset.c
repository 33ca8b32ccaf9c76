/* SPDX-License-Identifier: MIT */
/* Node CPU sets: list parsing and formatting, sysfs masks, the default split, nodes[].cpus. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "fabric/cpuset.h"

static struct vfab_cpus parse_ok(const char *text)
{
	struct vfab_cpus c;

	if (vfab_cpus_parse(text, &c))
		fail_msg("'%s' did not parse", text);
	return c;
}

static void expect_list(const struct vfab_cpus *c, const char *want)
{
	char buf[256];

	assert_int_equal(vfab_cpus_format_list(c, buf, sizeof(buf)), 0);
	assert_string_equal(buf, want);
}

static void test_parse(void **state)
{
	struct vfab_cpus c;

	(void)state;
	c = parse_ok("0-3,8");
	assert_int_equal(vfab_cpus_count(&c), 5);
	expect_list(&c, "0-3,8");
	c = parse_ok(" 5 , 1-2 ,2");
	expect_list(&c, "1-2,5");
	c = parse_ok("1023");
	expect_list(&c, "1023");
	c = parse_ok("63-65");
	expect_list(&c, "63-65");
	assert_int_equal(vfab_cpus_parse("", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("3-1", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("1,", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("a", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("-1", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("1 2", &c), -EINVAL);
	assert_int_equal(vfab_cpus_parse("1024", &c), -ERANGE);
	assert_int_equal(vfab_cpus_parse("0-99999999999999999999", &c), -ERANGE);
}

static void test_format(void **state)
{
	struct vfab_cpus c = parse_ok("0-3,33");
	char buf[64];

	(void)state;
	/* The kernel's local_cpus: 32-bit words, most significant first. */
	assert_int_equal(vfab_cpus_format_mask(&c, 2, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "00000002,0000000f");
	assert_int_equal(vfab_cpus_format_mask(&c, 1, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "0000000f");
	c = parse_ok("64");
	assert_int_equal(vfab_cpus_format_mask(&c, 3, buf, sizeof(buf)), 0);
	assert_string_equal(buf, "00000001,00000000,00000000");
	assert_int_equal(vfab_cpus_format_mask(&c, 3, buf, 10), -ENOSPC);
	memset(&c, 0, sizeof(c));
	expect_list(&c, "");
	c = parse_ok("0-1000");
	assert_int_equal(vfab_cpus_format_list(&c, buf, 4), -ENOSPC);
}

/* The lists of nodes 0..n-1 of a split of `host`, joined by '|'. */
static void expect_split(const char *host, uint32_t n, const char *want)
{
	struct vfab_cpus h = parse_ok(host), out;
	char all[512] = "", one[128];

	for (uint32_t i = 0; i < n; i++) {
		assert_int_equal(vfab_cpus_split(&h, n, i, &out), 0);
		assert_int_equal(vfab_cpus_format_list(&out, one, sizeof(one)), 0);
		snprintf(all + strlen(all), sizeof(all) - strlen(all), "%s%s", i ? "|" : "", one);
	}
	assert_string_equal(all, want);
}

static void test_split(void **state)
{
	struct vfab_cpus h = parse_ok("0-1"), out;

	(void)state;
	expect_split("0-1", 2, "0|1");
	expect_split("0-1", 1, "0-1");
	expect_split("0-7", 3, "0-2|3-5|6-7");
	expect_split("0-15", 4, "0-3|4-7|8-11|12-15");
	/* Holes in the host's set (a fabric started inside a cpuset). */
	expect_split("2,4,6,8", 2, "2,4|6,8");
	/* More nodes than CPUs: one each, round robin. */
	expect_split("0-1", 3, "0|1|0");
	expect_split("0-1", 2, "0|1");
	assert_int_equal(vfab_cpus_split(&h, 0, 0, &out), -EINVAL);
	assert_int_equal(vfab_cpus_split(&h, 2, 2, &out), -EINVAL);
	memset(&h, 0, sizeof(h));
	assert_int_equal(vfab_cpus_split(&h, 1, 0, &out), -EINVAL);
}

static void test_config_cpus(void **state)
{
	static char err[512];
	struct vfab_config cfg;

	(void)state;
	assert_int_equal(vfab_config_load_string("nodes:\n  - {id: a, cpus: \"0-3,8\"}\n"
						 "  - {id: b, cpus: [4, \"5-6\"]}\n  - {id: c}\n",
						 "t.yaml", &cfg, err, sizeof(err)),
			 0);
	assert_true(cfg.nodes[0].has_cpus);
	expect_list(&cfg.nodes[0].cpus, "0-3,8");
	assert_true(cfg.nodes[1].has_cpus);
	expect_list(&cfg.nodes[1].cpus, "4-6");
	assert_false(cfg.nodes[2].has_cpus);
	vfab_config_free(&cfg);
	assert_int_equal(vfab_config_load_string("nodes:\n  - {id: a, cpus: \"1-x\"}\n", "t.yaml",
						 &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.yaml:2: nodes[0].cpus: '1-x' is not a CPU list (numbers and "
				 "ranges A-B, separated by commas)");
	assert_int_equal(vfab_config_load_string("nodes:\n  - id: a\n    cpus: [0, 2000]\n",
						 "t.yaml", &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.yaml:3: nodes[0].cpus[1]: '2000': CPU numbers must be below "
				 "1024");
	assert_int_equal(vfab_config_load_string("nodes:\n  - id: a\n    cpus: {x: 1}\n", "t.yaml",
						 &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_string_equal(err, "t.yaml:3: nodes[0].cpus: expected a CPU list such as \"0-3,8\" "
				 "or [0, 1]");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_parse),
	    cmocka_unit_test(test_format),
	    cmocka_unit_test(test_split),
	    cmocka_unit_test(test_config_cpus),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
