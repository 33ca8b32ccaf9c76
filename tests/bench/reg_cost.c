/* SPDX-License-Identifier: MIT */
/*
 * reg_cost [-d DEVICE]: what a memory registration costs (tests/bench/bench.sh,
 * issue 27). Times ibv_reg_mr and ibv_dereg_mr of a 4 KiB buffer (median of
 * 2000) and of a 1 GiB buffer whose pages exist (median of 3), and, as the
 * reference, what pinning the same pages costs the kernel: mlock and munlock
 * of the same ranges (an HCA's driver pins with pin_user_pages, which mlock
 * also does page by page). Prints key=value lines in microseconds.
 */
#include <errno.h>
#include <infiniband/verbs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#define SMALL_BYTES 4096ul
#define LARGE_BYTES (1ul << 30)
#define SMALL_RUNS 2000
#define LARGE_RUNS 3

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return v[n / 2];
}

/* Median cost of registering (reg[]) and deregistering (dereg[]) buf, runs times. */
static int time_mr(struct ibv_pd *pd, void *buf, size_t len, int runs, double *reg, double *dereg)
{
	const int access =
	    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	double *r = calloc((size_t)runs, sizeof(*r)), *d = calloc((size_t)runs, sizeof(*d));

	if (!r || !d)
		return -ENOMEM;
	for (int i = 0; i < runs; i++) {
		double t0 = now_us(), t1;
		struct ibv_mr *mr = ibv_reg_mr(pd, buf, len, access);

		t1 = now_us();
		if (!mr || ibv_dereg_mr(mr)) {
			free(r);
			free(d);
			return -errno;
		}
		r[i] = t1 - t0;
		d[i] = now_us() - t1;
	}
	*reg = median(r, runs);
	*dereg = median(d, runs);
	free(r);
	free(d);
	return 0;
}

/* The same for mlock/munlock of the range. */
static int time_lock(void *buf, size_t len, int runs, double *lock, double *unlock)
{
	double *l = calloc((size_t)runs, sizeof(*l)), *u = calloc((size_t)runs, sizeof(*u));

	if (!l || !u)
		return -ENOMEM;
	for (int i = 0; i < runs; i++) {
		double t0 = now_us(), t1;

		if (mlock(buf, len)) {
			free(l);
			free(u);
			return -errno;
		}
		t1 = now_us();
		munlock(buf, len);
		l[i] = t1 - t0;
		u[i] = now_us() - t1;
	}
	*lock = median(l, runs);
	*unlock = median(u, runs);
	free(l);
	free(u);
	return 0;
}

int main(int argc, char **argv)
{
	const char *want = argc == 3 && !strcmp(argv[1], "-d") ? argv[2] : NULL;
	struct ibv_device **list = ibv_get_device_list(NULL), *dev = NULL;
	double r4, d4, r1g, d1g, l4, u4, l1g, u1g;
	struct ibv_context *ctx;
	void *small, *large;
	struct ibv_pd *pd;
	int rc;

	for (int i = 0; list && list[i] && !dev; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			dev = list[i];
	ctx = dev ? ibv_open_device(dev) : NULL;
	pd = ctx ? ibv_alloc_pd(ctx) : NULL;
	small = aligned_alloc(SMALL_BYTES, SMALL_BYTES);
	large = mmap(NULL, LARGE_BYTES, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (!pd || !small || large == MAP_FAILED) {
		fprintf(stderr, "reg_cost: no device, PD or buffers: %s\n", strerror(errno));
		return 1;
	}
	memset(small, 1, SMALL_BYTES);
	rc = time_mr(pd, small, SMALL_BYTES, SMALL_RUNS, &r4, &d4);
	if (!rc)
		rc = time_mr(pd, large, LARGE_BYTES, LARGE_RUNS, &r1g, &d1g);
	if (!rc)
		rc = time_lock(small, SMALL_BYTES, SMALL_RUNS, &l4, &u4);
	if (!rc)
		rc = time_lock(large, LARGE_BYTES, LARGE_RUNS, &l1g, &u1g);
	if (rc) {
		fprintf(stderr, "reg_cost: %s\n", strerror(-rc));
		return 1;
	}
	printf("reg_4k_us=%.2f\ndereg_4k_us=%.2f\nreg_1g_us=%.0f\ndereg_1g_us=%.0f\n", r4, d4, r1g,
	       d1g);
	printf("mlock_4k_us=%.2f\nmunlock_4k_us=%.2f\nmlock_1g_us=%.0f\nmunlock_1g_us=%.0f\n", l4,
	       u4, l1g, u1g);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	return 0;
}
