/* SPDX-License-Identifier: MIT */
/* vfab shape: a link's rate, latency and loss while traffic runs (vfabd's SHAPE). */
#include <stdio.h>
#include <string.h>

#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] shape TARGET [bw=GBPS] [lat=US] [loss=P]\n"
		"Changes the link model of TARGET at once, for traffic already running:\n"
		"  TARGET   a link name as 'vfab stats' lists them (node0/mlx5_0/1/up,\n"
		"           leaf0/down, node0/loopback), or NODE/HCA[/PORT]: both directions\n"
		"           of each port (port -> leaf and leaf -> port)\n"
		"  bw=GBPS  rate in Gb/s, 0 = unshaped (memory speed); on NODE/HCA the\n"
		"           port also reports the new rate (ibv_query_port, sysfs 'rate')\n"
		"  lat=US   one-way latency of each link, in microseconds; a message between\n"
		"           two nodes of a leaf crosses the sender's up and the receiver's\n"
		"           down link, so it sees the sum of both\n"
		"  loss=P   probability 0..1 that a message attempt is lost on the link\n"
		"Give at least one of them. Recorded in 'vfab report'.\n"
		"Exit: 0 ok, 1 vfabd failed or is not running, 2 usage error or unknown target.\n");
}

int vfab_cmd_shape(struct vfab_cli *cli, int argc, char **argv)
{
	char line[256];
	size_t n;
	int first, rc;

	first = vfab_ops_options(cli, argc, argv, usage, &rc);
	if (first < 0)
		return rc;
	if (argc - first < 2) {
		fprintf(stderr, "vfab shape: want TARGET and at least one of bw=, lat=, loss=\n");
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	n = (size_t)snprintf(line, sizeof(line), "SHAPE %s", argv[first]);
	for (int i = first + 1; i < argc && n < sizeof(line); i++) {
		const char *a = argv[i];

		if (strncmp(a, "bw=", 3) && strncmp(a, "lat=", 4) && strncmp(a, "loss=", 5)) {
			fprintf(stderr, "vfab shape: '%s' is not bw=, lat= or loss=\n", a);
			usage(stderr);
			return VFAB_EXIT_USAGE;
		}
		n += (size_t)snprintf(line + n, sizeof(line) - n, " %s", a);
	}
	if (n >= sizeof(line)) {
		fprintf(stderr, "vfab shape: the request is too long\n");
		return VFAB_EXIT_USAGE;
	}
	return vfab_ops_request(cli, "shape", line);
}
