/* SPDX-License-Identifier: MIT */
/*
 * The shared region: create/open, slot tables, stale handles, the ring pool,
 * reaping by pid, robust locks. Each test gets its own /dev/shm file, removed
 * by the teardown (which cmocka runs even when the test fails) and again at
 * exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fabric/region.h"

#define SHM_FIXTURE_PREFIX "unit-region"
#include "tests/unit/shm_region_fixture.h"

static char junk_path[128];

static void cleanup_files(void)
{
	vfab_region_unlink(fabric);
	if (junk_path[0])
		unlink(junk_path);
}

static int setup(void **state)
{
	return shm_setup(state);
}

static int teardown(void **state)
{
	shm_teardown(state);
	cleanup_files();
	return 0;
}

static void test_create_open(void **state)
{
	struct vfab_region *r = *state, *r2, *r3;
	char path[256];
	int fd;

	assert_int_equal(r->magic, VFAB_REGION_MAGIC);
	assert_string_equal(r->fabric, fabric);
	assert_string_equal(r->rundir, "/run/vfab/unit");
	assert_int_equal(r->ready, 0);
	assert_int_equal(vfab_region_create(fabric, "/x", &r3), -EEXIST);

	assert_int_equal(vfab_region_path(fabric, path, sizeof(path)), 0);
	assert_int_equal(vfab_region_open(path, &r2), 0);
	/* Two mappings, one memory. */
	r->nnodes = 3;
	assert_int_equal(r2->nnodes, 3);
	vfab_region_close(r2);

	snprintf(junk_path, sizeof(junk_path), "/dev/shm/unit-region-junk-%d", (int)getpid());
	fd = open(junk_path, O_CREAT | O_RDWR | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, sizeof(struct vfab_region)), 0);
	close(fd);
	assert_int_equal(vfab_region_open(junk_path, &r2), -EPROTO);
	assert_int_equal(vfab_region_open("/dev/shm/unit-region-none", &r2), -ENOENT);
}

/* The ring pool's size: per HCA, with a floor and a ceiling, or the config's. */
static void test_pool_bytes(void **state)
{
	struct vfab_region *r = *state;

	assert_int_equal(r->pool_size, VFAB_POOL_BYTES_MIN);
	assert_int_equal(vfab_pool_bytes(1, 0), VFAB_POOL_BYTES_MIN);
	assert_int_equal(vfab_pool_bytes(2, 0), 2 * VFAB_POOL_BYTES_PER_HCA);
	assert_int_equal(vfab_pool_bytes(16, 0), 16 * VFAB_POOL_BYTES_PER_HCA);
	assert_int_equal(vfab_pool_bytes(100000, 0), VFAB_POOL_BYTES_MAX);
	assert_int_equal(vfab_pool_bytes(16, 256), 256ull << 20);
	assert_int_equal(vfab_pool_bytes(1, 1u << 20), VFAB_POOL_BYTES_MAX);
}

static void test_slots(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 42, .ctx_id = 1};
	struct vfab_qp_slot *qp;
	int pd, mr, qpi, i;

	pd = vfab_pd_alloc(r, &o, 0);
	assert_true(pd >= 0);
	assert_int_equal(r->pds[pd].owner.pid, 42);
	mr = vfab_mr_alloc(r, &o);
	assert_true(mr >= 0);
	assert_ptr_equal(vfab_mr_lookup(r, r->mrs[mr].key), &r->mrs[mr]);
	assert_null(vfab_mr_lookup(r, r->mrs[mr].key ^ 0x1));
	assert_null(vfab_mr_lookup(r, 0xffffffffu));

	qpi = vfab_qp_alloc(r, &o, 16, 2);
	assert_true(qpi >= 0);
	qp = &r->qps[qpi];
	assert_true(qp->qpn > 1);
	assert_int_equal(qp->rq.cap, 16);
	assert_int_equal(qp->rq.max_sge, 2);
	assert_true(qp->rq.ring_off >= r->pool_off);
	qp->hca = 5;
	assert_ptr_equal(vfab_qp_lookup(r, 5, qp->qpn), qp);
	assert_null(vfab_qp_lookup(r, 4, qp->qpn));

	vfab_pd_free(r, pd);
	assert_int_equal(r->pds[pd].state, VFAB_SLOT_FREE);
	/* A device that gave all it gives says ENOMEM. */
	r->hcas[0].limit[VFAB_OBJ_PD] = 100;
	for (i = 0; i < 100; i++)
		assert_true(vfab_pd_alloc(r, &o, 0) >= 0);
	assert_int_equal(vfab_pd_alloc(r, &o, 0), -ENOMEM);
}

