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

/* Windows: a type 2 window over [IOVA+0x100, IOVA+0x300) of mr(RW | MW_BIND). */
#define WKEY 0x5601
#define QPN 0x42
#define WIN_OFF 0x100ull
#define WIN_LEN 0x200ull
#define RW (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static struct vfab_mr_slot window(uint32_t kind, uint32_t access)
{
	struct vfab_mr_slot w = mr(access);

	w.key = WKEY;
	w.kind = kind;
	w.addr = 0; /* a window's bytes are found through its parent only */
	w.iova = IOVA + WIN_OFF;
	w.length = WIN_LEN;
	w.parent_key = KEY;
	w.qpn = QPN;
	return w;
}

static enum ibv_wc_status through(const struct vfab_mr_slot *w, const struct vfab_mr_slot *m,
				  uint64_t addr, uint64_t len, uint32_t need, uint64_t *va)
{
	return vfab_key_check_remote(w, m, WKEY, HCA, PD, QPN, addr, len, need, RW, va);
}

static void test_window_range_and_translation(void **state)
{
	struct vfab_mr_slot m = mr(RW | IBV_ACCESS_MW_BIND), w = window(VFAB_MKEY_MW2, RW);
	uint64_t va = 0;

	(void)state;
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, WIN_LEN, IBV_ACCESS_REMOTE_WRITE, &va),
			 IBV_WC_SUCCESS);
	assert_int_equal(va, ADDR + WIN_OFF);
	/* One byte either side of the window, though inside the MR. */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF - 1, 1, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, WIN_LEN + 1, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	/* A window's key is no lkey, and the MR rules alone never pass it. */
	assert_int_equal(
	    vfab_mr_check_local(&w, WKEY, HCA, PD, IOVA + WIN_OFF, 8, IBV_ACCESS_LOCAL_WRITE, &va),
	    IBV_WC_LOC_PROT_ERR);
	assert_int_equal(vfab_mr_check_remote(&w, WKEY, HCA, PD, IOVA + WIN_OFF, 8,
					      IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_REM_ACCESS_ERR);
	/* An MR's key still goes through the MR rules. */
	assert_int_equal(vfab_key_check_remote(&m, NULL, KEY, HCA, PD, QPN, IOVA, LEN,
					       IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_SUCCESS);
}

static void test_window_rights_state_and_qp(void **state)
{
	struct vfab_mr_slot m = mr(RW | IBV_ACCESS_MW_BIND);
	struct vfab_mr_slot w = window(VFAB_MKEY_MW2, IBV_ACCESS_REMOTE_READ);
	uint64_t va;

	(void)state;
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_WRITE, &va),
			 IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_SUCCESS);
	/* Type 2B: only the QP it was bound through. */
	assert_int_equal(vfab_key_check_remote(&w, &m, WKEY, HCA, PD, QPN + 1, IOVA + WIN_OFF, 8,
					       IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_REM_ACCESS_ERR);
	w.kind = VFAB_MKEY_MW1; /* a type 1 window is of its PD, any QP */
	assert_int_equal(vfab_key_check_remote(&w, &m, WKEY, HCA, PD, QPN + 1, IOVA + WIN_OFF, 8,
					       IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_SUCCESS);
	assert_int_equal(vfab_key_check_remote(&w, &m, WKEY, HCA, PD + 1, QPN, IOVA + WIN_OFF, 8,
					       IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_REM_ACCESS_ERR);
	w.length = 0; /* invalidated */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	w = window(VFAB_MKEY_MW2, RW);
	assert_int_equal(vfab_key_check_remote(&w, &m, WKEY + 1, HCA, PD, QPN, IOVA + WIN_OFF, 8,
					       IBV_ACCESS_REMOTE_READ, RW, &va),
			 IBV_WC_REM_ACCESS_ERR);
}

/* A window never reaches past its parent as the parent is now. */
static void test_window_bounded_by_parent(void **state)
{
	struct vfab_mr_slot m = mr(RW | IBV_ACCESS_MW_BIND), w = window(VFAB_MKEY_MW2, RW);
	uint64_t va;

	(void)state;
	assert_int_equal(through(&w, NULL, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	m.key = KEY + 1; /* deregistered and reused */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	m = mr(RW); /* rereg dropped MW_BIND */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	m = mr(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND); /* the HCA may not write the MR */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_WRITE, &va),
			 IBV_WC_REM_ACCESS_ERR);
	/* The window's remote rights are its own: the MR needs none of them. */
	m = mr(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_WRITE, &va),
			 IBV_WC_SUCCESS);
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_SUCCESS);
	m = mr(RW | IBV_ACCESS_MW_BIND);
	m.length = WIN_OFF + 8; /* rereg shrank the MR under the window */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	m = mr(RW | IBV_ACCESS_MW_BIND);
	m.length = 0; /* being revoked */
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
	m = window(VFAB_MKEY_MW1, RW); /* a window is no parent */
	m.key = KEY;
	assert_int_equal(through(&w, &m, IOVA + WIN_OFF, 8, IBV_ACCESS_REMOTE_READ, &va),
			 IBV_WC_REM_ACCESS_ERR);
}

static void test_window_bind(void **state)
{
	struct vfab_mr_slot m = mr(RW | IBV_ACCESS_MW_BIND), w = window(VFAB_MKEY_MW2, 0);
	uint32_t nk = (WKEY & ~0xffu) | 0x77;

	(void)state;
	w.length = 0; /* a fresh window */
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, LEN, RW), IBV_WC_SUCCESS);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA + 1, LEN, RW), IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA - 1, 2, RW), IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk + 0x100, IOVA, 8, RW),
			 IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD + 1, nk, IOVA, 8, RW), IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, IBV_ACCESS_MW_BIND),
			 IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, NULL, PD, nk, 0, 0, 0), IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 0, RW), IBV_WC_MW_BIND_ERR);
	m = mr(RW);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, RW), IBV_WC_MW_BIND_ERR);
	m = mr(IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, IBV_ACCESS_REMOTE_WRITE),
			 IBV_WC_MW_BIND_ERR);
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, IBV_ACCESS_REMOTE_READ),
			 IBV_WC_SUCCESS);
	w.length = 8; /* a bound type 2 window must be invalidated first */
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, IBV_ACCESS_REMOTE_READ),
			 IBV_WC_MW_BIND_ERR);
	w.kind = VFAB_MKEY_MW1; /* type 1 rebinds, and unbinds */
	assert_int_equal(vfab_mw_check_bind(&w, &m, PD, nk, IOVA, 8, IBV_ACCESS_REMOTE_READ),
			 IBV_WC_SUCCESS);
	assert_int_equal(vfab_mw_check_bind(&w, NULL, PD, nk, 0, 0, 0), IBV_WC_SUCCESS);
	assert_true(vfab_mw_check_invalidate(&w, WKEY, HCA, PD, QPN) == 0);
	w.kind = VFAB_MKEY_MW2;
	assert_true(vfab_mw_check_invalidate(&w, WKEY, HCA, PD, QPN));
	assert_false(vfab_mw_check_invalidate(&w, WKEY, HCA, PD, QPN + 1));
	assert_false(vfab_mw_check_invalidate(&m, KEY, HCA, PD, QPN));
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
	    cmocka_unit_test(test_window_range_and_translation),
	    cmocka_unit_test(test_window_rights_state_and_qp),
	    cmocka_unit_test(test_window_bounded_by_parent),
	    cmocka_unit_test(test_window_bind),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
