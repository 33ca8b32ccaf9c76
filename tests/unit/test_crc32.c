/* SPDX-License-Identifier: MIT */
/*
 * CRC-32 (fabric/crc32.h) against its definition, one bit at a time: the
 * check value of "123456789", and runs of every length up to 3000 at every
 * alignment, with registers that are not the initial one, so that the
 * folding path (64 bytes and more, where the CPU has PCLMULQDQ) and the
 * table walk (the rest) both agree with it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "fabric/crc32.h"

static uint32_t by_bits(uint32_t crc, const uint8_t *p, size_t n)
{
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0xedb88320u : crc >> 1;
	}
	return crc;
}

static void check_value(void **state)
{
	(void)state;
	assert_int_equal(~vfab_crc32_update(0xffffffffu, (const uint8_t *)"123456789", 9),
			 0xcbf43926u);
}

static void every_length(void **state)
{
	static uint8_t buf[3000 + 16];
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (size_t i = 0; i < sizeof(buf); i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	for (size_t n = 0; n <= 3000; n++) {
		size_t off = n % 16;
		uint32_t seed = (uint32_t)(x >> (n % 32)) ^ (uint32_t)n;

		assert_int_equal(vfab_crc32_update(seed, buf + off, n),
				 by_bits(seed, buf + off, n));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(check_value),
	    cmocka_unit_test(every_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
