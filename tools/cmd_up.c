/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fabric/config.h"
#include "fabric/region.h"
#include "netns/fabric_net.h"
#include "netns/fsutil.h"
#include "netns/sandbox.h"
#include "tools/cli.h"

#define VFABD_READY_TIMEOUT_MS 10000

static void usage(FILE *f)
{
	fprintf(f, "usage: vfab [--fabric NAME] up [CONFIG]\n"
		   "Brings a fabric up: parses CONFIG (default: the built-in 2-node fabric),\n"
		   "starts vfabd, builds every node (namespaces, eth0, HCA views) and prints\n"
		   "a summary. Nothing is left behind when it fails.\n"
		   "Exit: 0 up, 1 runtime failure (rolled back), 2 usage or config error.\n");
}

/* Checks of our own on top of the parser's: names this CLI reserves. */
static int check_config(const struct vfab_config *cfg, const char *display)
{
	for (uint32_t i = 0; i < cfg->nnodes; i++) {
		if (strcmp(cfg->nodes[i].id, VFAB_FABRIC_NS_SUFFIX) == 0) {
			fprintf(stderr,
				"vfab up: %s:%u: nodes[%u].id: '%s' is reserved for the fabric "
				"namespace\n",
				display, cfg->nodes[i].line, i, cfg->nodes[i].id);
			return -EINVAL;
		}
	}
	return 0;
}

static int write_config_copy(const struct vfab_cli *cli, const char *path)
{
	char dst[PATH_MAX];

	if (vfab_pathf(dst, sizeof(dst), "%s/config.yaml", cli->rundir))
		return -ENAMETOOLONG;
	if (path)
		return vfab_copy_file(path, dst, 0644);
	return vfab_write_file(dst, vfab_default_config_yaml, strlen(vfab_default_config_yaml),
			       0644);
}

