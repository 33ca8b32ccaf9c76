/* SPDX-License-Identifier: MIT */
/*
 * Shards (fabric/region.h "Shards"): a user other than the region's owner
 * gets a file of its own from vfab_shard_create, writes its objects there
 * (slots of its part of each table, its pool), cannot map another's, and
 * the owner (vfabd) sees and reaps them. Needs root (a child takes another
 * uid); skipped otherwise.
 */
#include <errno.h>
#include <grp.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/paths.h"
#include "fabric/region.h"

#define SHM_FIXTURE_PREFIX "unit-shard"
#include "tests/unit/shm_region_fixture.h"

#define USER_UID 64011u /* any uid without a user: only the kernel's checks matter */
#define USER_GID 64011u

/* What the child reports: the slot it allocated, its shard, and what it could not do. */
struct report {
	int qp, shard, pd, join_before, map0, pool_ok;
};

/* The child, as USER_UID: opens the region read-only, joins its shard, makes a QP and a PD. */
static void child(const char *path, int fd)
{
	struct vfab_owner o = {.pid = getpid(), .ctx_id = 1, .hca = 0};
	struct report rep = {-1, -1, -1, 0, 0, 0};
	struct vfab_region *r;

	if (setgroups(0, NULL) || setresgid(USER_GID, USER_GID, USER_GID) ||
	    setresuid(USER_UID, USER_UID, USER_UID) || vfab_region_open(path, &r))
		_exit(2);
	rep.join_before = r->local.own; /* VFAB_SHARDS: none until it joins */
	if (vfab_region_join(r))
		_exit(3);
	rep.shard = (int)r->local.own;
	rep.qp = vfab_qp_alloc(r, &o, 4, 1);
	rep.pd = vfab_pd_alloc(r, &o, 0);
	rep.map0 = vfab_region_map_shard(r, 0); /* the owner's: -EACCES */
	rep.pool_ok = vfab_pool_free_bytes(r) > 0;
	if (write(fd, &rep, sizeof(rep)) != sizeof(rep))
		_exit(4);
	_exit(0);
}

/* Runs child() as USER_UID and returns its report. */
static struct report run_child(const char *path, pid_t *pid)
{
	struct report rep;
	int fds[2], status;

