/* SPDX-License-Identifier: MIT */
/*
 * Shared helpers of the benchmarks (pvm_ceiling, tcp_stream, lossy_verify):
 * a monotonic clock, whole-message pipe and socket I/O and the summary of a series of round trips,
 * printed as machine-readable key=value lines that tests/bench/bench.sh parses.
 */
#ifndef VFAB_BENCH_UTIL_H
#define VFAB_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

uint64_t bench_now_ns(void);

/* Busy-wait hint for spin loops (keeps the sibling hyperthread usable). */
static inline void bench_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/*
 * Prints lat_typical_us (median), lat_avg_us and lat_min_us of the one-way
 * latency, i.e. half of each round trip in rtt_ns[0..n). Sorts rtt_ns.
 */
void bench_print_latency(uint64_t *rtt_ns, size_t n);

/*
 * All n bytes or an error (-errno; -EPIPE when the peer closed first), across
 * short transfers and EINTR: benchmark messages are never split by design.
 */
int bench_read_full(int fd, void *p, size_t n);
int bench_write_full(int fd, const void *p, size_t n);

/* Parses a positive integer option value; exits with status 2 on garbage. */
unsigned long bench_parse_ulong(const char *opt, const char *val);

/* Parses a positive decimal number (seconds); exits with status 2 on garbage. */
double bench_parse_seconds(const char *opt, const char *val);

#endif
