/* SPDX-License-Identifier: MIT */
/*
 * vfab ssh: the host has no route into the fabric's 198.18.x network (and
 * must not get one), so the ssh client runs inside a node, as it would on a
 * cluster's login node, with the fabric's generated client config.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "config/config.h"
#include "netns/launch_files.h"
#include "netns/node_sshd.h"
#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] ssh [--from NODE] NODE [CMD [ARGS...]]\n"
		   "ssh to NODE's sshd (fabrics brought up with 'vfab up --ssh') as root (in a\n"
		   "fabric without root: as its user) with the fabric's key: a login shell, or\n"
		   "CMD. The client runs inside --from NODE\n"
		   "(default: the first node), since only the nodes reach the fabric's addresses;\n"
		   "inside any node plain 'ssh NODE' works the same way. ARGS are passed to ssh\n"
		   "as they are: the remote side joins them with spaces for its shell.\n"
		   "Exit: the remote command's status, 255 for an ssh error, 1 when the fabric is\n"
		   "not up or has no sshd, 2 usage error or unknown node.\n");
}

int vfab_cmd_ssh(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {"from", required_argument, NULL, 'F'},
					     {NULL, 0, NULL, 0}};
	char config[PATH_MAX], from_id[VFAB_CFG_NODE_ID_MAX + 1] = "";
	const char *from = NULL;
	struct vfab_config cfg;
	char **args;
	int ch, ret, n;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:F:", opts, NULL)) != -1) {
		switch (ch) {
		case 'F':
			from = optarg;
			break;
		default:
			ret = vfab_cli_common_opt(cli, ch, usage);
			if (ret != VFAB_CLI_GO_ON)
				return ret;
		}
	}
	ret = vfab_cli_need_operand("ssh", "NODE", argc, optind, usage);
	if (ret)
		return ret;
	ret = vfab_cli_check_node(cli, "ssh", argv[optind]);
	if (ret)
		return ret;
	if (!vfab_ssh_enabled(cli->rundir)) {
		fprintf(stderr,
			"vfab ssh: fabric %s runs no sshd: bring it up with 'vfab up --ssh'\n",
			cli->fabric);
		return VFAB_EXIT_FAIL;
	}
	if (!from) {
		ret = vfab_cli_load_config(cli, "ssh", &cfg);
		if (ret)
			return ret;
		snprintf(from_id, sizeof(from_id), "%s", cfg.nnodes ? cfg.nodes[0].id : "");
		vfab_config_free(&cfg);
		from = from_id;
	}
	if (vfab_pathf(config, sizeof(config), "%s/" VFAB_SSH_CONFIG, cli->rundir))
		return VFAB_EXIT_FAIL;
	/* ssh -F CONFIG NODE [CMD...] */
	n = argc - optind;
	args = calloc((size_t)n + 4, sizeof(*args));
	if (!args)
		return VFAB_EXIT_FAIL;
	args[0] = "ssh";
	args[1] = "-F";
	args[2] = config;
	for (int i = 0; i < n; i++)
		args[3 + i] = argv[optind + i];
	ret = vfab_cli_enter(cli, "ssh", from);
	if (ret) {
		free(args);
		return ret;
	}
	execvp(args[0], args);
	fprintf(stderr, "vfab ssh: ssh: %s%s\n", strerror(errno),
		errno == ENOENT ? " (install openssh-client)" : "");
	free(args);
	return errno == ENOENT ? 127 : 126;
}
