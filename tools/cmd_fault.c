/* SPDX-License-Identifier: MIT */
/* vfab fault: break a running fabric on purpose (vfabd's FAULT requests). */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] fault kill NODE\n"
		"       vfab [--fabric NAME] fault pause NODE [SECONDS]\n"
		"       vfab [--fabric NAME] fault resume NODE\n"
		"       vfab [--fabric NAME] fault spike TARGET lat=US for=SECONDS\n"
		"  kill    SIGKILL every process of NODE (its network namespace), except the\n"
		"          node's holder and sshd: peers see their QPs time out\n"
		"  pause   SIGSTOP them, SIGCONT after SECONDS or on 'fault resume': peers\n"
		"          time out meanwhile, then the node carries on\n"
		"  spike   add US microseconds of latency to TARGET (a link name, or\n"
		"          NODE/HCA[/PORT] for both directions of its ports) for SECONDS\n"
		"Every fault is recorded in 'vfab report'.\n"
		"Exit: 0 ok, 1 vfabd failed or is not running, 2 usage error or unknown target.\n");
}

int vfab_cmd_fault(struct vfab_cli *cli, int argc, char **argv)
{
	char line[256];
	const char *kind;
	int first, rc, nargs;
	size_t n;

	first = vfab_ops_options(cli, argc, argv, usage, &rc);
	if (first < 0)
		return rc;
	nargs = argc - first;
	kind = nargs ? argv[first] : "";
	if (!((!strcmp(kind, "kill") && nargs == 2) || (!strcmp(kind, "resume") && nargs == 2) ||
	      (!strcmp(kind, "pause") && (nargs == 2 || nargs == 3)) ||
	      (!strcmp(kind, "spike") && nargs == 4))) {
		fprintf(stderr, "vfab fault: want kill|pause|resume NODE or spike TARGET "
				"lat=US for=SECONDS\n");
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	n = (size_t)snprintf(line, sizeof(line), "FAULT");
	for (int i = first; i < argc && n < sizeof(line); i++)
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", argv[i]);
	if (n >= sizeof(line)) {
		fprintf(stderr, "vfab fault: the request is too long\n");
		return VFAB_EXIT_USAGE;
	}
	return vfab_ops_request(cli, "fault", line);
}
