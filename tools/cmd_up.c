/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/paths.h"
#include "config/config.h"
#include "fabric/region.h"
#include "fabric/topology.h"
#include "netns/fabric_net.h"
#include "netns/host_probe.h"
#include "netns/launch_files.h"
#include "netns/node_cpus.h"
#include "netns/sandbox.h"
#include "netns/uplink.h"
#include "tools/cli.h"
#include "tools/layout.h"
#include "tools/up_gpus.h"

#define VFABD_READY_TIMEOUT_MS 10000
#define MAX_LIBDIRS 16

/* What `up` was asked for beyond the config. */
struct up_opts {
	const char *libdirs[MAX_LIBDIRS];
	char libdir_buf[MAX_LIBDIRS][PATH_MAX];
	unsigned nlibdirs;
	int ssh;
	const char *host; /* --host: this machine's hosts[] id (multi-host) */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfab [--fabric NAME] up [--libdir DIR]... [--ssh] [--host ID] [CONFIG]\n"
		"Brings a fabric up: parses CONFIG (default: the built-in 2-node fabric),\n"
		"starts vfabd, builds every node (namespaces, eth0, HCA views) and prints\n"
		"a summary. Nothing is left behind when it fails. The run dir gets\n"
		"'hostfile' (DeepSpeed: 'node0 slots=1') and 'hosts' (one node per line).\n"
		"  --libdir DIR  libraries the host lacks (e.g. rdma-core unpacked with\n"
		"                dpkg -x): listed in every node's /etc/ld.so.conf.d and\n"
		"                its own ld.so.cache, so programs in the nodes find them\n"
		"                without LD_LIBRARY_PATH. Repeatable (up to %d).\n"
		"  --ssh         an sshd in every node on port 22 of its addresses, root\n"
		"                login with a key generated for the fabric; the run dir\n"
		"                gets 'ssh_config'; in the nodes 'ssh node1' works as is\n"
		"                (pdsh, DeepSpeed hostfiles); from the host: 'vfab ssh'.\n"
		"                Needs openssh-server.\n"
		"  --host ID     CONFIG spans machines (hosts[] with uplinks): bring up\n"
		"                this machine's share, host ID's nodes, and route the other\n"
		"                hosts' leaves through its uplink. Without it every node\n"
		"                of every host comes up on this machine.\n"
		"Exit: 0 up, 1 runtime failure (rolled back), 2 usage or config error.\n",
		MAX_LIBDIRS);
}

static int add_libdir(struct up_opts *o, const char *dir)
{
	struct stat st;
	char *p;

	if (o->nlibdirs >= MAX_LIBDIRS) {
		fprintf(stderr, "vfab up: --libdir: at most %d directories\n", MAX_LIBDIRS);
		return -E2BIG;
	}
	p = o->libdir_buf[o->nlibdirs];
	if (!realpath(dir, p) || stat(p, &st)) {
		fprintf(stderr, "vfab up: --libdir %s: %s\n", dir, strerror(errno));
		return -ENOENT;
	}
	if (!S_ISDIR(st.st_mode) || strchr(p, '\n')) {
		fprintf(stderr, "vfab up: --libdir %s: not a directory\n", dir);
		return -ENOTDIR;
	}
	o->libdirs[o->nlibdirs++] = p;
	return 0;
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

	if (vfab_run_config_path(dst, sizeof(dst), cli->rundir))
		return -ENAMETOOLONG;
	if (path)
		return vfab_copy_file(path, dst, 0644);
	return vfab_write_file(dst, vfab_default_config_yaml, strlen(vfab_default_config_yaml),
			       0644);
}

/* A directory every user may create files in and only their owner remove (01777). */
static int make_shared_dir(const char *path)
{
	int ret = vfab_mkdir_p(path, 01777);

	if (ret == 0 && chmod(path, 01777))
		ret = -errno;
	return ret;
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
	/*
	 * Sticky and open to all, made here with fixed modes (never with a
	 * caller's umask): providers of any user in the nodes create their
	 * FIFOs in fifo/, and RDMA CM listeners of any user their entries in
	 * cm/ (docs/TRUST.md).
	 */
	if (vfab_fifo_dir(path, sizeof(path), cli->rundir))
		return -ENAMETOOLONG;
	ret = make_shared_dir(path);
	if (ret)
		return ret;
	if (vfab_cm_dir(path, sizeof(path), cli->rundir))
		return -ENAMETOOLONG;
	return make_shared_dir(path);
}

