/* SPDX-License-Identifier: MIT */
/*
 * The ring pool's buddy allocator (fabric/pool.c): a process that takes
 * rings of every size until a clean ENOMEM and dies leaves, once reaped, a
 * pool that serves every size again (issue 27 High #4); buddies split and
 * merge; a pool size that is no power of two; offsets and lists forged in
 * the region never make the allocator write outside the pool; a /dev/shm
 * too small for the region or its rings gives clean errors, never SIGBUS
 * (issue 27 Medium #5).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric/region.h"

#define SHM_FIXTURE_PREFIX "unit-pool"
#include "tests/unit/shm_region_fixture.h"

/* A pool that is no power of two: 8 MiB and three 64 KiB blocks. */
#define SMALL_POOL ((8ull << 20) + (192ull << 10))

static char small_fabric[64];

static void cleanup_small(void)
{
	if (small_fabric[0])
		vfab_region_unlink(small_fabric);
}

static int setup(void **state)
{
	return shm_setup(state);
}

static int teardown(void **state)
{
	shm_teardown(state);
	cleanup_small();
	return 0;
}

static struct vfab_region *small_region(void)
{
	struct vfab_region *r;

	snprintf(small_fabric, sizeof(small_fabric), "unit-pool-small-%d", (int)getpid());
	vfab_region_unlink(small_fabric);
	assert_int_equal(vfab_region_create_pool(small_fabric, "/run/vfab/unit", SMALL_POOL, &r),
			 0);
	return r;
}

/*
 * In a child: CQs (rings of vfab_cq_ring_bytes(cap)) of every size from 1 entry up to the
 * whole pool, one of each per round, until a round gets none; the last
 * failure must be ENOMEM. Exits without freeing anything, as a process that
 * is killed. Exit 0 when it took the pool whole.
 */
static void take_everything(struct vfab_region *r)
{
	struct vfab_owner o = {.pid = getpid(), .ctx_id = 7, .hca = VFAB_MAX_HCAS};
	int got, last = 0, total = 0;

	do {
		got = 0;
		for (uint64_t cap = 1; vfab_cq_ring_bytes(cap) <= SMALL_POOL; cap *= 2) {
			int idx = vfab_cq_alloc(r, &o, (uint32_t)cap);

			if (idx >= 0)
				got++;
			else
				last = idx;
		}
		total += got;
	} while (got);
	/* Nothing of 64 bytes is left either: the pool is used up, not the slots. */
	_exit(last == -ENOMEM && total < (int)VFAB_MAX_CQS && vfab_pool_alloc(r, 64) == -ENOMEM
		  ? 0
		  : 1);
}

static void test_exhaust_then_reuse(void **state)
{
	struct vfab_region *r = small_region();
	struct vfab_owner o = {.pid = 4242, .ctx_id = 1, .hca = VFAB_MAX_HCAS};
	int status, reaped;
	int64_t off;
	pid_t child;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		take_everything(r);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	reaped = vfab_region_reap_pid(r, child);
	assert_true(reaped > 20);

	/* The idle fabric: the largest block, then rings of every size, again. */
	off = vfab_pool_alloc(r, 8u << 20);
	assert_true(off >= (int64_t)VFAB_POOL_OFF);
	vfab_pool_free(r, (uint64_t)off, 8u << 20);
	for (uint64_t cap = 1; vfab_cq_ring_bytes(cap) <= (8u << 20); cap *= 2) {
		int cq = vfab_cq_alloc(r, &o, (uint32_t)cap);
		int qp = vfab_qp_alloc(r, &o, (uint32_t)cap / 2 + 1, 1);

		assert_true(cq >= 0);
		vfab_cq_free(r, cq);
		assert_true(qp >= 0 || vfab_cq_ring_bytes(cap) >= (4u << 20));
		if (qp >= 0)
			vfab_qp_free(r, qp);
	}
	assert_int_equal(vfab_pool_free_bytes(r), SMALL_POOL);
	vfab_region_close(r);
}

/* Two 64-byte blocks split from one merge back when both are freed. */
static void test_split_merge(void **state)
{
	struct vfab_region *r = *state;
	uint64_t whole = vfab_pool_free_bytes(r);
	int64_t a, b, big;

	assert_int_equal(whole, VFAB_POOL_BYTES);
	a = vfab_pool_alloc(r, 64);
	b = vfab_pool_alloc(r, 33); /* rounds up to 64 */
	assert_true(a >= (int64_t)VFAB_POOL_OFF && b >= (int64_t)VFAB_POOL_OFF);
	assert_int_equal(a ^ b, 64); /* buddies */
	assert_int_equal(vfab_pool_free_bytes(r), whole - 128);
	vfab_pool_free(r, (uint64_t)a, 64);
	vfab_pool_free(r, (uint64_t)a, 64); /* twice: nothing more */
	assert_int_equal(vfab_pool_free_bytes(r), whole - 64);
	vfab_pool_free(r, (uint64_t)b, 33);
	assert_int_equal(vfab_pool_free_bytes(r), whole);
	/* Merged all the way: the whole pool is one block again. */
	big = vfab_pool_alloc(r, VFAB_POOL_BYTES);
	assert_int_equal(big, (int64_t)VFAB_POOL_OFF);
	assert_int_equal(vfab_pool_alloc(r, 64), -ENOMEM);
	vfab_pool_free(r, (uint64_t)big, VFAB_POOL_BYTES);
	assert_int_equal(vfab_pool_alloc(r, VFAB_POOL_BYTES + 1), -ENOMEM);
}

