/* SPDX-License-Identifier: MIT */
/*
 * The memory checks of provider/vfab_mr_check.c: which completion status an
 * HCA reports for each kind of bad lkey, rkey, range, PD, access or atomic
 * alignment, and where good accesses land in the owner's memory.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_mr_check.h"

#include <errno.h>
#include <string.h>

#define HCA 3
#define PD 7
#define KEY 0x1234
#define ADDR 0x7f0000001000ull /* where the bytes are in the owner */
#define IOVA 0x10000ull	       /* the address peers and SGEs use */
#define LEN 0x2000ull

static struct vfab_mr_slot mr(uint32_t access)
{
	struct vfab_mr_slot s;

	memset(&s, 0, sizeof(s));
	s.state = VFAB_SLOT_USED;
	s.key = KEY;
	s.hca = HCA;
	s.pd = PD;
	s.access = access;
	s.addr = ADDR;
	s.length = LEN;
	s.iova = IOVA;
	return s;
}

static void test_local_ok_and_translation(void **state)
{
	struct vfab_mr_slot s = mr(0);
	uint64_t va = 0;

	(void)state;
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA + 0x10, 0x100, 0, &va),
			 IBV_WC_SUCCESS);
	assert_int_equal(va, ADDR + 0x10);
	/* Exactly the whole region. */
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA, LEN, 0, &va), IBV_WC_SUCCESS);
	assert_int_equal(va, ADDR);
}

static void test_local_bad_key_hca_pd(void **state)
{
	struct vfab_mr_slot s = mr(IBV_ACCESS_LOCAL_WRITE);
	uint64_t va;

	(void)state;
	assert_int_equal(vfab_mr_check_local(NULL, KEY, HCA, PD, IOVA, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_local(&s, KEY + 1, HCA, PD, IOVA, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA + 1, PD, IOVA, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD + 1, IOVA, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	/* A slot being registered or revoked has length 0. */
	s.length = 0;
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA, 0, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
}

static void test_local_bounds(void **state)
{
	struct vfab_mr_slot s = mr(0);
	uint64_t va;

	(void)state;
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA - 1, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA + LEN - 7, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA + LEN, 1, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	/* Wrap-around must not pass the end check. */
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, IOVA + 8, UINT64_MAX - 4, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
	/* A real registered address (not the iova) is outside the MR's space. */
	assert_int_equal(vfab_mr_check_local(&s, KEY, HCA, PD, ADDR, 8, 0, &va),
			 IBV_WC_LOC_PROT_ERR);
}

static void test_local_write_needed(void **state)
{
	struct vfab_mr_slot ro = mr(IBV_ACCESS_REMOTE_READ), rw = mr(IBV_ACCESS_LOCAL_WRITE);
	uint64_t va;

	(void)state;
	assert_int_equal(
	    vfab_mr_check_local(&ro, KEY, HCA, PD, IOVA, 8, IBV_ACCESS_LOCAL_WRITE, &va),
	    IBV_WC_LOC_PROT_ERR);
	assert_int_equal(
	    vfab_mr_check_local(&rw, KEY, HCA, PD, IOVA, 8, IBV_ACCESS_LOCAL_WRITE, &va),
	    IBV_WC_SUCCESS);
}

static void test_remote_access_mr_and_qp(void **state)
{
	struct vfab_mr_slot s = mr(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	uint64_t va = 0;

	(void)state;
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA + 0x40, 64,
					      IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_WRITE,
					      &va),
			 IBV_WC_SUCCESS);
	assert_int_equal(va, ADDR + 0x40);
	/* The QP must allow it too ... */
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA, 64, IBV_ACCESS_REMOTE_WRITE,
					      IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	/* ... and the MR. */
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA, 64, IBV_ACCESS_REMOTE_READ,
					      IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA, 8, IBV_ACCESS_REMOTE_ATOMIC,
					      IBV_ACCESS_REMOTE_ATOMIC, &va),
			 IBV_WC_REM_ACCESS_ERR);
}

static void test_remote_bad_key_pd_bounds(void **state)
{
	uint32_t all = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	struct vfab_mr_slot s = mr(all);
	uint64_t va;

	(void)state;
	assert_int_equal(
	    vfab_mr_check_remote(NULL, KEY, HCA, PD, IOVA, 8, IBV_ACCESS_REMOTE_READ, all, &va),
	    IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(
	    vfab_mr_check_remote(&s, KEY ^ 1, HCA, PD, IOVA, 8, IBV_ACCESS_REMOTE_READ, all, &va),
	    IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(
	    vfab_mr_check_remote(&s, KEY, HCA, PD + 1, IOVA, 8, IBV_ACCESS_REMOTE_READ, all, &va),
	    IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(
	    vfab_mr_check_remote(&s, KEY, HCA + 1, PD, IOVA, 8, IBV_ACCESS_REMOTE_READ, all, &va),
	    IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA + LEN - 4, 8,
					      IBV_ACCESS_REMOTE_READ, all, &va),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(vfab_mr_check_remote(&s, KEY, HCA, PD, IOVA + LEN - 8, 8,
					      IBV_ACCESS_REMOTE_READ, all, &va),
			 IBV_WC_SUCCESS);
}

static void test_atomics(void **state)
{
	(void)state;
	assert_int_equal(vfab_atomic_check_local(8), IBV_WC_SUCCESS);
	assert_int_equal(vfab_atomic_check_local(4), IBV_WC_LOC_LEN_ERR);
	assert_int_equal(vfab_atomic_check_local(16), IBV_WC_LOC_LEN_ERR);
	assert_int_equal(vfab_atomic_check_remote(IOVA + 8), IBV_WC_SUCCESS);
	assert_int_equal(vfab_atomic_check_remote(IOVA + 4), IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(vfab_atomic_check_remote(IOVA + 1), IBV_WC_REM_INV_REQ_ERR);
}

static void test_registration_access(void **state)
{
	(void)state;
	assert_int_equal(vfab_mr_access_valid(0), 0);
	assert_int_equal(vfab_mr_access_valid(IBV_ACCESS_REMOTE_READ), 0);
	assert_int_equal(vfab_mr_access_valid(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
					      IBV_ACCESS_RELAXED_ORDERING),
			 0);
	assert_int_equal(vfab_mr_access_valid(IBV_ACCESS_REMOTE_WRITE), -EINVAL);
	assert_int_equal(vfab_mr_access_valid(IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_REMOTE_READ),
			 -EINVAL);
	assert_int_equal(vfab_mr_access_valid(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND), 0);
	assert_int_equal(vfab_mr_access_valid(1u << 15), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_local_ok_and_translation),
	    cmocka_unit_test(test_local_bad_key_hca_pd),
	    cmocka_unit_test(test_local_bounds),
	    cmocka_unit_test(test_local_write_needed),
	    cmocka_unit_test(test_remote_access_mr_and_qp),
	    cmocka_unit_test(test_remote_bad_key_pd_bounds),
	    cmocka_unit_test(test_atomics),
	    cmocka_unit_test(test_registration_access),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
