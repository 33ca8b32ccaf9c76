/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/cli.h"

/* Exit codes of a command that could not be started, as shells use them. */
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND 127

static void exec_usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] exec NODE [--] CMD [ARGS...]\n"
		   "Runs CMD inside NODE (its network, hostname and mount namespaces: its own\n"
		   "eth0, /sys/class/infiniband, /dev/infiniband, /etc) with the caller's\n"
		   "environment and working directory. Exit: CMD's own status; 126/127 when\n"
		   "CMD cannot be run; 1 when the fabric is not up; 2 usage error or unknown\n"
		   "node.\n");
}

static void shell_usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] shell NODE\n"
		   "Starts an interactive $SHELL (default /bin/bash) inside NODE.\n"
		   "Exit: the shell's status; 1 fabric not up; 2 usage error or unknown node.\n");
}

static int parse(struct vfab_cli *cli, int argc, char **argv, void (*usage)(FILE *))
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	int ch, rc;

	optind = 1;
	/* '+': everything after NODE belongs to the command, options included. */
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		rc = vfab_cli_common_opt(cli, ch, usage);
		if (rc == VFAB_EXIT_OK)
			return -1;
		if (rc != VFAB_CLI_GO_ON)
			return -rc;
	}
	rc = vfab_cli_need_operand(argv[0], "NODE", argc, optind, usage);
	return rc ? -rc : optind;
}

static int run(const char *verb, char **cmd)
{
	execvp(cmd[0], cmd);
	fprintf(stderr, "vfab %s: %s: %s\n", verb, cmd[0], strerror(errno));
	return errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}

int vfab_cmd_exec(struct vfab_cli *cli, int argc, char **argv)
{
	int i = parse(cli, argc, argv, exec_usage), ret;
	const char *node;

	if (i < 0)
		return i == -1 ? VFAB_EXIT_OK : -i;
	node = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	ret = vfab_cli_need_operand("exec", "CMD", argc, i, exec_usage);
	if (ret)
		return ret;
	ret = vfab_cli_enter(cli, "exec", node);
	if (ret)
		return ret;
	return run("exec", argv + i);
}

int vfab_cmd_shell(struct vfab_cli *cli, int argc, char **argv)
{
	int i = parse(cli, argc, argv, shell_usage), ret;
	const char *shell = getenv("SHELL");
	char *cmd[3];

	if (i < 0)
		return i == -1 ? VFAB_EXIT_OK : -i;
	if (argc - i != 1) {
		fprintf(stderr, "vfab shell: expected exactly one NODE\n");
		shell_usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	ret = vfab_cli_enter(cli, "shell", argv[i]);
	if (ret)
		return ret;
	cmd[0] = (char *)(shell && *shell ? shell : "/bin/bash");
	cmd[1] = "-i";
	cmd[2] = NULL;
	return run("shell", cmd);
}
