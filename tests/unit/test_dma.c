/* SPDX-License-Identifier: MIT */
/*
 * provider/vfab_dma.c against a real second process (a forked child whose
 * copy of our buffers sits at the same addresses): a split write and read
 * land every byte, errors of a range reach the caller, a child of fork()
 * runs split copies with engines of its own, and the pool runs in-process
 * copies too.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_dma.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (4u << 20)
#define CHUNK (64u << 10)

static uint8_t *target; /* the child's copy is the remote memory */
static uint8_t *source, *back;
static pid_t child;

static int start_child(void **state)
{
	(void)state;
	memset(target, 0, LEN);
	child = fork();
	if (child < 0)
		return -1;
	if (child == 0) {
		pause();
		_exit(0);
	}
	return 0;
}

static int stop_child(void **state)
{
	(void)state;
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 12));
}

static void round_trip(pid_t pid, unsigned engines, size_t off, size_t n, unsigned seed)
{
	struct vfab_peer p = {.pid = pid, .memfd = -1};
	struct iovec src = {source, n}, dst = {target + off, n}, got = {back, n};

	fill(source, n, seed);
	memset(back, 0, n);
	assert_int_equal(vfab_dma_write(&p, engines, n, &src, 1, &dst, 1), 0);
	assert_int_equal(vfab_dma_read(&p, engines, n, &got, 1, &dst, 1), 0);
	assert_memory_equal(back, source, n);
}

static void test_split_round_trip(void **state)
{
	(void)state;
	round_trip(child, 2, 0, LEN, 1);
	round_trip(child, 4, 8, LEN - 8, 2);
	round_trip(child, 3, 4000, 5 * CHUNK + 17, 3);
	round_trip(child, 2, 0, 2 * CHUNK - 1, 4); /* too small: one copy */
}

/* Gathered sources, scattered destinations: the ranges cross segments. */
static void test_segments(void **state)
{
	struct vfab_peer p = {.pid = child, .memfd = -1};
	struct iovec src[3] = {{source, 100000}, {source + 200000, 300000}, {source + 600000, 24}};
	struct iovec dst[2] = {{target + 8, 250000}, {target + 1000000, 150024}};
	struct iovec got = {back, 400024}, rd[2] = {dst[0], dst[1]};

	(void)state;
	fill(source, 700000, 5);
	assert_int_equal(vfab_dma_write(&p, 4, 400024, src, 3, dst, 2), 0);
	assert_int_equal(vfab_dma_read(&p, 4, 400024, &got, 1, rd, 2), 0);
	assert_memory_equal(back, source, 100000);
	assert_memory_equal(back + 100000, source + 200000, 300000);
	assert_memory_equal(back + 400000, source + 600000, 24);
}

/* A range that is not mapped fails the whole transfer; a gone peer is ESRCH. */
static void test_errors(void **state)
{
	struct vfab_peer p = {.pid = child, .memfd = -1};
	uint8_t *hole = mmap(NULL, LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec src = {source, LEN}, dst = {hole, LEN};

	(void)state;
	assert_true(hole != MAP_FAILED);
	/* The child never saw this mapping: its middle pages are not there. */
	assert_int_equal(vfab_dma_write(&p, 4, LEN, &src, 1, &dst, 1), -EFAULT);
	munmap(hole, LEN);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	dst.iov_base = target;
	assert_int_equal(vfab_dma_write(&p, 4, LEN, &src, 1, &dst, 1), -ESRCH);
	child = fork(); /* for stop_child */
	if (child == 0)
		_exit(0);
}

/* A child of fork() copies with engines of its own, then its parent again. */
static void test_after_fork(void **state)
{
	pid_t sub, peer = child;
	int st;

	(void)state;
	round_trip(peer, 2, 0, LEN, 6);
	sub = fork();
	assert_true(sub >= 0);
	if (sub == 0) {
		struct vfab_peer p = {.pid = peer, .memfd = -1};
		struct iovec src = {source, LEN}, dst = {target, LEN}, got = {back, LEN};

		fill(source, LEN, 7);
		if (vfab_dma_write(&p, 2, LEN, &src, 1, &dst, 1) ||
		    vfab_dma_read(&p, 2, LEN, &got, 1, &dst, 1) || memcmp(back, source, LEN))
			_exit(1);
		_exit(0);
	}
	assert_int_equal(waitpid(sub, &st, 0), sub);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	round_trip(peer, 2, 0, LEN, 8);
}

static void test_self(void **state)
{
	struct vfab_peer self = {.pid = getpid(), .memfd = -1, .self = true};
	struct iovec src = {source, LEN}, dst = {back, LEN};

	(void)state;
	fill(source, LEN, 9);
	memset(back, 0, LEN);
	assert_int_equal(vfab_dma_write(&self, 2, LEN, &src, 1, &dst, 1), 0);
	assert_memory_equal(back, source, LEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_split_round_trip, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_segments, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_errors, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_after_fork, start_child, stop_child),
	    cmocka_unit_test(test_self),
	};

	setenv("VFAB_COPY_ENGINES", "4", 1);
	setenv("VFAB_COPY_SPLIT_MIN", "65536", 1);
	assert_int_equal(vfab_dma_configure(1), 4);
	assert_int_equal(vfab_dma_split_from_bytes, 2 * CHUNK);
	target = calloc(1, LEN);
	source = calloc(1, LEN);
	back = calloc(1, LEN);
	if (!target || !source || !back)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
