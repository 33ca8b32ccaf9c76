/* SPDX-License-Identifier: MIT */
/*
 * A real shared-memory region per test (/dev/shm/vfab-<prefix>-<pid>-<n>),
 * removed by the teardown, which cmocka runs even when the test fails.
 * Define SHM_FIXTURE_PREFIX before including; include after <cmocka.h>.
 */
#ifndef VFAB_TEST_SHM_REGION_FIXTURE_H
#define VFAB_TEST_SHM_REGION_FIXTURE_H

#include <stdio.h>
#include <unistd.h>

#include "fabric/region.h"

static char fabric[64];

static int shm_setup(void **state)
{
	static unsigned counter;
	struct vfab_region *r;

	snprintf(fabric, sizeof(fabric), SHM_FIXTURE_PREFIX "-%d-%u", (int)getpid(), counter++);
	if (vfab_region_create(fabric, "/run/vfab/unit", &r))
		return -1;
	*state = r;
	return 0;
}

static int shm_teardown(void **state)
{
	vfab_region_close(*state);
	vfab_region_unlink(fabric);
	return 0;
}

#endif /* VFAB_TEST_SHM_REGION_FIXTURE_H */
