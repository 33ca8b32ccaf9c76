/* SPDX-License-Identifier: MIT */
/*
 * The transfers of provider/vfab_xfer.c against a real second process (a
 * forked child, whose copy of this program's buffers sits at the same
 * addresses): writes and reads through process_vm_writev/readv and through
 * /proc/<pid>/mem, the switch between them by size, chains of segments,
 * in-process copies, and the errors a requester turns into completion
 * statuses (a range that is not mapped, a peer that is gone).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "provider/vfab_xfer.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#define BIG (3 * VFAB_XFER_MEM_MAX) /* past the /proc/<pid>/mem bound */

static uint8_t target[BIG]; /* the child's copy is the remote memory */
static uint8_t source[BIG];

struct child {
	struct vfab_peer peer;
	int memfd; /* opened even when a test then leaves it out */
};

static int start_child(void **state)
{
	static struct child c;
	pid_t pid;

	memset(target, 0, sizeof(target));
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		pause();
		_exit(0);
	}
	c.memfd = vfab_xfer_open(pid);
	c.peer.pid = pid;
	c.peer.memfd = c.memfd;
	c.peer.self = false;
	*state = &c;
	return c.memfd >= 0 ? 0 : -1;
}

static int stop_child(void **state)
{
	struct child *c = *state;

	kill(c->peer.pid, SIGKILL);
	waitpid(c->peer.pid, NULL, 0);
	close(c->memfd);
	return 0;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31u + i * 7u + (i >> 8));
}

/* Writes n bytes at off in the child, reads them back, compares. */
static void round_trip(const struct vfab_peer *p, size_t off, size_t n, unsigned int seed)
{
	uint8_t back[BIG];
	struct iovec src = {source, n}, dst = {target + off, n}, got = {back, n};

	fill(source, n, seed);
	assert_int_equal(vfab_xfer_write(p, &src, 1, &dst, 1), 0);
	assert_int_equal(vfab_xfer_read(p, &got, 1, &dst, 1), 0);
	assert_memory_equal(back, source, n);
	/* The child's copy changed, not ours. */
	assert_int_equal(target[off], 0);
}

static void test_small_through_proc_mem(void **state)
{
	struct child *c = *state;

	round_trip(&c->peer, 0, 8, 1);
	round_trip(&c->peer, 100, 64, 2);
	round_trip(&c->peer, 4000, VFAB_XFER_MEM_MAX, 3); /* across a page */
}

static void test_large_and_without_proc_mem(void **state)
{
	struct child *c = *state;
	struct vfab_peer pvm = c->peer;

	round_trip(&c->peer, 0, BIG, 4);
	pvm.memfd = -1;
	round_trip(&pvm, 8, 8, 5);
	round_trip(&pvm, 0, BIG, 6);
}

/* Gathered sources into one remote range: both paths. */
static void test_gather(void **state)
{
	struct child *c = *state;
	struct iovec src[3] = {{source, 10}, {source + 100, 30}, {source + 500, 24}};
	struct iovec dst = {target + 64, 64}, got;
	uint8_t back[64], want[64];

	fill(source, 1024, 7);
	memcpy(want, source, 10);
	memcpy(want + 10, source + 100, 30);
	memcpy(want + 40, source + 500, 24);
	for (int pass = 0; pass < 2; pass++) {
		struct vfab_peer p = c->peer;

		if (pass)
			p.memfd = -1;
		assert_int_equal(vfab_xfer_write(&p, src, 3, &dst, 1), 0);
		got.iov_base = back;
		got.iov_len = sizeof(back);
		memset(back, 0, sizeof(back));
		assert_int_equal(vfab_xfer_read(&p, &got, 1, &dst, 1), 0);
		assert_memory_equal(back, want, sizeof(want));
	}
}

/* A chain: several remote ranges, in order, one call. */
static void test_writev_chain(void **state)
{
	struct child *c = *state;
	struct iovec src[2] = {{source, 100}, {source + 1000, 60}};
	struct iovec dst[3] = {{target + 0, 40}, {target + 8192, 100}, {target + 300, 20}};
	struct iovec got;
	uint8_t back[100];

	fill(source, 2048, 9);
	assert_int_equal(vfab_xfer_writev(c->peer.pid, src, 2, dst, 3), 0);
	got.iov_base = back;
	got.iov_len = 40;
	dst[0].iov_len = 40;
	dst[0].iov_base = target;
	assert_int_equal(vfab_xfer_read(&c->peer, &got, 1, &dst[0], 1), 0);
	assert_memory_equal(back, source, 40);
	got.iov_len = 60;
	dst[1].iov_base = target + 8192;
	dst[1].iov_len = 60;
	assert_int_equal(vfab_xfer_read(&c->peer, &got, 1, &dst[1], 1), 0);
	assert_memory_equal(back, source + 40, 60);
	dst[2].iov_base = target + 8252;
	dst[2].iov_len = 40;
	got.iov_len = 40;
	assert_int_equal(vfab_xfer_read(&c->peer, &got, 1, &dst[2], 1), 0);
	assert_memory_equal(back, source + 1000, 40);
	/* Unequal totals are refused before anything moves. */
	dst[0].iov_len = 1;
	assert_int_equal(vfab_xfer_writev(c->peer.pid, src, 2, dst, 1), -EINVAL);
}