/*
 * The nodes load vfab's provider from libdir: where other users cannot
 * reach it (a build under /root, mode 700), only root can use the HCAs.
 */
static void warn_private_libdir(const char *libdir)
{
	char lib[PATH_MAX], where[PATH_MAX];
	struct stat st;

	if (vfab_pathf(lib, sizeof(lib), "%s/" VFAB_PROVIDER_LIB, libdir) ||
	    vfab_path_public(lib, where, sizeof(where)) != -EACCES)
		return;
	if (stat(where, &st))
		st.st_mode = 0;
	fprintf(stderr,
		"vfab up: warning: %s (mode %03o) keeps users other than root from %s:"
		" in the nodes only root can use the HCAs (build vfab where every user can"
		" read it)\n",
		where, (unsigned)(st.st_mode & 0777), lib);
}

static void print_note(const char *text)
{
	fprintf(stderr, "vfab up: note: %s\n", text);
}

/* What a fabric without root has in place of root's means (netns/userns.h). */
static void print_rootless(const struct vfab_cli *cli, const char *node, int ssh)
{
	char dir[PATH_MAX], path[PATH_MAX];

	printf("  without root: a user namespace of uid %ld (root only inside it)",
	       vfab_fabric_owner_uid());
	if (ssh)
		printf("; ssh logins run as the user without that root: start a job's ranks"
		       " all over ssh or all with vfab exec/run (the kernel refuses copies"
		       " from a login's processes into theirs)");
	if (*node && vfab_node_dir(dir, sizeof(dir), cli->rundir, node) == 0 &&
	    vfab_pathf(path, sizeof(path), "%s/" VFAB_NODE_CGROUP_FILE, dir) == 0 &&
	    access(path, F_OK))
		printf("; node CPUs by affinity (no cgroup v2 subtree with cpuset delegated to "
		       "this user)");
	else if (*node)
		printf("; node CPUs in cpuset cgroups of this user's delegated subtree");
	printf("\n");
}

/* Multi-host: whose share this is and how the other hosts are reached. */
static void print_hosts(const struct vfab_config *cfg)
{
	uint32_t count;
	const struct vfab_cfg_node *all = vfab_config_cluster(cfg, &count);

	if (!cfg->multihost)
		return;
	if (cfg->local_host < 0) {
		printf("  hosts: every host's nodes run here (vfab up --host ID brings up one "
		       "host's share)\n");
		return;
	}
	printf("  host %s of %u: uplink %s on %s (in the fabric: " VFAB_UPLINK_NETDEV ")\n",
	       cfg->hosts[cfg->local_host].id, cfg->nhosts,
	       cfg->hosts[cfg->local_host].uplink_addrs[0].text,
	       cfg->hosts[cfg->local_host].uplink_netdev);
	for (uint32_t h = 0; h < cfg->nhosts; h++) {
		const struct vfab_cfg_addr *via = &cfg->hosts[h].uplink_addrs[0];
		uint32_t nodes = 0;

		if ((int32_t)h == cfg->local_host)
			continue;
		for (uint32_t i = 0; i < count; i++)
			nodes += all[i].machine == h + 1;
		printf("  host %-10s %u node(s), via %.*s:", cfg->hosts[h].id, nodes,
		       (int)strcspn(via->text, "/"), via->text);
		for (uint32_t r = 0; r < cfg->nroutes; r++)
			if (cfg->routes[r].host == h && cfg->routes[r].leaf < 0)
				printf(" %s", cfg->routes[r].dst.text);
		printf("\n");
	}
	for (uint32_t k = 0; k < cfg->nleaves; k++)
		if (cfg->leaves[k].vni)
			printf("  %s spans hosts: VXLAN %u over the uplink (" VFAB_VXLAN_NETDEV
			       " on its bridge), its gateway on every host\n",
			       cfg->leaves[k].name, cfg->leaves[k].vni, k);
}

