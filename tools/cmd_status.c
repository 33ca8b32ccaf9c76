/* SPDX-License-Identifier: MIT */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/fabric_net.h"
#include "netns/holder.h"
#include "netns/launch_files.h"
#include "netns/node_sshd.h"
#include "netns/sandbox.h"
#include "tools/cli.h"

#define STATUS_ANSWER_MS 500

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] status [--json]\n"
		   "Shows the fabric: vfabd (pid, alive, its STATUS counters), and per node\n"
		   "its holder pid, CPUs (its cpuset), eth0 addresses and HCAs with the\n"
		   "index of their IPv4 RoCE v2 GID, the --libdir directories and, for\n"
		   "fabrics up with --ssh, each node's sshd. --json prints one JSON object\n"
		   "instead.\n"
		   "Exit: 0 up and healthy, 1 not up or degraded, 2 usage error.\n");
}

int vfab_port_ipv4_v2_gid(const struct vfab_port *p, uint32_t node)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	for (uint32_t i = 0; i < p->ngids && i < VFAB_PORT_GIDS; i++)
		if (p->gids[i].type == VFAB_GID_ROCE_V2 &&
		    (!p->gids[i].pod || p->gids[i].pod == node + 1) &&
		    memcmp(p->gids[i].raw, v4mapped, sizeof(v4mapped)) == 0)
			return (int)p->gids[i].index;
	return -1;
}

struct node_status {
	char id[VFAB_NAME_MAX];
	pid_t holder;
	int holder_alive;
	pid_t sshd; /* alive sshd of a fabric with --ssh, else 0 */
	char addrs[512];
	int node_index; /* index in the topology, -1: none */
};

struct fabric_status {
	pid_t vfabd;
	char vfabd_json[1024]; /* vfabd's STATUS line, "" when it did not answer */
	/*
	 * Names, CPUs and wiring come from the CLI's own topology (t, from the
	 * run dir's config): `status` often runs as root, and the region (r)
	 * is every user's to write; it gives only the live GID tables printed.
	 */
	struct vfab_region *t;
	struct vfab_region *r;
	int nnodes;
	struct node_status nodes[VFAB_MAX_NODES];
	int healthy;
	int ssh;
	char libdirs[4096]; /* <rundir>/libdirs: one per line */
	char host[64];	    /* <rundir>/host: the machine's share (vfab up --host); "" none */
};

static void gather_node(const struct vfab_cli *cli, struct fabric_status *fs, const char *id,
			int node_index)
{
	struct node_status *ns = &fs->nodes[fs->nnodes++];
	char path[PATH_MAX];

	memset(ns, 0, sizeof(*ns));
	snprintf(ns->id, sizeof(ns->id), "%.*s", (int)sizeof(ns->id) - 1, id);
	ns->node_index = node_index;
	if (vfab_holder_pid_path(path, sizeof(path), cli->rundir, id) == 0 &&
	    vfab_read_pid_file(path, &ns->holder) == 0)
		ns->holder_alive = vfab_holder_is_alive(ns->holder);
	if (ns->holder_alive)
		vfab_net_node_addrs(cli->fabric, id, "eth0", ns->addrs, sizeof(ns->addrs));
	if (!ns->holder_alive)
		fs->healthy = 0;
	if (fs->ssh) {
		ns->sshd = vfab_sshd_pid(cli->rundir, id);
		if (!ns->sshd)
			fs->healthy = 0;
	}
}

static void gather(const struct vfab_cli *cli, struct fabric_status *fs)
{
	char path[PATH_MAX];

	memset(fs, 0, sizeof(*fs));
	fs->healthy = 1;
	fs->ssh = vfab_ssh_enabled(cli->rundir);
	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_LIBDIRS_FILE, cli->rundir) ||
	    vfab_read_file(path, fs->libdirs, sizeof(fs->libdirs)) < 0)
		fs->libdirs[0] = '\0';
	if (vfab_run_host_path(path, sizeof(path), cli->rundir) ||
	    vfab_read_file(path, fs->host, sizeof(fs->host)) < 0)
		fs->host[0] = '\0';
	fs->host[strcspn(fs->host, "\n")] = '\0';
	fs->vfabd = vfab_vfabd_pid(cli);
	if (vfab_vfabd_request(cli, "STATUS", fs->vfabd_json, sizeof(fs->vfabd_json),
			       STATUS_ANSWER_MS) <= 0 ||
	    fs->vfabd_json[0] != '{')
		fs->vfabd_json[0] = '\0';
	if (!fs->vfabd || !fs->vfabd_json[0])
		fs->healthy = 0;
	if (vfab_region_path(cli->fabric, path, sizeof(path)) || vfab_region_open(path, &fs->r)) {
		fs->r = NULL;
		fs->healthy = 0;
	}
	if (vfab_cli_topology(cli, NULL, &fs->t) == VFAB_EXIT_OK) {
		for (uint32_t i = 0; i < fs->t->nnodes && i < VFAB_MAX_NODES; i++)
			gather_node(cli, fs, fs->t->nodes[i].id, (int)i);
		return;
	}
	/* No config copy (crashed, half-built): the run dir still knows the nodes. */
	fs->t = NULL;
	fs->healthy = 0;
	if (vfab_pathf(path, sizeof(path), "%s/nodes", cli->rundir) == 0) {
		DIR *d = opendir(path);
		struct dirent *de;

		while (d && (de = readdir(d)) && fs->nnodes < VFAB_MAX_NODES)
			if (de->d_name[0] != '.')
				gather_node(cli, fs, de->d_name, -1);
		if (d)
			closedir(d);
	}
}