/* A pool of 8 MiB + 192 KiB: an 8 MiB block and three 64 KiB ones, all served. */
static void test_uneven_pool(void **state)
{
	struct vfab_region *r = small_region();
	int64_t blocks[4];

	(void)state;
	assert_int_equal(vfab_pool_free_bytes(r), SMALL_POOL);
	blocks[0] = vfab_pool_alloc(r, 8u << 20);
	for (int i = 1; i < 4; i++)
		blocks[i] = vfab_pool_alloc(r, 64u << 10);
	for (int i = 0; i < 4; i++)
		assert_true(blocks[i] >= (int64_t)VFAB_POOL_OFF);
	assert_int_equal(vfab_pool_alloc(r, 64), -ENOMEM);
	for (int i = 0; i < 4; i++)
		vfab_pool_free(r, (uint64_t)blocks[i], i ? 64u << 10 : 8u << 20);
	assert_int_equal(vfab_pool_free_bytes(r), SMALL_POOL);
	vfab_region_close(r);
}

/*
 * Anyone can write the region: forged free lists, pool bounds and ring
 * offsets. Nobody then writes outside the pool (here: into the header's
 * fabric name), and the pool keeps working or fails cleanly.
 */
static void test_forged_pool(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 99, .ctx_id = 1, .hca = VFAB_MAX_HCAS};
	char name[VFAB_NAME_MAX];
	int64_t a;
	int cq;

	memcpy(name, r->fabric, sizeof(name));
	/* Frees of what is no block of the pool do nothing. */
	vfab_pool_free(r, offsetof(struct vfab_region, fabric), 64);
	vfab_pool_free(r, r->total_size + 4096, 64);
	a = vfab_pool_alloc(r, 4096);
	assert_true(a > 0);
	vfab_pool_free(r, (uint64_t)a + 64, 4096); /* not aligned to its size */
	assert_memory_equal(r->fabric, name, sizeof(name));

	/* A CQ slot whose ring offset a user pointed at the header, then reaped. */
	cq = vfab_cq_alloc(r, &o, 1);
	assert_true(cq >= 0);
	r->cqs[cq].ring_off = offsetof(struct vfab_region, fabric);
	assert_int_equal(vfab_region_reap_pid(r, 99), 1);
	assert_memory_equal(r->fabric, name, sizeof(name));

	/* Free lists into the header and past the mapping; bounds rewritten. */
	r->shard[0].pool_free[6] = offsetof(struct vfab_region, fabric);
	r->shard[0].pool_free[7] = r->total_size + 128;
	r->pool_off = 0;
	r->pool_size = 1ull << 62;
	for (int i = 0; i < 4; i++) {
		int64_t b = vfab_pool_alloc(r, 64 << i);

		assert_true(b == -ENOMEM || (b >= (int64_t)VFAB_POOL_OFF &&
					     (uint64_t)b + (64u << i) <= r->total_size));
	}
	assert_memory_equal(r->fabric, name, sizeof(name));
}

/*
 * In a child with a mount namespace of its own and a tmpfs of `mib` MiB on
 * /dev/shm; exit 77 when that cannot be made (not root).
 */
static bool small_shm(unsigned kib)
{
	char opts[32];

	snprintf(opts, sizeof(opts), "size=%uk", kib);
	return unshare(CLONE_NEWNS) == 0 &&
	       mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
	       mount("tmpfs", "/dev/shm", "tmpfs", 0, opts) == 0;
}

static void shm_full_child(void)
{
	struct vfab_owner o = {.pid = getpid(), .ctx_id = 1, .hca = VFAB_MAX_HCAS};
	struct vfab_region *r;
	int n = 0, cq;
	int64_t off;

	if (!small_shm((unsigned)(VFAB_REGION_TOPO_BYTES >> 11)))
		_exit(77);
	/* No room for the topology (half of it): the region is not made, and nothing is left. */
	if (vfab_region_create_pool("unit-pool-full", "/run/vfab/unit", 64u << 20, &r) != -ENOSPC ||
	    access("/dev/shm/vfab-unit-pool-full", F_OK) == 0)
		_exit(1);
	if (umount("/dev/shm") ||
	    !small_shm((unsigned)((VFAB_REGION_TOPO_BYTES + sizeof(struct vfab_shard)) >> 10) +
		       3072))
		_exit(77);
	/* The header fits; the pool of 64 MiB does not, 3 MiB of it does. */
	if (vfab_region_create_pool("unit-pool-full", "/run/vfab/unit", 64u << 20, &r))
		_exit(2);
	if (vfab_pool_alloc(r, 8u << 20) != -ENOMEM)
		_exit(3);
	while ((off = vfab_pool_alloc(r, 256u << 10)) > 0)
		n++;
	if (off != -ENOMEM || n < 4)
		_exit(4);
	while ((cq = vfab_cq_alloc(r, &o, 64)) >= 0)
		n++;
	_exit(cq == -ENOMEM ? 0 : 5);
}

static void test_shm_full(void **state)
{
	int status;
	pid_t child;

	(void)state;
	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		shm_full_child();
	assert_int_equal(waitpid(child, &status, 0), child);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 77)
		skip();			   /* no mount namespace of our own */
	assert_false(WIFSIGNALED(status)); /* SIGBUS is what a sparse file gave */
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_exhaust_then_reuse, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_split_merge, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_uneven_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_forged_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_shm_full, setup, teardown),
	};

	atexit(cleanup_small);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