/*
 * Limits are per device and a ConnectX's whatever the fabric's size (issue
 * 27: they were the tables split between the HCAs, 256 QPs on 64 nodes);
 * fabric.limits lowers them; one device's exhaustion leaves another its own.
 */
static void test_device_limits(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o0 = {.pid = 42, .ctx_id = 1, .hca = 0};
	struct vfab_owner o1 = {.pid = 43, .ctx_id = 2, .hca = 1};
	const uint32_t limit = 300;
	int first = -1, i, slot;

	r->nhcas = 2;
	assert_int_equal(vfab_dev_limit(r, 0, VFAB_OBJ_QP), 1u << 18);
	r->nhcas = 64;
	assert_int_equal(vfab_dev_limit(r, 63, VFAB_OBJ_QP), 1u << 18);
	assert_int_equal(vfab_dev_limit(r, 63, VFAB_OBJ_MR), 1u << 24);
	assert_int_equal(vfab_dev_limit(r, 63, VFAB_OBJ_CQ), 1u << 24);
	assert_int_equal(vfab_dev_limit(r, 63, VFAB_OBJ_PD), 1u << 24);
	assert_int_equal(vfab_dev_limit(r, 63, VFAB_OBJ_SRQ), 1u << 23);
	r->hcas[0].limit[VFAB_OBJ_PD] = limit;
	assert_int_equal(vfab_dev_limit(r, 0, VFAB_OBJ_PD), limit);
	for (i = 0; i < (int)limit; i++) {
		slot = vfab_pd_alloc(r, &o0, 0);
		assert_true(slot >= 0);
		if (first < 0)
			first = slot;
	}
	assert_int_equal(vfab_pd_alloc(r, &o0, 0), -ENOMEM);
	assert_int_equal(atomic_load(&r->shard[0].used[0][VFAB_OBJ_PD]), limit);
	/* The other device is untouched by the first one's exhaustion. */
	slot = vfab_pd_alloc(r, &o1, 1);
	assert_true(slot >= 0);
	/* A freed object is given back once, however often it is freed. */
	vfab_pd_free(r, first);
	vfab_pd_free(r, first);
	assert_int_equal(atomic_load(&r->shard[0].used[0][VFAB_OBJ_PD]), limit - 1);
	assert_true(vfab_pd_alloc(r, &o0, 0) >= 0);
	assert_int_equal(vfab_pd_alloc(r, &o0, 0), -ENOMEM);
}