static void test_unmapped_is_efault(void **state)
{
	struct child *c = *state;
	struct vfab_peer pvm = c->peer;
	/* Mapped after the fork: the child never had it. */
	void *hole = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct iovec src = {source, 8}, dst;

	assert_ptr_not_equal(hole, MAP_FAILED);
	dst.iov_base = hole;
	dst.iov_len = 8;
	assert_int_equal(vfab_xfer_write(&c->peer, &src, 1, &dst, 1), -EFAULT);
	pvm.memfd = -1;
	assert_int_equal(vfab_xfer_write(&pvm, &src, 1, &dst, 1), -EFAULT);
	munmap(hole, 4096);
}

static void test_gone_is_esrch(void **state)
{
	struct child *c = *state;
	struct vfab_peer pvm = c->peer;
	struct iovec src = {source, 8}, dst = {target, 8};

	kill(c->peer.pid, SIGKILL);
	waitpid(c->peer.pid, NULL, 0);
	/* The fd outlives the address space: it must not look like success. */
	assert_int_equal(vfab_xfer_write(&c->peer, &src, 1, &dst, 1), -ESRCH);
	pvm.memfd = -1;
	assert_int_equal(vfab_xfer_write(&pvm, &src, 1, &dst, 1), -ESRCH);
}

/* Liveness through the memfd alone, for peers without a pidfd. */
static void test_mem_alive(void **state)
{
	struct child *c = *state;

	assert_true(vfab_xfer_mem_alive(c->memfd));
	kill(c->peer.pid, SIGKILL);
	waitpid(c->peer.pid, NULL, 0);
	assert_false(vfab_xfer_mem_alive(c->memfd));
}

/*
 * A foreign peer (pid of another PID namespace): everything through the
 * memfd, any size and shape; the pid, which names someone else, is unused.
 */
static void test_foreign_through_proc_mem_only(void **state)
{
	struct child *c = *state;
	struct vfab_peer f = c->peer;
	struct iovec src[2] = {{source, 5000}, {source + 6000, 6000}};
	struct iovec dst[3] = {{target + 1, 3}, {target + 100, 9000}, {target + 9200, 1997}};
	struct iovec got[1];
	uint8_t back[11000], want[11000];

	f.foreign = true;
	f.pid = getpid(); /* a copy by pid would land here, in the wrong process */
	round_trip(&f, 0, BIG, 21);
	round_trip(&f, 3, 9, 22);
	fill(source, 12000, 23);
	memcpy(want, source, 5000);
	memcpy(want + 5000, source + 6000, 6000);
	assert_int_equal(vfab_xfer_write(&f, src, 2, dst, 3), 0);
	memset(back, 0, sizeof(back));
	got[0].iov_base = back;
	got[0].iov_len = 3;
	assert_int_equal(vfab_xfer_read(&f, got, 1, &dst[0], 1), 0);
	got[0].iov_base = back + 3;
	got[0].iov_len = 9000;
	assert_int_equal(vfab_xfer_read(&f, got, 1, &dst[1], 1), 0);
	got[0].iov_base = back + 9003;
	got[0].iov_len = 1997;
	assert_int_equal(vfab_xfer_read(&f, got, 1, &dst[2], 1), 0);
	assert_memory_equal(back, want, sizeof(want));
	assert_int_equal(target[1], 0);
	f.memfd = -1;
	assert_int_equal(vfab_xfer_write(&f, src, 1, dst, 1), -ESRCH);
	f.memfd = c->memfd;
	kill(c->peer.pid, SIGKILL);
	waitpid(c->peer.pid, NULL, 0);
	assert_int_equal(vfab_xfer_write(&f, src, 1, dst, 1), -ESRCH);
}

/* In-process: segments of different shapes meet exactly. */
static void test_self_copy(void **state)
{
	struct vfab_peer self = {.pid = getpid(), .memfd = -1, .self = true};
	uint8_t out[200];
	struct iovec src[2] = {{source, 50}, {source + 50, 150}};
	struct iovec dst[3] = {{out, 7}, {out + 7, 100}, {out + 107, 93}};

	(void)state;
	fill(source, 200, 11);
	memset(out, 0, sizeof(out));
	assert_int_equal(vfab_xfer_write(&self, src, 2, dst, 3), 0);
	assert_memory_equal(out, source, sizeof(out));
}

/*
 * In-process, into a registered buffer the process has since munmapped: an
 * error, never a SIGSEGV (an HCA would write the pinned pages; vfab cannot
 * keep them, issue 27 #7).
 */
static void test_self_unmapped_is_efault(void **state)
{
	struct vfab_peer self = {.pid = getpid(), .memfd = -1, .self = true};
	long page = sysconf(_SC_PAGESIZE);
	char *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	struct iovec src = {source, 64}, dst = {gone, 64};

	(void)state;
	assert_true(gone != MAP_FAILED);
	assert_int_equal(munmap(gone, (size_t)page), 0);
	assert_int_equal(vfab_xfer_write(&self, &src, 1, &dst, 1), -EFAULT);
	assert_int_equal(vfab_xfer_read(&self, &src, 1, &dst, 1), -EFAULT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_small_through_proc_mem, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_large_and_without_proc_mem, start_child,
					    stop_child),
	    cmocka_unit_test_setup_teardown(test_gather, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_writev_chain, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_unmapped_is_efault, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_gone_is_esrch, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_mem_alive, start_child, stop_child),
	    cmocka_unit_test_setup_teardown(test_foreign_through_proc_mem_only, start_child,
					    stop_child),
	    cmocka_unit_test(test_self_copy),
	    cmocka_unit_test(test_self_unmapped_is_efault),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
