/* SPDX-License-Identifier: MIT */
/*
 * A node's CPUs: a set of host CPU numbers, in the three spellings Linux
 * uses for one — a list ("0-3,8", cpuset.cpus, local_cpulist, nproc's
 * source), a hexadecimal mask in 32-bit words separated by commas, most
 * significant first ("00000000,0000000f", sysfs local_cpus), and the bits
 * of a cpu_set_t (sched_setaffinity). Pure functions, no state.
 */
#ifndef VFAB_CPUSET_H
#define VFAB_CPUSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define VFAB_CPUS_MAX 1024 /* CPU numbers 0 .. VFAB_CPUS_MAX - 1 */
#define VFAB_CPUS_WORDS (VFAB_CPUS_MAX / 64)

struct vfab_cpus {
	uint64_t bits[VFAB_CPUS_WORDS];
};

static inline bool vfab_cpus_has(const struct vfab_cpus *c, unsigned cpu)
{
	return cpu < VFAB_CPUS_MAX && (c->bits[cpu / 64] >> (cpu % 64)) & 1;
}

static inline void vfab_cpus_add(struct vfab_cpus *c, unsigned cpu)
{
	if (cpu < VFAB_CPUS_MAX)
		c->bits[cpu / 64] |= 1ull << (cpu % 64);
}

unsigned vfab_cpus_count(const struct vfab_cpus *c);
/* The n-th CPU of the set (n from 0), or -1 when the set has fewer. */
int vfab_cpus_nth(const struct vfab_cpus *c, unsigned n);
/* Whether every CPU of `sub` is in `set`. */
bool vfab_cpus_subset(const struct vfab_cpus *sub, const struct vfab_cpus *set);

/*
 * Parses a list: comma-separated CPU numbers and ranges A-B, blanks around
 * items allowed. Returns 0, -EINVAL (syntax, empty, B < A) or -ERANGE (a
 * number >= VFAB_CPUS_MAX).
 */
int vfab_cpus_parse(const char *text, struct vfab_cpus *out);
/* "0-3,8"; "" for the empty set. Returns -ENOSPC when `len` is too small. */
int vfab_cpus_format_list(const struct vfab_cpus *c, char *buf, size_t len);
/*
 * The sysfs mask: 32-bit words in hex, most significant first, as many as
 * `nwords32` (the kernel prints one per 32 possible CPUs), at least one.
 */
int vfab_cpus_format_mask(const struct vfab_cpus *c, unsigned nwords32, char *buf, size_t len);

/*
 * The default CPUs of node `index` of `nnodes` on a host whose usable CPUs
 * are `host`: the host's CPUs in order, split into `nnodes` contiguous runs
 * whose sizes differ by at most one; with more nodes than CPUs each node gets
 * one CPU, round robin (the only case where nodes overlap). Returns -EINVAL
 * for an empty host set or nnodes == 0.
 */
int vfab_cpus_split(const struct vfab_cpus *host, uint32_t nnodes, uint32_t index,
		    struct vfab_cpus *out);

/* The CPUs this process may run on (sched_getaffinity). */
int vfab_cpus_of_self(struct vfab_cpus *out);

#endif