static void print_libdirs_text(const char *list)
{
	char buf[4096], *save = NULL;

	snprintf(buf, sizeof(buf), "%s", list);
	for (char *d = strtok_r(buf, "\n", &save); d; d = strtok_r(NULL, "\n", &save))
		printf("  libdir  %s\n", d);
}

/* The RoCE v2 IPv4 GID index of a port as the live region says; -1 without a region. */
static int live_gid(const struct fabric_status *fs, uint32_t hca, uint32_t port, uint32_t node)
{
	if (!fs->r || hca >= VFAB_MAX_HCAS || port >= VFAB_MAX_PORTS)
		return -1;
	return vfab_port_ipv4_v2_gid(&fs->r->hcas[hca].ports[port], node);
}

static void print_text(const struct vfab_cli *cli, const struct fabric_status *fs)
{
	printf("fabric %s: %s\n", cli->fabric, fs->healthy ? "up" : "DEGRADED");
	printf("  run dir %s\n", cli->rundir);
	if (fs->host[0])
		printf("  host    %s (this machine's share of a multi-host cluster)\n", fs->host);
	if (fs->vfabd)
		printf("  vfabd   pid %d, %s\n", (int)fs->vfabd,
		       fs->vfabd_json[0] ? fs->vfabd_json : "not answering");
	else
		printf("  vfabd   not running\n");
	print_libdirs_text(fs->libdirs);
	if (fs->ssh)
		printf("  ssh     sshd in every node: %s/" VFAB_SSH_CONFIG "\n", cli->rundir);
	printf("  %-15s %-16s %-10s %-22s %s\n", "NODE", "HOLDER", "CPUS", "ETH0", "HCAS");
	for (int i = 0; i < fs->nnodes; i++) {
		const struct node_status *ns = &fs->nodes[i];
		char holder[32], cpus[256] = "-";

		if (ns->holder)
			snprintf(holder, sizeof(holder), "%d %s", (int)ns->holder,
				 ns->holder_alive ? "alive" : "DEAD");
		else
			snprintf(holder, sizeof(holder), "none");
		if (fs->t && ns->node_index >= 0)
			vfab_cpus_format_list(&fs->t->nodes[ns->node_index].cpus, cpus,
					      sizeof(cpus));
		printf("  %-15s %-16s %-10s %-22s", ns->id, holder, cpus,
		       ns->addrs[0] ? ns->addrs : "-");
		if (fs->ssh && ns->sshd)
			printf(" sshd %d", (int)ns->sshd);
		else if (fs->ssh)
			printf(" sshd DEAD");
		if (fs->t && ns->node_index >= 0) {
			const struct vfab_node *n = &fs->t->nodes[ns->node_index];

			for (uint32_t h = 0; h < n->nhcas && h < 8; h++) {
				const struct vfab_hca *hca = &fs->t->hcas[n->hcas[h]];

				printf(" %s (uverbs%u, GID %d, %u copy engine%s)", hca->name,
				       hca->uverbs_idx, live_gid(fs, n->hcas[h], 0, n->index),
				       hca->copy_engines, hca->copy_engines == 1 ? "" : "s");
			}
		}
		printf("\n");
	}
}

/* A JSON array of the items of `list` separated by any of `seps`. */
static void json_list(const char *list, const char *seps)
{
	char buf[4096], *save = NULL;
	int first = 1;

	snprintf(buf, sizeof(buf), "%s", list);
	putchar('[');
	for (char *a = strtok_r(buf, seps, &save); a; a = strtok_r(NULL, seps, &save)) {
		printf("%s", first ? "" : ",");
		vfab_cli_json_str(a);
		first = 0;
	}
	putchar(']');
}

