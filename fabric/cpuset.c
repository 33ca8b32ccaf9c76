/* SPDX-License-Identifier: MIT */
#include "fabric/cpuset.h"

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned vfab_cpus_count(const struct vfab_cpus *c)
{
	unsigned n = 0;

	for (unsigned i = 0; i < VFAB_CPUS_WORDS; i++)
		n += (unsigned)__builtin_popcountll(c->bits[i]);
	return n;
}

int vfab_cpus_nth(const struct vfab_cpus *c, unsigned n)
{
	for (unsigned cpu = 0; cpu < VFAB_CPUS_MAX; cpu++)
		if (vfab_cpus_has(c, cpu) && n-- == 0)
			return (int)cpu;
	return -1;
}

bool vfab_cpus_subset(const struct vfab_cpus *sub, const struct vfab_cpus *set)
{
	for (unsigned i = 0; i < VFAB_CPUS_WORDS; i++)
		if (sub->bits[i] & ~set->bits[i])
			return false;
	return true;
}

static const char *skip_blanks(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

/* A CPU number at *p; advances *p past it. */
static int parse_number(const char **p, unsigned *out)
{
	unsigned long v;
	char *end;

	if (!isdigit((unsigned char)**p))
		return -EINVAL;
	errno = 0;
	v = strtoul(*p, &end, 10);
	if (errno || v >= VFAB_CPUS_MAX)
		return -ERANGE;
	*p = end;
	*out = (unsigned)v;
	return 0;
}

int vfab_cpus_parse(const char *text, struct vfab_cpus *out)
{
	const char *p = text;
	int ret;

	memset(out, 0, sizeof(*out));
	for (;;) {
		unsigned lo, hi;

		p = skip_blanks(p);
		ret = parse_number(&p, &lo);
		if (ret)
			return ret;
		hi = lo;
		p = skip_blanks(p);
		if (*p == '-') {
			p = skip_blanks(p + 1);
			ret = parse_number(&p, &hi);
			if (ret)
				return ret;
			if (hi < lo)
				return -EINVAL;
			p = skip_blanks(p);
		}
		for (unsigned cpu = lo; cpu <= hi; cpu++)
			vfab_cpus_add(out, cpu);
		if (*p == '\0')
			return 0;
		if (*p++ != ',')
			return -EINVAL;
	}
}

int vfab_cpus_format_list(const struct vfab_cpus *c, char *buf, size_t len)
{
	size_t used = 0;

	if (len == 0)
		return -ENOSPC;
	buf[0] = '\0';
	for (unsigned cpu = 0; cpu < VFAB_CPUS_MAX; cpu++) {
		unsigned last = cpu;
		int n;

		if (!vfab_cpus_has(c, cpu))
			continue;
		while (last + 1 < VFAB_CPUS_MAX && vfab_cpus_has(c, last + 1))
			last++;
		if (last == cpu)
			n = snprintf(buf + used, len - used, "%s%u", used ? "," : "", cpu);
		else
			n = snprintf(buf + used, len - used, "%s%u-%u", used ? "," : "", cpu, last);
		if (n < 0 || (size_t)n >= len - used)
			return -ENOSPC;
		used += (size_t)n;
		cpu = last;
	}
	return 0;
}

int vfab_cpus_format_mask(const struct vfab_cpus *c, unsigned nwords32, char *buf, size_t len)
{
	size_t used = 0;

	if (nwords32 == 0)
		nwords32 = 1;
	if (nwords32 > VFAB_CPUS_MAX / 32 || len < (size_t)nwords32 * 9)
		return -ENOSPC;
	for (unsigned w = nwords32; w-- > 0;) {
		uint32_t word = (uint32_t)(c->bits[w / 2] >> (32 * (w % 2)));

		used += (size_t)snprintf(buf + used, len - used, "%08x%s", word, w ? "," : "");
	}
	return 0;
}

int vfab_cpus_split(const struct vfab_cpus *host, uint32_t nnodes, uint32_t index,
		    struct vfab_cpus *out)
{
	unsigned n = vfab_cpus_count(host), first, count;

	memset(out, 0, sizeof(*out));
	if (n == 0 || nnodes == 0 || index >= nnodes)
		return -EINVAL;
	if (nnodes >= n) {
		first = index % n;
		count = 1;
	} else {
		/* Runs of n / nnodes, the first n % nnodes of them one longer. */
		unsigned base = n / nnodes, extra = n % nnodes;

		first = index * base + (index < extra ? index : extra);
		count = base + (index < extra ? 1 : 0);
	}
	for (unsigned k = 0; k < count; k++)
		vfab_cpus_add(out, (unsigned)vfab_cpus_nth(host, first + k));
	return 0;
}

int vfab_cpus_of_self(struct vfab_cpus *out)
{
	cpu_set_t set;

	memset(out, 0, sizeof(*out));
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof(set), &set))
		return -errno;
	for (unsigned cpu = 0; cpu < CPU_SETSIZE && cpu < VFAB_CPUS_MAX; cpu++)
		if (CPU_ISSET(cpu, &set))
			vfab_cpus_add(out, cpu);
	return 0;
}
