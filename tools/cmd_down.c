/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "netns/sandbox.h"
#include "netns/userns.h"
#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] down\n"
		   "Stops the fabric: shuts vfabd down (or kills it when it does not answer),\n"
		   "kills every process inside its nodes and the node holders, removes the\n"
		   "namespaces (with the bridge and veths), the region and the run dir.\n"
		   "Works from the run dir alone, also after a crash or a failed 'up'.\n"
		   "A fabric that is not up is a no-op (exit 0).\n");
}

int vfab_fabric_down(const struct vfab_cli *cli, pid_t vfabd_pid, int quiet)
{
	char err[512] = "";
	int ret, first;

	ret = vfab_vfabd_stop(cli, vfabd_pid);
	if (ret && !quiet)
		fprintf(stderr, "vfab down: vfabd of %s would not stop: %s\n", cli->fabric,
			strerror(-ret));
	first = ret;
	ret = vfab_sandbox_teardown(cli->fabric, cli->rundir, err, sizeof(err));
	if (ret && !quiet)
		fprintf(stderr, "vfab down: %s: %s\n", err, strerror(-ret));
	/* A rootless fabric: its namespaces go with their keeper. */
	vfab_userns_end(cli->fabric);
	return first ? first : ret;
}

int vfab_cmd_down(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	long long t0 = vfab_now_ms();
	int ch, ret;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		switch (ch) {
		default:
			ret = vfab_cli_common_opt(cli, ch, usage);
			if (ret != VFAB_CLI_GO_ON)
				return ret;
		}
	}
	ret = vfab_cli_no_more_operands("down", argc, argv, optind, usage);
	if (ret)
		return ret;
	if (!vfab_sandbox_exists(cli->fabric, cli->rundir)) {
		printf("fabric %s is not up: nothing to do\n", cli->fabric);
		vfab_userns_end(cli->fabric);
		return VFAB_EXIT_OK;
	}
	if (vfab_fabric_down(cli, 0, 0))
		return VFAB_EXIT_FAIL;
	printf("fabric %s down in %lld ms\n", cli->fabric, vfab_now_ms() - t0);
	return VFAB_EXIT_OK;
}