static long long shm_bytes(void)
{
	char path[256];
	struct stat st;

	vfab_region_path(fabric, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	return (long long)st.st_blocks * 512;
}

/* A large chunk's memory goes back to the host once it is freed (finding 8). */
static void test_pool_gives_back(void **state)
{
	struct vfab_region *r = *state;
	const uint64_t bytes = 4u << 20;
	long long before, touched;
	int64_t off;

	before = shm_bytes();
	off = vfab_pool_alloc(r, bytes);
	assert_true(off > 0);
	memset(vfab_at(r, (uint64_t)off), 0x5a, bytes);
	touched = shm_bytes();
	assert_true(touched - before >= (long long)bytes);
	vfab_pool_free(r, (uint64_t)off, bytes);
	assert_true(touched - shm_bytes() >= (long long)bytes - 8192);
	/* Reused: zeroed again and whole. */
	assert_int_equal(vfab_pool_alloc(r, bytes), off);
}

static void test_stale_handles(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 42, .ctx_id = 1};
	uint32_t old_key, old_qpn;
	int mr, mr2, qp, qp2;

	int mrs[VFAB_SLOT_REUSE_MIN - 2], i;

	/* Below VFAB_SLOT_REUSE_MIN slots a table grows: a freed slot is not taken at once. */
	mr = vfab_mr_alloc(r, &o);
	old_key = r->mrs[mr].key;
	vfab_mr_free(r, mr);
	assert_null(vfab_mr_lookup(r, old_key));
	mr2 = vfab_mr_alloc(r, &o);
	assert_int_not_equal(mr2, mr);
	assert_null(vfab_mr_lookup(r, old_key));
	assert_non_null(vfab_mr_lookup(r, r->mrs[mr2].key));
	/* From then on freed slots come back, next fit, under new keys. */
	for (i = 0; i < VFAB_SLOT_REUSE_MIN - 2; i++) /* the table's top reaches the minimum */
		mrs[i] = vfab_mr_alloc(r, &o);
	old_key = r->mrs[mrs[10]].key;
	vfab_mr_free(r, mrs[10]);
	vfab_mr_free(r, mrs[20]);
	assert_int_equal(vfab_mr_alloc(r, &o), mr); /* the lowest free one, freed first of all */
	assert_int_equal(vfab_mr_alloc(r, &o), mrs[10]);
	assert_int_not_equal(r->mrs[mrs[10]].key, old_key);
	assert_null(vfab_mr_lookup(r, old_key));
	assert_int_equal(vfab_mr_alloc(r, &o), mrs[20]);
	/* A key past the table's top names nothing, and reads nothing there. */
	assert_null(vfab_mr_lookup(r, (vfab_shard_top(r, VFAB_OBJ_MR, 0) + 5) << 8));

	qp = vfab_qp_alloc(r, &o, 4, 1);
	r->qps[qp].hca = 0;
	old_qpn = r->qps[qp].qpn;
	assert_int_equal(vfab_qpn_slot(old_qpn), qp);
	vfab_qp_free(r, qp);
	assert_null(vfab_qp_lookup(r, 0, old_qpn));
	qp2 = vfab_qp_alloc(r, &o, 4, 1);
	r->qps[qp2].hca = 0;
	assert_int_not_equal(r->qps[qp2].qpn, old_qpn);
	assert_null(vfab_qp_lookup(r, 0, old_qpn));
	assert_non_null(vfab_qp_lookup(r, 0, r->qps[qp2].qpn));
	assert_null(vfab_qp_lookup(r, 0, (uint32_t)vfab_shard_top(r, VFAB_OBJ_QP, 0) + 1));
}

/*
 * A slot's QPN generation skips 0 when it wraps: no QPN is below
 * 1 << VFAB_QPN_SLOT_BITS, where WQ numbers (SRQ slots) lie.
 */
static void test_qpn_generation(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 42, .ctx_id = 1};
	int qp = -1, again;

	while (vfab_shard_top(r, VFAB_OBJ_QP, 0) < VFAB_SLOT_REUSE_MIN) {
		qp = vfab_qp_alloc(r, &o, 1, 1);
		assert_true(qp >= 0);
		assert_true(r->qps[qp].qpn >> VFAB_QPN_SLOT_BITS == 1);
	}
	vfab_qp_free(r, qp);
	/* As if the slot had been taken 15 times since its first QPN. */
	r->qps[qp].qpn = 0xfu << VFAB_QPN_SLOT_BITS | (uint32_t)qp;
	again = vfab_qp_alloc(r, &o, 1, 1);
	assert_int_equal(again, qp);
	assert_int_equal(r->qps[qp].qpn, 1u << VFAB_QPN_SLOT_BITS | (uint32_t)qp);
}

/* Tables of ConnectX size cost the file only the pages of the slots handed out. */
static void test_tables_on_demand(void **state)
{
	struct vfab_region *r = *state;
	struct vfab_owner o = {.pid = 42, .ctx_id = 1};
	long long before = shm_bytes(), after;
	int i;

	assert_true(sizeof(struct vfab_region) > (1ull << 30));
	assert_true(before < (64ll << 20));
	for (i = 0; i < 5000; i++)
		assert_true(vfab_qp_alloc(r, &o, 0, 1) >= 0);
	after = shm_bytes();
	assert_true(after - before >= 5000ll * (long long)sizeof(struct vfab_qp_slot));
	assert_true(after - before < 5000ll * (long long)sizeof(struct vfab_qp_slot) + (1 << 20));
	assert_int_equal(vfab_shard_top(r, VFAB_OBJ_QP, 0), 5000);
	assert_int_equal(atomic_load(&r->shard[0].used[0][VFAB_OBJ_QP]), 5000);
}

