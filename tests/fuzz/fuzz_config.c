/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the YAML config loader (config/), the parser every
 * `vfab up FILE` runs on a file a user wrote. Any input must give a config
 * or an error message, never a crash, leak or undefined behaviour.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vfab_config cfg;
	char err[512];
	char *yaml = malloc(size + 1);

	if (!yaml)
		return 0;
	memcpy(yaml, data, size);
	yaml[size] = '\0';
	if (vfab_config_load_string(yaml, "fuzz.yaml", &cfg, err, sizeof(err)) == 0) {
		/* A cluster of several hosts: one host's share, as `vfab up --host` keeps it. */
		if (cfg.multihost && cfg.nhosts)
			vfab_config_select_host(&cfg, cfg.hosts[size % cfg.nhosts].id, err,
						sizeof(err));
		vfab_config_free(&cfg);
	}
	free(yaml);
	return 0;
}
