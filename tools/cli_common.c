/* SPDX-License-Identifier: MIT */
/*
 * Command-line parsing every verb shares (and main): --help and --fabric, getopt's own
 * errors, and the operand count checks, so that all verbs word them alike.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>

#include "tools/cli.h"

int vfab_cli_set_fabric(struct vfab_cli *cli, const char *name)
{
	if (vfab_fabric_name_check(name)) {
		fprintf(stderr, "vfab: fabric name '%s': use 1..%d letters, digits, '_' or '-'\n",
			name, VFAB_FABRIC_NAME_MAX);
		return -EINVAL;
	}
	snprintf(cli->fabric, sizeof(cli->fabric), "%s", name);
	return vfab_run_dir(cli->rundir, sizeof(cli->rundir), name);
}

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

void vfab_cli_json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

void vfab_cli_region_text(char *out, size_t out_len, const char *field, size_t len)
{
	size_t i;

	if (!out_len)
		return;
	for (i = 0; i < len && i + 1 < out_len && field[i]; i++)
		out[i] = field[i] >= 0x20 && field[i] < 0x7f ? field[i] : '?';
	out[i] = '\0';
}
