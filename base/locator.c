/* SPDX-License-Identifier: MIT */
#include "base/locator.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vfab_locator_format(char *buf, size_t len, const struct vfab_locator *l)
{
	int n = snprintf(buf, len, "region %s\nhca %u\nrundir %s\n", l->region, l->hca, l->rundir);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* A value into dst (of len bytes): false when it does not fit. */
static bool take(char *dst, size_t len, const char *val, size_t n)
{
	if (n >= len)
		return false;
	memcpy(dst, val, n);
	dst[n] = '\0';
	return true;
}

int vfab_locator_parse(const char *text, uint32_t max_hcas, struct vfab_locator *out)
{
	bool have_region = false, have_hca = false, have_rundir = false;
	const char *line = text;

	memset(out, 0, sizeof(*out));
	while (*line) {
		size_t n = strcspn(line, "\n");
		const char *val = memchr(line, ' ', n);

		if (val) {
			size_t klen = (size_t)(val - line), vlen = n - klen - 1;

			val++;
			if (klen == 6 && !memcmp(line, "region", 6)) {
				if (!take(out->region, sizeof(out->region), val, vlen))
					return -EINVAL;
				have_region = true;
			} else if (klen == 3 && !memcmp(line, "hca", 3)) {
				char num[16], *end;
				unsigned long h;

				if (!take(num, sizeof(num), val, vlen))
					return -EINVAL;
				h = strtoul(num, &end, 10);
				if (end == num || *end || h >= max_hcas)
					return -EINVAL;
				out->hca = (uint32_t)h;
				have_hca = true;
			} else if (klen == 6 && !memcmp(line, "rundir", 6)) {
				if (val[0] != '/' ||
				    !take(out->rundir, sizeof(out->rundir), val, vlen))
					return -EINVAL;
				have_rundir = true;
			}
		}
		line += n;
		if (*line)
			line++;
	}
	return have_region && have_hca && have_rundir ? 0 : -EINVAL;
}