static void json_hcas(const struct fabric_status *fs, const struct vfab_node *n)
{
	putchar('[');
	for (uint32_t h = 0; h < n->nhcas && h < 8; h++) {
		const struct vfab_hca *hca = &fs->t->hcas[n->hcas[h]];

		printf("%s{\"name\":", h ? "," : "");
		vfab_cli_json_str(hca->name);
		printf(",\"uverbs\":\"uverbs%u\",\"copy_engines\":%u,\"ports\":[", hca->uverbs_idx,
		       hca->copy_engines);
		for (uint32_t p = 0; p < hca->nports && p < VFAB_MAX_PORTS; p++) {
			printf("%s{\"port\":%u,\"netdev\":", p ? "," : "", p + 1);
			vfab_cli_json_str(hca->ports[p].netdev);
			printf(",\"ipv4_rocev2_gid_index\":%d}",
			       live_gid(fs, n->hcas[h], p, n->index));
		}
		printf("]}");
	}
	putchar(']');
}

static void print_json(const struct vfab_cli *cli, const struct fabric_status *fs)
{
	printf("{\"fabric\":");
	vfab_cli_json_str(cli->fabric);
	printf(",\"up\":true,\"healthy\":%s,\"rundir\":", fs->healthy ? "true" : "false");
	vfab_cli_json_str(cli->rundir);
	printf(",\"vfabd\":{\"pid\":%d,\"alive\":%s,\"status\":%s}", (int)fs->vfabd,
	       fs->vfabd ? "true" : "false", fs->vfabd_json[0] ? fs->vfabd_json : "null");
	printf(",\"libdirs\":");
	json_list(fs->libdirs, "\n");
	printf(",\"ssh\":%s,\"host\":", fs->ssh ? "true" : "false");
	if (fs->host[0])
		vfab_cli_json_str(fs->host);
	else
		printf("null");
	printf(",\"nodes\":[");
	for (int i = 0; i < fs->nnodes; i++) {
		const struct node_status *ns = &fs->nodes[i];

		printf("%s{\"id\":", i ? "," : "");
		vfab_cli_json_str(ns->id);
		printf(",\"holder_pid\":%d,\"holder_alive\":%s,\"eth0\":", (int)ns->holder,
		       ns->holder_alive ? "true" : "false");
		json_list(ns->addrs, ",");
		if (fs->t && ns->node_index >= 0) {
			char cpus[4096];

			if (vfab_cpus_format_list(&fs->t->nodes[ns->node_index].cpus, cpus,
						  sizeof(cpus)) == 0) {
				printf(",\"cpus\":");
				vfab_cli_json_str(cpus);
			}
		}
		if (fs->ssh)
			printf(",\"sshd_pid\":%d", (int)ns->sshd);
		printf(",\"hcas\":");
		if (fs->t && ns->node_index >= 0)
			json_hcas(fs, &fs->t->nodes[ns->node_index]);
		else
			printf("[]");
		putchar('}');
	}
	printf("]}\n");
}

int vfab_cmd_status(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"json", no_argument, NULL, 'j'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	struct fabric_status *fs;
	int ch, json = 0, healthy, ret;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hjf:", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			json = 1;
			break;
		default:
			ret = vfab_cli_common_opt(cli, ch, usage);
			if (ret != VFAB_CLI_GO_ON)
				return ret;
		}
	}
	ret = vfab_cli_no_more_operands("status", argc, argv, optind, usage);
	if (ret)
		return ret;
	if (!vfab_sandbox_exists(cli->fabric, cli->rundir)) {
		if (json) {
			printf("{\"fabric\":");
			vfab_cli_json_str(cli->fabric);
			printf(",\"up\":false}\n");
		} else {
			printf("fabric %s is not up\n", cli->fabric);
		}
		return VFAB_EXIT_FAIL;
	}
	fs = malloc(sizeof(*fs));
	if (!fs)
		return VFAB_EXIT_FAIL;
	gather(cli, fs);
	if (json)
		print_json(cli, fs);
	else
		print_text(cli, fs);
	healthy = fs->healthy;
	if (fs->r)
		vfab_region_close(fs->r);
	vfab_topology_private_free(fs->t);
	free(fs);
	return healthy ? VFAB_EXIT_OK : VFAB_EXIT_FAIL;
}