	assert_int_equal(pipe(fds), 0);
	*pid = fork();
	assert_true(*pid >= 0);
	if (*pid == 0)
		child(path, fds[1]);
	close(fds[1]);
	assert_int_equal(read(fds[0], &rep, sizeof(rep)), sizeof(rep));
	close(fds[0]);
	assert_int_equal(waitpid(*pid, &status, 0), *pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	return rep;
}

static void test_user_shard(void **state)
{
	struct vfab_region *r = *state;
	char path[256], spath[300];
	struct report rep;
	struct stat st;
	pid_t pid;
	int s;

	if (geteuid() != 0)
		skip();
	assert_int_equal(vfab_region_path(fabric, path, sizeof(path)), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644); /* the topology is the owner's alone */
	s = vfab_shard_create(r, USER_UID, USER_GID);
	assert_true(s >= 1 && s < VFAB_SHARDS);
	assert_int_equal(vfab_shard_create(r, USER_UID, USER_GID), s); /* one per user */
	assert_int_equal(vfab_shard_path(path, USER_UID, spath, sizeof(spath)), 0);
	assert_int_equal(stat(spath, &st), 0);
	assert_int_equal(st.st_uid, USER_UID);
	assert_int_equal(st.st_mode & 0777, 0600);

	rep = run_child(path, &pid);
	assert_int_equal(rep.join_before, VFAB_SHARDS);
	assert_int_equal(rep.shard, s);
	assert_int_equal(rep.map0, -EACCES);
	assert_true(rep.pool_ok);
	/* Its slots are its shard's part of the tables, and the owner sees them. */
	assert_int_equal(vfab_shard_of(VFAB_OBJ_QP, (uint32_t)rep.qp), (uint32_t)s);
	assert_int_equal(vfab_shard_of(VFAB_OBJ_PD, (uint32_t)rep.pd), (uint32_t)s);
	assert_true(vfab_slot_live(r, VFAB_OBJ_QP, (uint32_t)rep.qp));
	assert_non_null(vfab_qp_lookup(r, 0, r->qps[rep.qp].qpn));
	assert_int_equal(vfab_slot_next(r, VFAB_OBJ_QP, 0), (uint32_t)rep.qp);
	/* Reaped as vfabd reaps a dead process's objects: into that shard's pool. */
	assert_int_equal(vfab_region_reap_pid(r, pid), 2);
	assert_null(vfab_qp_lookup(r, 0, r->qps[rep.qp].qpn));
	/* The owner's own objects stay in shard 0. */
	assert_int_equal(vfab_shard_of(VFAB_OBJ_QP, (uint32_t)vfab_qp_alloc(
							r, &(struct vfab_owner){.pid = 1}, 4, 1)),
			 0);
}

/*
 * An unused shard is dropped (its file goes) and made again at the user's
 * next start; a process that mapped the dropped file maps the new one.
 */
static void test_drop(void **state)
{
	struct vfab_region *r = *state, *peer;
	char path[256], spath[300];
	struct report rep;
	uint32_t gen;
	pid_t pid;
	int s;

	if (geteuid() != 0)
		skip();
	assert_int_equal(vfab_region_path(fabric, path, sizeof(path)), 0);
	assert_int_equal(vfab_shard_path(path, USER_UID, spath, sizeof(spath)), 0);
	s = vfab_shard_create(r, USER_UID, USER_GID);
	assert_true(s >= 1);
	rep = run_child(path, &pid);
	assert_false(vfab_shard_empty(r, (uint32_t)s));
	/* A second mapping (a root peer's) reaches the user's QP. */
	assert_int_equal(vfab_region_open(path, &peer), 0);
	assert_non_null(vfab_qp_lookup(peer, 0, r->qps[rep.qp].qpn));
	assert_int_equal(vfab_region_reap_pid(r, pid), 2);
	assert_true(vfab_shard_empty(r, (uint32_t)s));
	gen = atomic_load(&r->shard_gen[s]);
	vfab_shard_drop(r, (uint32_t)s);
	assert_int_equal(access(spath, F_OK), -1);
	assert_int_equal(atomic_load(&r->shard_on[s]), 0);
	/* The user comes back: a new file, the same index, the next generation. */
	assert_int_equal(vfab_shard_create(r, USER_UID, USER_GID), s);
	assert_int_equal(atomic_load(&r->shard_gen[s]), gen + 1);
	rep = run_child(path, &pid);
	assert_int_equal(rep.shard, s);
	assert_non_null(vfab_qp_lookup(r, 0, r->qps[rep.qp].qpn));
	/* The peer still maps the dropped file: a lookup maps the new one. */
	assert_non_null(vfab_qp_lookup(peer, 0, r->qps[rep.qp].qpn));
	vfab_region_close(peer);
	assert_int_equal(vfab_region_reap_pid(r, pid), 2);
}

/* Slot ranges: shard 0 the lower half, each other a 32nd above, none overlapping. */
static void test_ranges(void **state)
{
	const struct vfab_region *r = (const struct vfab_region *)(uintptr_t)0x100000000ull;

	(void)state;
	/* An address in a slot names that slot's shard; outside the tables, none. */
	assert_int_equal(vfab_shard_of_ptr(r, &r->nodes[0]), VFAB_SHARDS);
	assert_int_equal(vfab_shard_of_ptr(r, &r->qps[5].rq), 0);
	assert_int_equal(vfab_shard_of_ptr(r, &r->srqs[VFAB_MAX_SRQS - 1].tm), VFAB_SHARDS - 1);
	for (int k = 0; k < VFAB_OBJ_KINDS; k++) {
		enum vfab_obj kind = (enum vfab_obj)k;

		assert_int_equal(vfab_shard_lo(kind, 0), 0);
		assert_int_equal(vfab_shard_lo(kind, 1), vfab_table_size(kind) / 2);
		assert_int_equal(vfab_shard_lo(kind, VFAB_SHARDS), vfab_table_size(kind));
		for (uint32_t s = 0; s < VFAB_SHARDS; s++) {
			assert_int_equal(vfab_shard_of(kind, vfab_shard_lo(kind, s)), s);
			assert_int_equal(vfab_shard_of(kind, vfab_shard_lo(kind, s + 1) - 1), s);
			assert_int_equal(
			    vfab_shard_of_ptr(r, (const char *)r + vfab_table_off(kind) +
						     (size_t)(vfab_shard_lo(kind, s + 1) - 1) *
							 vfab_table_stride(kind)),
			    s);
			/* Page-aligned parts: each is mapped from its own file. */
			assert_int_equal((vfab_table_off(kind) + (size_t)vfab_shard_lo(kind, s) *
								     vfab_table_stride(kind)) %
					     4096,
					 0);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranges),
	    cmocka_unit_test_setup_teardown(test_user_shard, shm_setup, shm_teardown),
	    cmocka_unit_test_setup_teardown(test_drop, shm_setup, shm_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
