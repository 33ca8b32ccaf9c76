/* SPDX-License-Identifier: MIT */
/* netns/ip_shape_plan.c: the disciplines a link direction's IP side gets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "netns/ip_shape.h"

static void test_rate_only(void **state)
{
	struct vfab_ip_shape s = {.rate_bps = 10000000000ull};
	struct vfab_ip_plan p;

	(void)state;
	vfab_ip_shape_plan(&s, true, &p);
	assert_true(p.htb);
	assert_false(p.netem);
	assert_int_equal(p.rate_Bps, 1250000000ull);
	assert_int_equal(p.burst_bytes, 250000); /* 200 us of 10 Gb/s */
	assert_int_equal(p.bpf_loss, 0);
	/* Slow links still pass one 64 KiB GSO packet whole. */
	s.rate_bps = 1000000000ull;
	vfab_ip_shape_plan(&s, true, &p);
	assert_int_equal(p.burst_bytes, 65536);
}

static void test_unshaped(void **state)
{
	struct vfab_ip_shape s = {0};
	struct vfab_ip_plan p;

	(void)state;
	vfab_ip_shape_plan(&s, true, &p);
	assert_false(p.htb);
	assert_false(p.netem);
	assert_int_equal(p.bpf_loss, 0);
}

static void test_latency_and_loss(void **state)
{
	struct vfab_ip_shape s = {.delay_ns = 250400, .loss_ppm = 10000};
	struct vfab_ip_plan p;

	(void)state;
	vfab_ip_shape_plan(&s, true, &p);
	assert_false(p.htb);
	assert_true(p.netem);
	assert_int_equal(p.delay_us, 250);
	assert_int_equal(p.netem_loss, 42949673); /* 1 % of 2^32 - 1, rounded */
	assert_int_equal(p.bpf_loss, 0);
	/* Without netem: loss by the classifier program, no latency. */
	vfab_ip_shape_plan(&s, false, &p);
	assert_false(p.netem);
	assert_int_equal(p.bpf_loss, 42949673);
	s.loss_ppm = 1000000;
	vfab_ip_shape_plan(&s, false, &p);
	assert_int_equal(p.bpf_loss, UINT32_MAX);
}

/* ETS with two equal classes: IP gets what RDMA leaves, at least half; half while RDMA queues. */
static void test_shared_rate(void **state)
{
	const uint64_t g = 1000000000ull;

	(void)state;
	assert_int_equal(vfab_ip_shared_rate(10 * g, 0, false), 10 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 2 * g, false), 8 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 5 * g, false), 5 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 9 * g, false), 5 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 20 * g, false), 5 * g);
	/* RDMA queued behind IP's bytes: IP keeps half, however little RDMA got through. */
	assert_int_equal(vfab_ip_shared_rate(10 * g, 2 * g, true), 5 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 0, true), 5 * g);
	assert_int_equal(vfab_ip_shared_rate(10 * g, 9 * g, true), 5 * g);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rate_only),
	    cmocka_unit_test(test_unshaped),
	    cmocka_unit_test(test_latency_and_loss),
	    cmocka_unit_test(test_shared_rate),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
