/* SPDX-License-Identifier: MIT */
/*
 * The delivery lead of provider/vfab_lead.c: it starts at nothing, follows
 * how late lone small messages land (both ways, within its bounds, a step
 * at a time so that one preempted delivery barely moves it) and adds the
 * measured copy time of large messages in proportion to their length.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_lead.h"

#define DUE 1000000000ull

static int forget(void **state)
{
	(void)state;
	vfab_lead_forget();
	return 0;
}

/* A small message due at DUE that landed late ns after it (negative: early). */
static void small_landed(int64_t late)
{
	vfab_lead_learn(8, DUE, DUE - 100, (uint64_t)((int64_t)DUE + late));
}

static uint64_t small_lead(void)
{
	return DUE - vfab_lead_start_ns(8, DUE);
}

static void no_lead_at_first(void **state)
{
	(void)state;
	assert_int_equal(vfab_lead_start_ns(8, DUE), DUE);
	assert_int_equal(vfab_lead_start_ns(1u << 20, DUE), DUE);
}

static void converges_on_a_steady_lateness(void **state)
{
	int i;

	(void)state;
	/* Each delivery lands 800 ns late less the lead already taken. */
	for (i = 0; i < 400; i++)
		small_landed(800 - (int64_t)small_lead());
	assert_in_range(small_lead(), 790, 810);
}

static void one_preempted_delivery_moves_it_a_step(void **state)
{
	uint64_t before;
	int i;

	(void)state;
	for (i = 0; i < 400; i++)
		small_landed(800 - (int64_t)small_lead());
	before = small_lead();
	small_landed(5000000); /* the thread lost its core for 5 ms */
	assert_in_range(small_lead(), before, before + 500 / 8);
}

static void bounded_both_ways(void **state)
{
	int i;

	(void)state;
	for (i = 0; i < 1000; i++)
		small_landed(-1000);
	assert_int_equal(small_lead(), 0);
	for (i = 0; i < 1000; i++)
		small_landed(100000);
	assert_int_equal(small_lead(), 3000);
	/* Never before time 0. */
	assert_int_equal(vfab_lead_start_ns(8, 1000), 1000);
}

static void large_messages_add_their_copy_time(void **state)
{
	uint32_t mib = 1u << 20;
	uint64_t lead;
	int i;

	(void)state;
	/* 1 MiB copied in 80 us: 76 ps per byte. */
	for (i = 0; i < 20; i++)
		vfab_lead_learn(mib, DUE, DUE - 80000, DUE);
	lead = DUE - vfab_lead_start_ns(mib, DUE);
	assert_in_range(lead, 79000, 81000);
	/* Half the length, half the copy. */
	lead = DUE - vfab_lead_start_ns(mib / 2, DUE);
	assert_in_range(lead, 39000, 41000);
	/* A small message is not charged for copies of large ones. */
	assert_int_equal(vfab_lead_start_ns(8, DUE), DUE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup(no_lead_at_first, forget),
	    cmocka_unit_test_setup(converges_on_a_steady_lateness, forget),
	    cmocka_unit_test_setup(one_preempted_delivery_moves_it_a_step, forget),
	    cmocka_unit_test_setup(bounded_both_ways, forget),
	    cmocka_unit_test_setup(large_messages_add_their_copy_time, forget),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
