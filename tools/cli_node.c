/* SPDX-License-Identifier: MIT */
/*
 * What the verbs that work inside nodes share: joining a node with one
 * message per failure, and the config the fabric was brought up with (and
 * the topology built from it: names a root CLI may act on).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "config/config.h"
#include "fabric/topology.h"
#include "netns/node_enter.h"
#include "netns/sandbox.h"
#include "tools/cli.h"

/* Says so when it is not. */
static int fabric_is_up(const struct vfab_cli *cli, const char *verb)
{
	if (vfab_sandbox_exists(cli->fabric, cli->rundir))
		return 1;
	fprintf(stderr, "vfab %s: fabric %s is not up\n", verb, cli->fabric);
	return 0;
}

int vfab_cli_check_node(const struct vfab_cli *cli, const char *verb, const char *node)
{
	char dir[PATH_MAX];

	if (!fabric_is_up(cli, verb))
		return VFAB_EXIT_FAIL;
	if (vfab_node_dir(dir, sizeof(dir), cli->rundir, node) || strchr(node, '/') ||
	    node[0] == '.' || access(dir, F_OK)) {
		fprintf(stderr, "vfab %s: fabric %s has no node '%s'\n", verb, cli->fabric, node);
		return VFAB_EXIT_USAGE;
	}
	return VFAB_EXIT_OK;
}

int vfab_cli_enter(const struct vfab_cli *cli, const char *verb, const char *node)
{
	int ret = vfab_cli_check_node(cli, verb, node);

	if (ret)
		return ret;
	ret = vfab_node_enter(cli->rundir, node);
	if (ret == -ESRCH || ret == -ENOENT) {
		fprintf(stderr,
			"vfab %s: the holder of node %s is gone; restart the fabric (down, up)\n",
			verb, node);
		return VFAB_EXIT_FAIL;
	}
	if (ret) {
		fprintf(stderr, "vfab %s: cannot enter node %s: %s\n", verb, node, strerror(-ret));
		return VFAB_EXIT_FAIL;
	}
	return VFAB_EXIT_OK;
}

/* The run dir's copy of the config, and the host `up --host` selected from it. */
static int load_run_config(const struct vfab_cli *cli, struct vfab_config *cfg, char *err,
			   size_t errlen)
{
	char path[PATH_MAX];
	int ret;

	if (vfab_run_config_path(path, sizeof(path), cli->rundir))
		return snprintf(err, errlen, "run dir path too long"), -ENAMETOOLONG;
	ret = vfab_config_load_file(path, cfg, err, errlen);
	if (ret)
		return ret;
	ret = vfab_run_host_path(path, sizeof(path), cli->rundir)
		  ? -ENAMETOOLONG
		  : vfab_config_apply_host_file(cfg, path, err, errlen);
	if (ret)
		vfab_config_free(cfg);
	return ret;
}

int vfab_cli_load_config(const struct vfab_cli *cli, const char *verb, struct vfab_config *cfg)
{
	char err[1024] = "";

	if (!fabric_is_up(cli, verb))
		return VFAB_EXIT_FAIL;
	if (load_run_config(cli, cfg, err, sizeof(err))) {
		fprintf(stderr, "vfab %s: cannot read the config of fabric %s: %s\n", verb,
			cli->fabric, err);
		return VFAB_EXIT_FAIL;
	}
	return VFAB_EXIT_OK;
}

int vfab_cli_topology(const struct vfab_cli *cli, const char *verb, struct vfab_region **t)
{
	char err[1024] = "";
	struct vfab_config cfg;
	int ret;

	if (verb) {
		ret = vfab_cli_load_config(cli, verb, &cfg);
		if (ret)
			return ret;
	} else if (load_run_config(cli, &cfg, err, sizeof(err))) {
		return VFAB_EXIT_FAIL;
	}
	ret = vfab_topology_private(cli->fabric, cli->rundir, &cfg, t);
	vfab_config_free(&cfg);
	if (ret && verb)
		fprintf(stderr, "vfab %s: the config of fabric %s does not give a topology: %s\n",
			verb, cli->fabric, strerror(-ret));
	return ret ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
}
