/* SPDX-License-Identifier: MIT */
/*
 * pvm_ceiling: the raw ceiling of vfab's data path. vfab moves every RDMA
 * payload with one process_vm_writev into the peer process, and the peer
 * learns about it by reading memory; this program measures exactly that
 * between two plain processes, with no verbs in between, so that the
 * benchmark can say how close vfab gets to what the copy itself allows.
 *
 *   pvm_ceiling [--size BYTES] [--ring N] [--seconds S] [--runs N] [--iters N]
 *               [--batch N] [--threads N]
 *
 * Bandwidth: the parent writes --size bytes (default 1 MiB) into a buffer the
 * child owns, back to back for --seconds (default 1) per run; the best of
 * --runs (default 3) is reported. Latency: 8-byte ping-pong, each side
 * writing a sequence number into a word the other side spins on; half the
 * round trip is reported. Small-write rate: 8-byte writes to consecutive
 * 64-byte slots of the child's buffer (as small RDMA WRITEs to different
 * remote addresses of one peer), one per call and --batch (default 64) per
 * call, best of --runs; reported in millions of writes per second. The
 * child's addresses reach the parent through a pipe, as an rkey/address pair
 * would reach an RDMA peer.
 *
 * --ring N (bandwidth, plain loop): the writes go round N distinct buffers of
 * --size on each side, as an application's ring of N messages in flight does
 * (NCCL: 8 steps of 512 KiB); with 1 (the default) one buffer stays in the
 * caches, as perftest's does.
 *
 * --threads N (bandwidth only): each write of --size is the copy vfab's copy
 * engines make of it (provider/vfab_split.h: the same ranges, the last one
 * by the main thread, then the tail), over N threads that wait for the next
 * write spinning (a ceiling: no sleep, no wake-up); N = 1 is the plain loop.
 *
 * Output: key=value lines (bw_*, lat_*, small_*); exit status 0 on success, 1 on a
 * failed system call, 2 on bad arguments.
 */
#include "bench_util.h"
#include "provider/vfab_dma.h"
#include "provider/vfab_split.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#define WARMUP_ITERS 1000
#define SPIN_TIMEOUT_NS 5000000000ull

struct opts {
	size_t size;
	double seconds;
	unsigned runs;
	size_t iters;
	size_t batch;
	unsigned threads;
	size_t ring;
};

/* What each side tells the other about its memory. */
struct child_addrs {
	uint64_t buf;
	uint64_t ping; /* the word the child spins on */
};

enum cmd { CMD_LATENCY = 'L', CMD_QUIT = 'Q' };

struct cmd_msg {
	uint32_t cmd;
	uint32_t pad;
	uint64_t iters;
};

static _Alignas(64) volatile uint64_t pong_word; /* parent spins on it */
static _Alignas(64) volatile uint64_t ping_word; /* child spins on it */