static void test_pool(void **state)
{
	struct vfab_region *r = *state;
	int64_t a, b, c;
	uint8_t *p;

	a = vfab_pool_alloc(r, 100); /* class 128 */
	b = vfab_pool_alloc(r, 4096);
	assert_true(a > 0 && b > 0 && a != b);
	assert_true((uint64_t)a >= r->pool_off && (uint64_t)b >= r->pool_off);
	assert_int_equal(b % 4096, 0);
	p = vfab_at(r, (uint64_t)a);
	memset(p, 0xab, 128);
	vfab_pool_free(r, (uint64_t)a, 100);
	c = vfab_pool_alloc(r, 128); /* same class: the freed chunk comes back, zeroed */
	assert_int_equal(c, a);
	for (int i = 0; i < 128; i++)
		assert_int_equal(p[i], 0);
	c = vfab_pool_alloc(r, 64); /* other class: a fresh chunk */
	assert_true(c != a && c != b);
	assert_int_equal(vfab_pool_alloc(r, VFAB_POOL_BYTES + 1), -ENOMEM);
}

static void alloc_all_kinds(struct vfab_region *r, int32_t pid, int idx[5])
{
	struct vfab_owner o = {.pid = pid, .ctx_id = (uint32_t)pid};

	idx[0] = vfab_pd_alloc(r, &o, 0);
	idx[1] = vfab_mr_alloc(r, &o);
	idx[2] = vfab_cq_alloc(r, &o, 64);
	idx[3] = vfab_srq_alloc(r, &o, 32, 1, 0);
	idx[4] = vfab_qp_alloc(r, &o, 32, 1);
	for (int i = 0; i < 5; i++)
		assert_true(idx[i] >= 0);
}

static void test_reap_pid(void **state)
{
	struct vfab_region *r = *state;
	int a[5], b[5], again[5];
	uint64_t cq_ring;

	alloc_all_kinds(r, 100, a);
	alloc_all_kinds(r, 200, b);
	cq_ring = r->cqs[a[2]].ring_off;
	assert_int_equal(vfab_region_reap_pid(r, 100), 5);
	assert_int_equal(r->pds[a[0]].state, VFAB_SLOT_FREE);
	assert_int_equal(r->mrs[a[1]].state, VFAB_SLOT_FREE);
	assert_int_equal(r->cqs[a[2]].state, VFAB_SLOT_FREE);
	assert_int_equal(r->srqs[a[3]].state, VFAB_SLOT_FREE);
	assert_int_equal(r->qps[a[4]].state, VFAB_SLOT_FREE);
	assert_int_equal(r->pds[b[0]].state, VFAB_SLOT_USED);
	assert_int_equal(r->mrs[b[1]].state, VFAB_SLOT_USED);
	assert_int_equal(r->cqs[b[2]].state, VFAB_SLOT_USED);
	assert_int_equal(r->srqs[b[3]].state, VFAB_SLOT_USED);
	assert_int_equal(r->qps[b[4]].state, VFAB_SLOT_USED);
	assert_int_equal(vfab_region_reap_pid(r, 100), 0);
	/* The reaped rings went back to the pool. */
	alloc_all_kinds(r, 300, again);
	assert_int_equal(r->cqs[again[2]].ring_off, cq_ring);
	assert_int_equal(vfab_region_reap_pid(r, 200), 5);
	assert_int_equal(vfab_region_reap_pid(r, 300), 5);
}

static void test_robust_lock(void **state)
{
	struct vfab_region *r = *state;
	int status;
	pid_t child = fork();

	assert_true(child >= 0);
	if (child == 0) {
		vfab_lock(&r->shard[0].lock);
		_exit(0); /* dies holding the region lock */
	}
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(vfab_lock(&r->shard[0].lock), 0);
	vfab_unlock(&r->shard[0].lock);
	assert_true(vfab_pd_alloc(r, &(struct vfab_owner){.pid = 1}, 0) >= 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_create_open, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_bytes, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_slots, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_device_limits, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool_gives_back, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_stale_handles, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_qpn_generation, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_tables_on_demand, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_pool, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_reap_pid, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_robust_lock, setup, teardown),
	};

	atexit(cleanup_files);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
