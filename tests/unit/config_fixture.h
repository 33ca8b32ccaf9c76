/* SPDX-License-Identifier: MIT */
/*
 * Loading YAML in config tests: a config that must load, and one that must
 * fail with exactly "t.yaml:<want>" and leave nothing allocated. The last
 * message is in err. Include after <cmocka.h>.
 */
#ifndef VFAB_TEST_CONFIG_FIXTURE_H
#define VFAB_TEST_CONFIG_FIXTURE_H

#include <errno.h>
#include <stdio.h>

#include "config/config.h"

static char err[512];

static inline void load_ok(const char *yaml, struct vfab_config *cfg)
{
	if (vfab_config_load_string(yaml, "t.yaml", cfg, err, sizeof(err)))
		fail_msg("unexpected error: %s", err);
}

static inline void load_fails(const char *yaml, const char *want)
{
	struct vfab_config cfg;
	char full[600];

	snprintf(full, sizeof(full), "t.yaml:%s", want);
	assert_int_equal(vfab_config_load_string(yaml, "t.yaml", &cfg, err, sizeof(err)), -EINVAL);
	assert_string_equal(err, full);
	assert_null(cfg.nodes);
	assert_null(cfg.leaves);
}

#endif /* VFAB_TEST_CONFIG_FIXTURE_H */