static void print_summary(const struct vfab_cli *cli, const struct vfab_config *cfg,
			  const struct up_opts *o, const struct vfab_gpu_plan *gpus,
			  const struct vfab_region *r, pid_t vfabd, long long ms)
{
	const char *fopt = strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? " --fabric " : "";
	const char *fname = strcmp(cli->fabric, VFAB_DEFAULT_FABRIC) ? cli->fabric : "";

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
			int gid = vfab_port_ipv4_v2_gid(&hca->ports[0], n->index);

			if (gid >= 0)
				printf(" %s (%s, RoCE v2 IPv4 GID %d)", hca->name,
				       hca->ports[0].netdev, gid);
			else
				printf(" %s (%s)", hca->name, hca->ports[0].netdev);
		}
		printf("\n");
	}
	print_hosts(cfg);
	vfab_up_gpus_print(stdout, cfg, gpus);
	for (unsigned i = 0; i < o->nlibdirs; i++)
		printf("  libdir %s (in every node's ld.so.cache)\n", o->libdirs[i]);
	printf("  launchers: %s/" VFAB_HOSTFILE ", %s/" VFAB_HOSTS_LIST "; vfab%s%s run -- CMD\n",
	       cli->rundir, cli->rundir, fopt, fname);
	if (o->ssh)
		printf("  sshd in every node; vfab%s%s ssh %s, or inside a node: ssh %s\n", fopt,
		       fname, r->nnodes ? r->nodes[r->nnodes - 1].id : "node1",
		       r->nnodes ? r->nodes[r->nnodes - 1].id : "node1");
	if (vfab_fabric_owner_uid() >= 0)
		print_rootless(cli, r->nnodes ? r->nodes[0].id : "", o->ssh);
	printf("next: vfab%s%s exec %s -- ibv_devinfo\n", fopt, fname,
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

/*
 * topo is up's own topology (vfab_topology_private from cfg): the region
 * vfabd makes is writable by every local user as soon as it exists, so the
 * sandboxes are built from names and indices nobody else can change.
 */
static int bring_up(const struct vfab_cli *cli, const struct vfab_config *cfg, const char *path,
		    const struct up_opts *o, const struct vfab_gpu_plan *gpus, pid_t *vfabd,
		    const struct vfab_region *topo, char *err, size_t errlen)
{
	struct vfab_layout parts;
	struct vfab_sandbox sb;
	char rpath[256];
	int ret;

	ret = vfab_layout_find(cli->exedir, &parts);
	if (ret)
		return snprintf(err, errlen, "find vfab's daemon and libraries from %.3000s",
				cli->exedir),
		       ret;
	ret = make_rundir(cli);
	if (ret)
		return snprintf(err, errlen, "create %s", cli->rundir), ret;
	ret = write_config_copy(cli, path);
	if (ret)
		return snprintf(err, errlen, "copy the config to %s", cli->rundir), ret;
	/* Later readers of the copy (vfabd, the CLI) select the same host from it. */
	if (o->host && (vfab_run_host_path(rpath, sizeof(rpath), cli->rundir) ||
			vfab_write_filef(rpath, "%s\n", o->host)))
		return snprintf(err, errlen, "record the host in %s", cli->rundir), -EIO;
	/* vfabd reads the run dir's copy: the fabric never depends on the original. */
	if (vfab_run_config_path(rpath, sizeof(rpath), cli->rundir))
		return snprintf(err, errlen, "run dir path too long"), -ENAMETOOLONG;
	ret = vfab_vfabd_start(cli, parts.vfabd, rpath, vfabd);
	if (ret)
		return snprintf(err, errlen, "start %.3000s", parts.vfabd), ret;
	ret = vfab_vfabd_wait_ready(cli, *vfabd, VFABD_READY_TIMEOUT_MS, err, errlen);
	if (ret)
		return ret;
	if (interrupted())
		return snprintf(err, errlen, "interrupted"), -EINTR;
	warn_private_libdir(parts.provider_dir);
	sb = (struct vfab_sandbox){.fabric = cli->fabric,
				   .rundir = cli->rundir,
				   .cfg = cfg,
				   .topo = topo,
				   .libdir = parts.provider_dir,
				   .preload_lib = parts.preload,
				   .libdirs = o->libdirs,
				   .nlibdirs = o->nlibdirs,
				   .ssh = o->ssh,
				   .gpus = gpus,
				   .note = print_note};
	ret = vfab_sandbox_prepare(&sb, err, errlen);
	for (uint32_t i = 0; ret == 0 && i < topo->nnodes; i++) {
		pid_t holder;

		if (interrupted())
			return snprintf(err, errlen, "interrupted"), -EINTR;
		ret = vfab_sandbox_node_up(&sb, i, &holder, err, errlen);
	}
	return ret;
}

/*
 * After a failed up: what `vfab doctor` finds missing on this host, so that
 * the message names the cause (no namespaces, a read-only /proc/sys, ...)
 * rather than leaving the user with an errno.
 */
static void explain_failure(void)
{
	struct vfab_probe_result p[VFAB_HOST_PROBES];
	size_t n = vfab_host_probe_run(p);
	int shown = 0;

	for (size_t i = 0; i < n; i++) {
		if (p[i].verdict != VFAB_PROBE_FAIL)
			continue;
		fprintf(stderr, "vfab up: vfab doctor finds: %s: %s -- needed by %s\n", p[i].name,
			p[i].detail, p[i].needed_by);
		shown++;
	}
	if (!shown)
		fprintf(stderr, "vfab up: vfab doctor finds nothing missing on this host\n");
}

int vfab_cmd_up(struct vfab_cli *cli, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},	      {"fabric", required_argument, NULL, 'f'},
	    {"libdir", required_argument, NULL, 'L'}, {"ssh", no_argument, NULL, 's'},
	    {"host", required_argument, NULL, 'H'},   {NULL, 0, NULL, 0}};
	static struct up_opts o;
	static struct vfab_gpu_plan gpus; /* ~20 KiB */
	char err[4096] = "", cfgpath[PATH_MAX];
	const char *path = NULL;
	struct vfab_region *topo = NULL;
	struct vfab_config cfg;
	long long t0 = vfab_now_ms();
	sigset_t block, old;
	pid_t vfabd = 0;
	int ch, ret;

	/* 0: glibc starts over, so options may also follow CONFIG (no '+' here). */
	optind = 0;
	memset(&o, 0, sizeof(o));
	while ((ch = getopt_long(argc, argv, "hf:L:s", opts, NULL)) != -1) {
		switch (ch) {
		case 'H':
			o.host = optarg;
			break;
		case 'L':
			if (add_libdir(&o, optarg))
				return VFAB_EXIT_USAGE;
			break;
		case 's':
			o.ssh = 1;
			break;
		default:
			ret = vfab_cli_common_opt(cli, ch, usage);
			if (ret != VFAB_CLI_GO_ON)
				return ret;
		}
	}
	/* At most one operand: CONFIG. */
	ret = vfab_cli_no_more_operands("up", argc, argv, optind + 1, usage);
	if (ret)
		return ret;
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
	if (check_config(&cfg, path ? argv[optind] : "default") ||
	    (o.host && vfab_config_select_host(&cfg, o.host, err, sizeof(err)))) {
		if (err[0])
			fprintf(stderr, "vfab up: %s\n", err);
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

	ret = vfab_up_gpus_plan(&cfg, &gpus);
	if (ret) {
		snprintf(err, sizeof(err), "plan the nodes' GPUs (nodes[].gpus)");
	} else {
		ret = vfab_topology_private(cli->fabric, cli->rundir, &cfg, &topo);
		if (ret)
			snprintf(err, sizeof(err), "the config does not fit a region");
	}
	if (ret == 0)
		ret = bring_up(cli, &cfg, path, &o, &gpus, &vfabd, topo, err, sizeof(err));
	if (ret == 0)
		print_summary(cli, &cfg, &o, &gpus, topo, vfabd, vfab_now_ms() - t0);
	vfab_topology_private_free(topo);
	if (ret) {
		fprintf(stderr, "vfab up: failed (%s): %s\n", strerror(-ret), err);
		fprintf(stderr, "vfab up: rolling back fabric %s\n", cli->fabric);
		vfab_fabric_down(cli, vfabd, 0);
		explain_failure();
	}
	vfab_config_free(&cfg);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret ? VFAB_EXIT_FAIL : VFAB_EXIT_OK;
}