static int pvm_write(pid_t pid, uint64_t remote, const void *local, size_t len)
{
	struct iovec l = {.iov_base = (void *)local, .iov_len = len};
	struct iovec r = {.iov_base = (void *)(uintptr_t)remote, .iov_len = len};
	ssize_t n = process_vm_writev(pid, &l, 1, &r, 1, 0);

	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

/* Waits until *word == want; gives up after SPIN_TIMEOUT_NS (peer died). */
static int spin_until(volatile uint64_t *word, uint64_t want)
{
	uint64_t start = 0;
	unsigned spins = 0;

	while (__atomic_load_n(word, __ATOMIC_ACQUIRE) != want) {
		bench_cpu_relax();
		if (++spins % 65536 == 0) {
			uint64_t now = bench_now_ns();

			if (!start)
				start = now;
			else if (now - start > SPIN_TIMEOUT_NS)
				return -ETIMEDOUT;
		}
	}
	return 0;
}

static int child_main(int rfd, int wfd, const struct opts *o)
{
	struct child_addrs a;
	struct cmd_msg m;
	uint64_t pong_addr;
	pid_t parent = getppid();
	void *buf;
	int ret;

	if (posix_memalign(&buf, 4096, o->size * o->ring))
		return 1;
	/* Fault the pages in now so the bandwidth runs measure copies only. */
	memset(buf, 0, o->size * o->ring);
	a.buf = (uintptr_t)buf;
	a.ping = (uintptr_t)&ping_word;
	if (bench_write_full(wfd, &a, sizeof(a)) ||
	    bench_read_full(rfd, &pong_addr, sizeof(pong_addr)))
		return 1;
	for (;;) {
		if (bench_read_full(rfd, &m, sizeof(m)))
			return 1;
		if (m.cmd == CMD_QUIT)
			return 0;
		for (uint64_t i = 1; i <= m.iters; i++) {
			ret = spin_until(&ping_word, i);
			if (!ret)
				ret = pvm_write(parent, pong_addr, &i, sizeof(i));
			if (ret) {
				fprintf(stderr, "pvm_ceiling child: %s\n", strerror(-ret));
				return 1;
			}
		}
	}
}

static int measure_bw(pid_t child, const struct child_addrs *a, const struct opts *o)
{
	double best = 0;
	void *src;
	int ret = 0;

	size_t k = 0;

	if (posix_memalign(&src, 4096, o->size * o->ring))
		return -ENOMEM;
	memset(src, 0xa5, o->size * o->ring);
	for (unsigned run = 0; run < o->runs && !ret; run++) {
		uint64_t start = bench_now_ns(), deadline = start + (uint64_t)(o->seconds * 1e9);
		uint64_t bytes = 0, now;

		do {
			size_t off = (k++ % o->ring) * o->size;

			ret = pvm_write(child, a->buf + off, (const char *)src + off, o->size);
			bytes += o->size;
			now = bench_now_ns();
		} while (!ret && now < deadline);
		if (!ret && (double)bytes / (double)(now - start) > best)
			best = (double)bytes / (double)(now - start); /* bytes/ns = GB/s */
	}
	free(src);
	if (ret)
		return ret;
	printf("bw_size_bytes=%zu\n", o->size);
	printf("bw_ring=%zu\n", o->ring);
	printf("bw_runs=%u\n", o->runs);
	printf("bw_gbyte_per_s=%.3f\n", best);
	printf("bw_gbit_per_s=%.3f\n", best * 8);
	return 0;
}

/* Writes of 8 bytes each, `per_call` per process_vm_writev, into 64-byte slots. */
static int small_rate(pid_t child, const struct child_addrs *a, const struct opts *o,
		      size_t per_call, double *best)
{
	static struct iovec l[IOV_MAX], r[IOV_MAX];
	static uint64_t src[IOV_MAX];
	size_t slots = o->size / 64;

	if (per_call > IOV_MAX || per_call > slots)
		return -EINVAL;
	for (size_t i = 0; i < per_call; i++) {
		src[i] = i;
		l[i] = (struct iovec){.iov_base = &src[i], .iov_len = 8};
		r[i].iov_len = 8;
	}
	*best = 0;
	for (unsigned run = 0; run < o->runs; run++) {
		uint64_t start = bench_now_ns(), deadline = start + (uint64_t)(o->seconds * 1e9);
		uint64_t writes = 0, now, slot = 0;
		ssize_t n;

		do {
			for (size_t i = 0; i < per_call; i++, slot = (slot + 1) % slots)
				r[i].iov_base = (void *)(uintptr_t)(a->buf + slot * 64);
			n = process_vm_writev(child, l, per_call, r, per_call, 0);
			if (n != (ssize_t)(per_call * 8))
				return n < 0 ? -errno : -EIO;
			writes += per_call;
			now = bench_now_ns();
		} while (now < deadline);
		if ((double)writes * 1e3 / (double)(now - start) > *best)
			*best = (double)writes * 1e3 / (double)(now - start); /* M/s */
	}
	return 0;
}

static int measure_small(pid_t child, const struct child_addrs *a, const struct opts *o)
{
	double one, many;
	int ret = small_rate(child, a, o, 1, &one);

	if (!ret)
		ret = small_rate(child, a, o, o->batch, &many);
	if (ret)
		return ret;
	printf("small_bytes=8\n");
	printf("small_batch=%zu\n", o->batch);
	printf("small_one_mwrites_per_s=%.3f\n", one);
	printf("small_batch_mwrites_per_s=%.3f\n", many);
	return 0;
}

static int measure_lat(pid_t child, int wfd, const struct child_addrs *a, const struct opts *o)
{
	struct cmd_msg m = {.cmd = CMD_LATENCY, .iters = WARMUP_ITERS + o->iters};
	uint64_t *rtt = calloc(o->iters, sizeof(*rtt));
	uint64_t prev = 0;
	int ret;

	if (!rtt)
		return -ENOMEM;
	ret = bench_write_full(wfd, &m, sizeof(m));
	for (uint64_t i = 1; !ret && i <= m.iters; i++) {
		/* One timestamp per round trip: consecutive stamps bound it. */
		uint64_t now = bench_now_ns();

		if (i > WARMUP_ITERS + 1)
			rtt[i - WARMUP_ITERS - 2] = now - prev;
		prev = now;
		ret = pvm_write(child, a->ping, &i, sizeof(i));
		if (!ret)
			ret = spin_until(&pong_word, i);
	}
	if (!ret) {
		rtt[o->iters - 1] = bench_now_ns() - prev;
		printf("lat_size_bytes=8\n");
		bench_print_latency(rtt, o->iters);
	}
	free(rtt);
	return ret;
}

/* The split copy: one write's ranges, handed to the helpers by generation. */
static struct {
	pid_t child;
	const struct child_addrs *a;
	const char *src;
	struct vfab_split plan;
	_Atomic uint64_t gen;  /* bumped per write; UINT64_MAX: stop */
	_Atomic unsigned done; /* helpers finished with this generation */
	_Atomic int err;
} mt;

static int write_range(const struct vfab_split_range *r)
{
	return pvm_write(mt.child, mt.a->buf + r->off_bytes, mt.src + r->off_bytes, r->len_bytes);
}

static void *helper_main(void *arg)
{
	unsigned k = (unsigned)(uintptr_t)arg;
	uint64_t seen = 0, g;
	unsigned spins = 0;

	for (;;) {
		while ((g = atomic_load(&mt.gen)) == seen)
			if (++spins % 1024 == 0)
				sched_yield(); /* fewer CPUs than threads */
		if (g == UINT64_MAX)
			return NULL;
		seen = g;
		if (write_range(&mt.plan.part[k]))
			atomic_store(&mt.err, -EIO);
		atomic_fetch_add(&mt.done, 1);
	}
}

static int measure_bw_threads(pid_t child, const struct child_addrs *a, const struct opts *o)
{
	pthread_t th[VFAB_SPLIT_MAX];
	unsigned helpers, started = 0, spins = 0;
	double best = 0;
	void *src;
	int ret = 0;

	if (posix_memalign(&src, 4096, o->size))
		return -ENOMEM;
	memset(src, 0xa5, o->size);
	mt.child = child;
	mt.a = a;
	mt.src = src;
	vfab_split_plan(o->size, a->buf, o->threads, VFAB_DMA_MIN_CHUNK_BYTES, &mt.plan);
	helpers = mt.plan.n - 1;
	for (; started < helpers; started++)
		if (pthread_create(&th[started], NULL, helper_main, (void *)(uintptr_t)started)) {
			ret = -EAGAIN;
			break;
		}
	for (unsigned run = 0; run < o->runs && !ret; run++) {
		uint64_t start = bench_now_ns(), deadline = start + (uint64_t)(o->seconds * 1e9);
		uint64_t bytes = 0, now;

		do {
			atomic_store(&mt.done, 0);
			atomic_fetch_add(&mt.gen, 1);
			ret = write_range(&mt.plan.part[helpers]);
			while (atomic_load(&mt.done) != helpers)
				if (++spins % 1024 == 0)
					sched_yield();
			if (!ret)
				ret = atomic_load(&mt.err);
			if (!ret && mt.plan.tail.len_bytes)
				ret = write_range(&mt.plan.tail);
			bytes += o->size;
			now = bench_now_ns();
		} while (!ret && now < deadline);
		if (!ret && (double)bytes / (double)(now - start) > best)
			best = (double)bytes / (double)(now - start);
	}
	atomic_store(&mt.gen, UINT64_MAX);
	for (unsigned k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	free(src);
	if (ret)
		return ret;
	printf("bw_size_bytes=%zu\n", o->size);
	printf("bw_threads=%u\n", mt.plan.n);
	printf("bw_runs=%u\n", o->runs);
	printf("bw_gbyte_per_s=%.3f\n", best);
	printf("bw_gbit_per_s=%.3f\n", best * 8);
	return 0;
}

static void parse_opts(int argc, char **argv, struct opts *o)
{
	for (int i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--size"))
			o->size = bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--seconds"))
			o->seconds = bench_parse_seconds(argv[i], val);
		else if (!strcmp(argv[i], "--runs"))
			o->runs = (unsigned)bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--iters"))
			o->iters = bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--batch"))
			o->batch = bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--threads"))
			o->threads = (unsigned)bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--ring"))
			o->ring = bench_parse_ulong(argv[i], val);
		else {
			fprintf(
			    stderr,
			    "usage: pvm_ceiling [--size BYTES] [--ring N] [--seconds S] [--runs N] "
			    "[--iters N] [--batch N] [--threads N]\n");
			exit(strcmp(argv[i], "--help") ? 2 : 0);
		}
		i++;
	}
	if (o->ring < 1 || o->ring > 1024) {
		fprintf(stderr, "pvm_ceiling: --ring is 1..1024\n");
		exit(2);
	}
	if (o->threads > VFAB_SPLIT_MAX) {
		fprintf(stderr, "pvm_ceiling: --threads is 1..%d\n", VFAB_SPLIT_MAX);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct opts o = {
	    .size = 1 << 20, .seconds = 1.0, .runs = 3, .iters = 100000, .batch = 64, .ring = 1};
	struct cmd_msg quit = {.cmd = CMD_QUIT};
	struct child_addrs a;
	int to_child[2], to_parent[2], status, ret;
	uint64_t pong_addr = (uintptr_t)&pong_word;
	pid_t child;

	parse_opts(argc, argv, &o);
	if (pipe(to_child) || pipe(to_parent)) {
		perror("pvm_ceiling: pipe");
		return 1;
	}
	child = fork();
	if (child < 0) {
		perror("pvm_ceiling: fork");
		return 1;
	}
	if (child == 0) {
		close(to_child[1]);
		close(to_parent[0]);
		_exit(child_main(to_child[0], to_parent[1], &o));
	}
	close(to_child[0]);
	close(to_parent[1]);
	ret = bench_read_full(to_parent[0], &a, sizeof(a));
	if (!ret)
		ret = bench_write_full(to_child[1], &pong_addr, sizeof(pong_addr));
	if (!ret && o.threads)
		ret = measure_bw_threads(child, &a, &o);
	else if (!ret) {
		ret = measure_bw(child, &a, &o);
		if (!ret)
			ret = measure_small(child, &a, &o);
		if (!ret)
			ret = measure_lat(child, to_child[1], &a, &o);
	}
	if (!ret)
		ret = bench_write_full(to_child[1], &quit, sizeof(quit));
	if (ret) {
		fprintf(stderr, "pvm_ceiling: %s\n", strerror(-ret));
		kill(child, SIGKILL);
	}
	close(to_child[1]);
	if (waitpid(child, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))
		ret = ret ? ret : -ECHILD;
	return ret ? 1 : 0;
}
