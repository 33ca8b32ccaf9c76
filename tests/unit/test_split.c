/* SPDX-License-Identifier: MIT */
/*
 * The ranges of provider/vfab_split.c: they cover a transfer exactly and in
 * order, start on destination pages, respect the smallest range and the
 * number of engines, and end with the tail, the transfer's last bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_split.h"

#define KIB 1024ull
#define MIB (1024ull * KIB)

/* Every byte once, in order; boundaries on pages; the tail last. */
static void check_plan(uint64_t len, uint64_t dst, unsigned engines, uint64_t min_chunk)
{
	struct vfab_split s;
	uint64_t at = 0;

	vfab_split_plan(len, dst, engines, min_chunk, &s);
	assert_true(s.n >= 1 && s.n <= engines && s.n <= VFAB_SPLIT_MAX);
	for (unsigned i = 0; i < s.n; i++) {
		assert_int_equal(s.part[i].off_bytes, at);
		assert_true(s.part[i].len_bytes > 0 || len == 0);
		if (i + 1 < s.n) {
			assert_int_equal((dst + at + s.part[i].len_bytes) % VFAB_SPLIT_ALIGN_BYTES,
					 0);
			assert_true(s.part[i].len_bytes + VFAB_SPLIT_ALIGN_BYTES > min_chunk);
		}
		at += s.part[i].len_bytes;
	}
	assert_int_equal(s.tail.off_bytes, at);
	if (s.n == 1) {
		assert_int_equal(s.tail.len_bytes, 0);
		assert_int_equal(at, len);
	} else {
		assert_int_equal(s.tail.len_bytes, VFAB_SPLIT_TAIL_BYTES);
		assert_int_equal(at + s.tail.len_bytes, len);
	}
}

static void test_cover_exactly(void **state)
{
	static const uint64_t lens[] = {
	    0, 1, 64 * KIB, 512 * KIB, 1 * MIB, 4 * MIB + 13, 16 * MIB, 1000 * MIB};
	static const uint64_t dsts[] = {0x7f0000000000ull, 0x7f0000000008ull, 0x7f0000000ff8ull,
					0x7f0000123456ull};

	(void)state;
	for (size_t l = 0; l < sizeof(lens) / sizeof(lens[0]); l++)
		for (size_t d = 0; d < sizeof(dsts) / sizeof(dsts[0]); d++)
			for (unsigned e = 1; e <= VFAB_SPLIT_MAX; e++) {
				check_plan(lens[l], dsts[d], e, 256 * KIB);
				check_plan(lens[l], dsts[d], e, 0); /* the floor applies */
			}
}

static void test_how_many(void **state)
{
	struct vfab_split s;

	(void)state;
	/* Too small to gain: one range, no tail. */
	vfab_split_plan(511 * KIB, 0x10000, 4, 256 * KIB, &s);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.part[0].len_bytes, 511 * KIB);
	vfab_split_plan(512 * KIB, 0x10000, 4, 256 * KIB, &s);
	assert_int_equal(s.n, 2);
	/* One engine never splits. */
	vfab_split_plan(16 * MIB, 0x10000, 1, 256 * KIB, &s);
	assert_int_equal(s.n, 1);
	/* As many as the engines when the transfer is large enough. */
	vfab_split_plan(4 * MIB, 0x10000, 4, 256 * KIB, &s);
	assert_int_equal(s.n, 4);
	assert_int_equal(s.part[0].len_bytes, 1 * MIB);
	assert_int_equal(s.part[3].len_bytes, 1 * MIB - VFAB_SPLIT_TAIL_BYTES);
	/* Never more than VFAB_SPLIT_MAX. */
	vfab_split_plan(1024 * MIB, 0, 64, 256 * KIB, &s);
	assert_int_equal(s.n, VFAB_SPLIT_MAX);
	/* A smallest range below the floor is raised to it. */
	vfab_split_plan(2 * VFAB_SPLIT_MIN_CHUNK_FLOOR - 1, 0, 2, 1, &s);
	assert_int_equal(s.n, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cover_exactly),
	    cmocka_unit_test(test_how_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
