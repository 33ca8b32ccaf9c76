/* SPDX-License-Identifier: MIT */
/*
 * vfab: bring a virtual RoCE fabric up and down, look at it, and run
 * programs inside its nodes. One verb per file (cmd_*.c).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/fsutil.h"
#include "netns/userns.h"
#include "tools/cli.h"

static const struct {
	const char *name;
	int (*fn)(struct vfab_cli *, int, char **);
	const char *summary;
} verbs[] = {
    {"up", vfab_cmd_up, "up [CONFIG]           start a fabric (default: 2 nodes)"},
    {"down", vfab_cmd_down, "down                  stop it and remove everything"},
    {"status", vfab_cmd_status, "status [--json]       vfabd, nodes, addresses, HCAs"},
    {"exec", vfab_cmd_exec, "exec NODE -- CMD...   run CMD inside NODE"},
    {"shell", vfab_cmd_shell, "shell NODE            interactive shell inside NODE"},
    {"run", vfab_cmd_run, "run -- CMD...         CMD in every node at once, output prefixed"},
    {"ssh", vfab_cmd_ssh, "ssh NODE [CMD...]     ssh into NODE (fabrics up with --ssh)"},
    {"addr", vfab_cmd_addr, "addr NODE [add|del A] list or change a node's addresses; GIDs follow"},
    {"link", vfab_cmd_link, "link N/HCA down|up    take an HCA port down or bring it up"},
    {"shape", vfab_cmd_shape, "shape LINK bw= lat=   change a link's rate, latency, loss"},
    {"fault", vfab_cmd_fault, "fault KIND NODE|LINK  kill, pause, resume a node; latency spikes"},
    {"stats", vfab_cmd_stats, "stats [--interval S]  per-link throughput, queueing, drops"},
    {"report", vfab_cmd_report, "report [--json]       links, ports, QPs and faults so far"},
    {"trace", vfab_cmd_trace,
     "trace [--json]        every QP: owner, state, peer, what it waits for"},
    {"capture", vfab_cmd_capture, "capture N/HCA -w F   a pcap of a port's traffic as RoCE frames"},
    {"doctor", vfab_cmd_doctor,
     "doctor [--json]       can this host run vfab? (probes what it needs)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] VERB [ARGS...]\n"
		   "A virtual RoCE fabric: nodes are namespaces with emulated mlx5 HCAs.\n"
		   "  --fabric NAME   which fabric (default " VFAB_DEFAULT_FABRIC ")\n"
		   "verbs:\n");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		fprintf(f, "  %s\n", verbs[i].summary);
	fprintf(f, "'vfab VERB --help' describes each verb.\n"
		   "Exit: 0 ok, 1 runtime failure, 2 usage or config error (exec, run, ssh: the\n"
		   "command's status).\n");
}

/*
 * The fabric a command names: main's --fabric, or the verb's, found as the
 * verb's getopt finds it (up to "--"; up and capture take options after
 * their operands, the other verbs stop at the first operand, so that
 * `vfab ssh node1 tail -f log` names no fabric "log"). A user who is not
 * root enters that fabric's user namespace (netns/userns.h) before the verb
 * looks at anything. The verbs' options that take a separate argument:
 */
static const char opt_arg_short[] = "fFicnopwL";
static const char *const opt_arg_long[] = {"count",  "fabric",	 "for",	   "from",
					   "html",   "interval", "libdir", "nodes",
					   "output", "port",	 "snaplen"};

static int takes_arg(const char *a)
{
	if (a[1] != '-')
		return a[1] && !a[2] && strchr(opt_arg_short, a[1]);
	for (size_t i = 0; i < sizeof(opt_arg_long) / sizeof(opt_arg_long[0]); i++)
		if (!strcmp(a + 2, opt_arg_long[i]))
			return 1;
	return 0;
}

static const char *named_fabric(int argc, char **argv, int verb, const char *dflt)
{
	bool permute = !strcmp(argv[verb], "up") || !strcmp(argv[verb], "capture");
	const char *name = dflt;

	for (int i = verb + 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (argv[i][0] != '-' || !argv[i][1]) {
			if (!permute)
				break;
		} else if (!strcmp(argv[i], "--fabric") || !strcmp(argv[i], "-f")) {
			if (i + 1 < argc)
				name = argv[++i];
		} else if (!strncmp(argv[i], "--fabric=", 9)) {
			name = argv[i] + 9;
		} else if (takes_arg(argv[i])) {
			i++;
		}
	}
	return name;
}

/* *made: whether this call made the fabric's user namespace (up), to end it when up fails. */
static int enter_rootless(const char *verb, const char *fabric, bool *made)
{
	char err[1024] = "";
	int ret;

	*made = false;
	if (!vfab_userns_outside() || !strcmp(verb, "doctor") || vfab_fabric_name_check(fabric))
		return 0;
	if (strcmp(verb, "up")) {
		ret = vfab_userns_join(fabric);
		if (ret && ret != -ENOENT)
			fprintf(stderr, "vfab: enter the user namespace of fabric %s: %s\n", fabric,
				strerror(-ret));
		return ret == -ENOENT ? 0 : ret;
	}
	ret = vfab_userns_create(fabric, err, sizeof(err));
	*made = ret == 0;
	if (ret == -EEXIST)
		ret = vfab_userns_join(fabric);
	if (ret)
		fprintf(stderr, "vfab up: without root: %s: %s\n", err[0] ? err : "join",
			strerror(-ret));
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	struct vfab_cli cli;
	int ch, ret;

	memset(&cli, 0, sizeof(cli));
	vfab_cli_set_fabric(&cli, VFAB_DEFAULT_FABRIC);
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		ret = vfab_cli_common_opt(&cli, ch, usage);
		if (ret != VFAB_CLI_GO_ON)
			return ret;
	}
	if (optind >= argc) {
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	if (strcmp(argv[optind], "help") == 0) {
		usage(stdout);
		return VFAB_EXIT_OK;
	}
	ret = vfab_self_exe_dir(cli.exedir, sizeof(cli.exedir));
	if (ret) {
		fprintf(stderr, "vfab: cannot find my own directory: %s\n", strerror(-ret));
		return VFAB_EXIT_FAIL;
	}
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++) {
		if (strcmp(argv[optind], verbs[i].name))
			continue;
		const char *fabric = named_fabric(argc, argv, optind, cli.fabric);
		bool made;

		if (enter_rootless(verbs[i].name, fabric, &made))
			return VFAB_EXIT_FAIL;
		ret = verbs[i].fn(&cli, argc - optind, argv + optind);
		/* An up that failed (or never began: a usage error) leaves no keeper. */
		if (made && ret != VFAB_EXIT_OK)
			vfab_userns_end(fabric);
		return ret;
	}
	fprintf(stderr, "vfab: unknown verb '%s'\n", argv[optind]);
	usage(stderr);
	return VFAB_EXIT_USAGE;
}