static int make_rundir(const struct vfab_cli *cli)
{
	char path[PATH_MAX];
	int ret = vfab_mkdir_p(cli->rundir, 0755);

	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/nodes", cli->rundir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(path, 0755);
	if (ret)
		return ret;
	/* Providers of any user in the nodes create their FIFOs here. */
	if (vfab_pathf(path, sizeof(path), "%s/fifo", cli->rundir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(path, 01777);
	if (ret == 0 && chmod(path, 01777))
		ret = -errno;
	return ret;
}

/* <prefix>/lib next to <prefix>/bin/vfab, absolute. */
static void lib_paths(const struct vfab_cli *cli, char *libdir, size_t len, char *preload,
		      size_t plen)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", cli->exedir);
	snprintf(libdir, len, "%s/lib", dirname(tmp));
	if (vfab_pathf(preload, plen, "%s/libvfab-preload.so", libdir))
		preload[0] = '\0';
}

static void print_summary(const struct vfab_cli *cli, const struct vfab_config *cfg,
			  struct vfab_region *r, pid_t vfabd, long long ms)
{
	printf("fabric %s up in %lld ms: %u node(s), vfabd pid %d, run dir %s\n", cli->fabric, ms,
	       r->nnodes, (int)vfabd, cli->rundir);
	for (uint32_t i = 0; i < r->nnodes; i++) {
		const struct vfab_node *n = &r->nodes[i];
		char addrs[256] = "";
		size_t used = 0;

		for (uint32_t c = 0; c < cfg->nnodes; c++) {
			const struct vfab_cfg_node *cn = &cfg->nodes[c];

			if (strcmp(cn->id, n->id) != 0 || cn->nnetdevs == 0)
				continue;
			for (uint32_t k = 0; k < cn->netdevs[0].naddrs && used < sizeof(addrs); k++)
				used +=
				    (size_t)snprintf(addrs + used, sizeof(addrs) - used, "%s%s",
						     k ? "," : "", cn->netdevs[0].addrs[k].text);
		}
		printf("  %-15s eth0 %-18s", n->id, addrs);
		for (uint32_t h = 0; h < n->nhcas && h < 8; h++) {
			const struct vfab_hca *hca = &r->hcas[n->hcas[h]];
			int gid = vfab_port_ipv4_v2_gid(&hca->ports[0]);

			if (gid >= 0)
				printf(" %s (%s, RoCE v2 IPv4 GID %d)", hca->name,
				       hca->ports[0].netdev, gid);
			else
				printf(" %s (%s)", hca->name, hca->ports[0].netdev);
		}
		printf("\n");
	}
	printf("next: vfab%s%s exec %s -- ibv_devinfo\n",
	       strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? " --fabric " : "",
	       strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? cli->fabric : "",
	       r->nnodes ? r->nodes[0].id : "node0");
}

/* ^C during `up` must not leave half a fabric: signals wait for a check point. */
static int interrupted(void)
{
	sigset_t pending;

	if (sigpending(&pending))
		return 0;
	return sigismember(&pending, SIGINT) || sigismember(&pending, SIGTERM) ||
	       sigismember(&pending, SIGHUP);
}

static int bring_up(const struct vfab_cli *cli, const struct vfab_config *cfg, const char *path,
		    pid_t *vfabd, struct vfab_region **region, char *err, size_t errlen)
{
	char libdir[PATH_MAX], preload[PATH_MAX], rpath[256];
	struct vfab_sandbox sb;
	int ret;

	ret = make_rundir(cli);
	if (ret)
		return snprintf(err, errlen, "create %s", cli->rundir), ret;
	ret = write_config_copy(cli, path);
	if (ret)
		return snprintf(err, errlen, "copy the config to %s", cli->rundir), ret;
	/* vfabd reads the run dir's copy: the fabric never depends on the original. */
	if (vfab_pathf(rpath, sizeof(rpath), "%s/config.yaml", cli->rundir))
		return snprintf(err, errlen, "run dir path too long"), -ENAMETOOLONG;
	ret = vfab_vfabd_start(cli, rpath, vfabd);
	if (ret)
		return snprintf(err, errlen, "start %.3000s/vfabd", cli->exedir), ret;
	ret = vfab_vfabd_wait_ready(cli, *vfabd, VFABD_READY_TIMEOUT_MS, err, errlen);
	if (ret)
		return ret;
	if (interrupted())
		return snprintf(err, errlen, "interrupted"), -EINTR;
	ret = vfab_region_path(cli->fabric, rpath, sizeof(rpath));
	if (ret == 0)
		ret = vfab_region_open(rpath, region);
	if (ret)
		return snprintf(err, errlen, "open the region %s", rpath), ret;
	lib_paths(cli, libdir, sizeof(libdir), preload, sizeof(preload));
	sb = (struct vfab_sandbox){.fabric = cli->fabric,
				   .rundir = cli->rundir,
				   .cfg = cfg,
				   .region = *region,
				   .libdir = libdir,
				   .preload_lib = preload};
	ret = vfab_sandbox_prepare(&sb, err, errlen);
	for (uint32_t i = 0; ret == 0 && i < (*region)->nnodes; i++) {
		pid_t holder;

		if (interrupted())
			return snprintf(err, errlen, "interrupted"), -EINTR;
		ret = vfab_sandbox_node_up(&sb, i, &holder, err, errlen);
	}
	return ret;
}

int vfab_cmd_up(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
					     {"fabric", required_argument, NULL, 'f'},
					     {NULL, 0, NULL, 0}};
	char err[4096] = "", cfgpath[PATH_MAX];
	const char *path = NULL;
	struct vfab_region *region = NULL;
	struct vfab_config cfg;
	long long t0 = vfab_now_ms();
	sigset_t block, old;
	pid_t vfabd = 0;
	int ch, ret;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+hf:", opts, NULL)) != -1) {
		switch (ch) {
		case 'h':
			usage(stdout);
			return VFAB_EXIT_OK;
		case 'f':
			if (vfab_cli_set_fabric(cli, optarg))
				return VFAB_EXIT_USAGE;
			break;
		default:
			usage(stderr);
			return VFAB_EXIT_USAGE;
		}
	}
	if (argc - optind > 1) {
		fprintf(stderr, "vfab up: unexpected argument '%s'\n", argv[optind + 1]);
		usage(stderr);
		return VFAB_EXIT_USAGE;
	}
	if (optind < argc) {
		if (!realpath(argv[optind], cfgpath)) {
			fprintf(stderr, "vfab up: %s: %s\n", argv[optind], strerror(errno));
			return VFAB_EXIT_USAGE;
		}
		path = cfgpath;
	}
	/* Parse first: a bad config creates nothing. */
	ret = path ? vfab_config_load_file(path, &cfg, err, sizeof(err))
		   : vfab_config_load_default(&cfg, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "vfab up: %s\n", err);
		return VFAB_EXIT_USAGE;
	}
	if (check_config(&cfg, path ? argv[optind] : "default")) {
		vfab_config_free(&cfg);
		return VFAB_EXIT_USAGE;
	}
	if (vfab_sandbox_exists(cli->fabric, cli->rundir)) {
		fprintf(
		    stderr,
		    "vfab up: fabric %s is already up (or left over): run 'vfab%s%s down' first\n",
		    cli->fabric, strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? " --fabric " : "",
		    strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? cli->fabric : "");
		vfab_config_free(&cfg);
		return VFAB_EXIT_FAIL;
	}
	umask(022);
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigaddset(&block, SIGHUP);
	sigprocmask(SIG_BLOCK, &block, &old);

	ret = bring_up(cli, &cfg, path, &vfabd, &region, err, sizeof(err));
	if (ret == 0)
		print_summary(cli, &cfg, region, vfabd, vfab_now_ms() - t0);
	if (region)
		vfab_region_close(region);
	if (ret) {
		fprintf(stderr, "vfab up: failed (%s): %s\n", strerror(-ret), err);
		fprintf(stderr, "vfab up: rolling back fabric %s\n", cli->fabric);
		vfab_fabric_down(cli, vfabd, 0);
	}
	vfab_config_free(&cfg);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
}
