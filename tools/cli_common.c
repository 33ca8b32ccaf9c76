/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsing every verb shares: --help and --fabric, getopt's own
 * errors, and the operand count checks, so that all verbs word them alike.
 */
#include <getopt.h>
#include <stdio.h>

#include "tools/cli.h"

int vfab_cli_common_opt(struct vfab_cli *cli, int ch, void (*usage_fn)(FILE *))
{
	switch (ch) {
	case 'h':
		usage_fn(stdout);
		return VFAB_EXIT_OK;
	case 'f':
		if (vfab_cli_set_fabric(cli, optarg))
			return VFAB_EXIT_USAGE;
		return VFAB_CLI_GO_ON;
	default:
		usage_fn(stderr);
		return VFAB_EXIT_USAGE;
	}
}

int vfab_cli_no_more_operands(const char *verb, int argc, char **argv, int next,
			      void (*usage_fn)(FILE *))
{
	if (next >= argc)
		return VFAB_EXIT_OK;
	fprintf(stderr, "vfab %s: unexpected argument '%s'\n", verb, argv[next]);
	usage_fn(stderr);
	return VFAB_EXIT_USAGE;
}

int vfab_cli_need_operand(const char *verb, const char *what, int argc, int next,
			  void (*usage_fn)(FILE *))
{
	if (next < argc)
		return VFAB_EXIT_OK;
	fprintf(stderr, "vfab %s: missing %s\n", verb, what);
	usage_fn(stderr);
	return VFAB_EXIT_USAGE;
}
