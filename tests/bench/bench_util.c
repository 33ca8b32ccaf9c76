/* SPDX-License-Identifier: MIT */
#include "bench_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void bench_print_latency(uint64_t *rtt_ns, size_t n)
{
	double sum = 0;

	if (n == 0)
		return;
	qsort(rtt_ns, n, sizeof(*rtt_ns), cmp_u64);
	for (size_t i = 0; i < n; i++)
		sum += (double)rtt_ns[i];
	/* One way = half a round trip, the convention ib_write_lat reports. */
	printf("lat_iters=%zu\n", n);
	printf("lat_typical_us=%.3f\n", (double)rtt_ns[n / 2] / 2000.0);
	printf("lat_avg_us=%.3f\n", sum / (double)n / 2000.0);
	printf("lat_min_us=%.3f\n", (double)rtt_ns[0] / 2000.0);
}

unsigned long bench_parse_ulong(const char *opt, const char *val)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(val ? val : "", &end, 0);
	if (!val || errno || *end || v == 0) {
		fprintf(stderr, "%s: expected a positive integer, got '%s'\n", opt, val ? val : "");
		exit(2);
	}
	return v;
}

double bench_parse_seconds(const char *opt, const char *val)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(val ? val : "", &end);
	if (!val || errno || *end || !(v > 0)) {
		fprintf(stderr, "%s: expected a positive number of seconds, got '%s'\n", opt,
			val ? val : "");
		exit(2);
	}
	return v;
}

int bench_read_full(int fd, void *p, size_t n)
{
	char *c = p;

	while (n) {
		ssize_t r = read(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : -EPIPE;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}

int bench_write_full(int fd, const void *p, size_t n)
{
	const char *c = p;

	while (n) {
		ssize_t r = write(fd, c, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		c += r;
		n -= (size_t)r;
	}
	return 0;
}
