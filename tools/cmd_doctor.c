/* SPDX-License-Identifier: MIT */
/*
 * vfab doctor: whether this host can run vfab, and what is missing, probed
 * for real (netns/host_probe.h) before anything is brought up.
 */
#include <getopt.h>
#include <stdio.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "netns/ctrfs_view.h"
#include "netns/host_probe.h"
#include "tools/cli.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab doctor [--json]\n"
		   "Tries, in child processes with namespaces of their own (nothing reaches\n"
		   "the host), what vfab needs: root, network/mount/UTS/IPC and PID\n"
		   "namespaces, a veth pair and a bridge, a namespace's /proc/sys/net, a\n"
		   "namespace's own sysfs with a tmpfs over /sys/class, a character device\n"
		   "(mknod), overlayfs, process_vm_writev, the IP shaping the wires use\n"
		   "(HTB, classifier programs, netem or a tap), a FUSE mount, and reads the Yama\n"
		   "ptrace scope, /dev/shm's free space, the cpuset cgroup (and whether it\n"
		   "is writable) and libibverbs (its provider ABI). One line each: ok, warn\n"
		   "(vfab works with the limit named) or FAIL (the part named cannot work\n"
		   "here). When the fabric (--fabric, default vfab) is up, also how its\n"
		   "port counters are kept: computed at every read (FUSE) or refreshed\n"
		   "every 250 ms.\n"
		   "Exit: 0 nothing failed, 1 a probe failed, 2 usage error.\n");
}

/* How the running fabric keeps its counters: "fuse", "tick", or NULL when it is not up. */
static const char *counters_mode(const struct vfab_cli *cli)
{
	if (access(cli->rundir, F_OK))
		return NULL;
	return vfab_ctrfs_mounted(cli->rundir) == 1 ? "fuse" : "tick";
}

static void print_json(const struct vfab_cli *cli, const struct utsname *u,
		       const struct vfab_probe_result *p, size_t n, int failed)
{
	const char *mode = counters_mode(cli);

	printf("{\"kernel\":");
	vfab_cli_json_str(u->release);
	printf(",\"machine\":");
	vfab_cli_json_str(u->machine);
	printf(",\"ok\":%s,\"probes\":[", failed ? "false" : "true");
	for (size_t i = 0; i < n; i++) {
		printf("%s{\"name\":", i ? "," : "");
		vfab_cli_json_str(p[i].name);
		printf(",\"verdict\":");
		vfab_cli_json_str(vfab_probe_verdict_name(p[i].verdict));
		printf(",\"needed_by\":");
		vfab_cli_json_str(p[i].needed_by);
		printf(",\"detail\":");
		vfab_cli_json_str(p[i].detail);
		printf("}");
	}
	printf("]");
	if (mode) {
		printf(",\"counters\":{\"fabric\":");
		vfab_cli_json_str(cli->fabric);
		printf(",\"mode\":");
		vfab_cli_json_str(mode);
		printf("}");
	}
	printf("}\n");
}

int vfab_cmd_doctor(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {"json", no_argument, NULL, 'j'},
					     {NULL, 0, NULL, 0}};
	struct vfab_probe_result p[VFAB_HOST_PROBES];
	struct utsname u;
	int ch, ret, json = 0, failed = 0;
	size_t n;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		if (ch == 'j') {
			json = 1;
			continue;
		}
		ret = vfab_cli_common_opt(cli, ch, usage);
		if (ret != VFAB_CLI_GO_ON)
			return ret;
	}
	ret = vfab_cli_no_more_operands("doctor", argc, argv, optind, usage);
	if (ret)
		return ret;
	if (uname(&u))
		u = (struct utsname){.release = "?", .machine = "?"};
	n = vfab_host_probe_run(p);
	for (size_t i = 0; i < n; i++)
		failed |= p[i].verdict == VFAB_PROBE_FAIL;
	if (json) {
		print_json(cli, &u, p, n, failed);
		return failed ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
	}
	printf("kernel %s %s\n", u.release, u.machine);
	for (size_t i = 0; i < n; i++)
		printf("%-4s  %-18s %s%s%s\n", vfab_probe_verdict_name(p[i].verdict), p[i].name,
		       p[i].detail, p[i].verdict == VFAB_PROBE_OK ? "" : " -- needed by: ",
		       p[i].verdict == VFAB_PROBE_OK ? "" : p[i].needed_by);
	if (counters_mode(cli))
		printf("fabric %s: port counters %s\n", cli->fabric,
		       counters_mode(cli)[0] == 'f'
			   ? "computed at every read (FUSE file system)"
			   : "refreshed every 250 ms (files rewritten by vfabd; no FUSE mount)");
	printf("%s\n", failed ? "vfab cannot run here: see the FAIL lines" : "vfab can run here");
	return failed ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
}
