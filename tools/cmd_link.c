/* SPDX-License-Identifier: MIT */
/*
 * vfab link: take an HCA port down or bring it up (vfabd's LINK request).
 * Also the request helper the runtime-control verbs (link, shape, fault)
 * share: one line to vfabd, its reply turned into a message and exit code.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

#define OPS_ANSWER_MS 5000 /* FAULT kill walks /proc; generous for a loaded host */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] link NODE/HCA[/PORT] down|up\n"
		"Takes an HCA port down or brings it up while the fabric runs (every port\n"
		"of the HCA when PORT is left out). A down port reads PORT_DOWN in\n"
		"ibv_query_port and '1: DOWN' in sysfs, its contexts get IBV_EVENT_PORT_ERR\n"
		"and traffic through it fails as on hardware; up restores PORT_ACTIVE and\n"
		"raises IBV_EVENT_PORT_ACTIVE. Recorded in 'vfab report'.\n"
		"Exit: 0 ok, 1 vfabd failed or is not running, 2 usage error or unknown port.\n");
}

int vfab_ops_options(struct vfab_cli *cli, int argc, char **argv, void (*usage_fn)(FILE *),
		     int *exit_code)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	int ch;

	optind = 1;
	/* '+': operands such as "lat=5" are never options. */
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		*exit_code = vfab_cli_common_opt(cli, ch, usage_fn);
		if (*exit_code != VFAB_CLI_GO_ON)
			return -1;
	}
	*exit_code = VFAB_EXIT_OK;
	return optind;
}

int vfab_ops_request(const struct vfab_cli *cli, const char *verb, const char *line)
{
	char reply[1024], name[32] = "";
	const char *msg;
	int n;

	/* One request per line: an operand must not smuggle in a second one. */
	if (strpbrk(line, "\n\r")) {
		fprintf(stderr, "vfab %s: operands must not contain line breaks\n", verb);
		return VFAB_EXIT_USAGE;
	}
	n = vfab_vfabd_request(cli, line, reply, sizeof(reply), OPS_ANSWER_MS);
	if (n < 0) {
		fprintf(stderr, "vfab %s: vfabd of fabric %s does not answer (%s); is it up?\n",
			verb, cli->fabric, strerror(-n));
		return VFAB_EXIT_FAIL;
	}
	if (!strncmp(reply, "OK", 2)) {
		printf("%s\n", reply[2] == ' ' ? reply + 3 : "ok");
		return VFAB_EXIT_OK;
	}
	/* "ERR <ENAME> message": a bad name or value is the caller's mistake. */
	msg = reply;
	if (sscanf(reply, "ERR %31s", name) == 1 && name[0] == 'E') {
		msg = strchr(reply + 4, ' ') ? strchr(reply + 4, ' ') + 1 : "";
	} else if (!strncmp(reply, "ERR ", 4)) {
		msg = reply + 4;
		name[0] = '\0';
	}
	fprintf(stderr, "vfab %s: %s\n", verb, msg);
	return !strcmp(name, "EINVAL") || !strcmp(name, "ENOENT") ? VFAB_EXIT_USAGE
								  : VFAB_EXIT_FAIL;
}

int vfab_cmd_link(struct vfab_cli *cli, int argc, char **argv)
{
	char line[256];
	int first, rc;

	first = vfab_ops_options(cli, argc, argv, usage, &rc);
	if (first < 0)
		return rc;
	if (argc - first != 2 ||
	    (strcmp(argv[first + 1], "down") && strcmp(argv[first + 1], "up"))) {
		fprintf(stderr, "vfab link: want NODE/HCA[/PORT] and down or up\n");
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	if (snprintf(line, sizeof(line), "LINK %s %s", argv[first], argv[first + 1]) >=
	    (int)sizeof(line)) {
		fprintf(stderr, "vfab link: '%s' is too long\n", argv[first]);
		return VFAB_EXIT_USAGE;
	}
	return vfab_ops_request(cli, "link", line);
}
