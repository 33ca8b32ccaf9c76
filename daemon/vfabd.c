/* SPDX-License-Identifier: MIT */
/*
 * vfabd: creates a fabric's shared region from a config, serves the control
 * socket, reaps the objects of processes that died, applies runtime control
 * (link state, shaping, faults), keeps the nodes' sysfs counters live,
 * follows address changes in the nodes into the GID tables, keeps the
 * links' counters of the last 15 minutes and answers REPORT and HISTORY.
 * Runs in the foreground; `vfab up` starts it with setsid and stderr to
 * vfabd.log.
 *
 * Exit codes: 0 clean shutdown, 1 runtime failure, 2 usage or config error.
 */
#include "base/fsutil.h"
#include "base/paths.h"
#include "config/config.h"
#include "fabric/ctl.h"
#include "fabric/topology.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_addrwatch.h"
#include "vfabd_counters.h"
#include "vfabd_countersfs.h"
#include "vfabd_faultlog.h"
#include "vfabd_faults.h"
#include "vfabd_history.h"
#include "vfabd_log.h"
#include "vfabd_server.h"
#include "vfabd_wire.h"

#define RUNDIR_MAX 200 /* leaves room for "/vfabd.sock" in a sockaddr_un path */

struct opts {
	const char *fabric;
	const char *config;
	bool counters_tick; /* --counters tick */
	char rundir[RUNDIR_MAX + 1];
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: vfabd [--fabric NAME] [--config FILE] [--rundir DIR] [--counters fs|tick]\n"
		"  --fabric NAME  fabric name (default vfab): region /dev/shm/vfab-NAME\n"
		"  --config FILE  fabric YAML (default: the built-in 2-node fabric)\n"
		"  --rundir DIR   run directory (default /run/vfab/NAME)\n"
		"  --counters fs|tick  the nodes' port counters: a FUSE file system at\n"
		"                 DIR/counters computing each value when read (fs, the\n"
		"                 default; tick where FUSE cannot mount), or the view's\n"
		"                 files rewritten every %d ms (tick)\n"
		"Runs in the foreground until SIGTERM or a SHUTDOWN request on\n"
		"DIR/vfabd.sock. Exit: 0 ok, 1 runtime failure, 2 usage/config error.\n",
		VFABD_TICK_MS);
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option lo[] = {
	    {"fabric", required_argument, NULL, 'f'}, {"config", required_argument, NULL, 'c'},
	    {"rundir", required_argument, NULL, 'r'}, {"counters", required_argument, NULL, 'C'},
	    {"help", no_argument, NULL, 'h'},	      {NULL, 0, NULL, 0}};
	const char *rundir = NULL;
	int ch;

	o->fabric = VFAB_DEFAULT_FABRIC;
	while ((ch = getopt_long(argc, argv, "f:c:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'f':
			o->fabric = optarg;
			break;
		case 'c':
			o->config = optarg;
			break;
		case 'r':
			rundir = optarg;
			break;
		case 'C':
			if (strcmp(optarg, "fs") && strcmp(optarg, "tick")) {
				fprintf(stderr, "vfabd: --counters: fs or tick, not '%s'\n",
					optarg);
				return -EINVAL;
			}
			o->counters_tick = !strcmp(optarg, "tick");
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -EINVAL;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "vfabd: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return -EINVAL;
	}
	if (vfab_fabric_name_check(o->fabric)) {
		fprintf(stderr, "vfabd: fabric name '%s': use 1..%d letters, digits, '_' or '-'\n",
			o->fabric, VFAB_FABRIC_NAME_MAX);
		return -EINVAL;
	}
	if (rundir && (!*rundir || strlen(rundir) > RUNDIR_MAX)) {
		fprintf(stderr, "vfabd: --rundir: use a path of 1..%d characters\n", RUNDIR_MAX);
		return -EINVAL;
	}
	if (rundir)
		snprintf(o->rundir, sizeof(o->rundir), "%s", rundir);
	else
		vfab_run_dir(o->rundir, sizeof(o->rundir), o->fabric); /* fits: name <= 32 */
	return 0;
}

static int write_pid_file(const char *rundir)
{
	char path[PATH_MAX];
	int rc = vfab_vfabd_pid_path(path, sizeof(path), rundir);

	return rc ? rc : vfab_write_pid_file(path, getpid());
}

static int listen_socket(const char *rundir)
{
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int rc = vfab_ctl_sock_path(path, sizeof(path), rundir);

	return rc ? rc : vfab_unix_listen(path, SOCK_STREAM);
}

static int signal_fd(void)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	if (sigprocmask(SIG_BLOCK, &set, NULL) < 0)
		return -errno;
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

static void remove_run_files(const char *rundir)
{
	char path[PATH_MAX];

	if (vfab_ctl_sock_path(path, sizeof(path), rundir) == 0)
		unlink(path);
	if (vfab_vfabd_pid_path(path, sizeof(path), rundir) == 0)
		unlink(path);
}

static int load_config(const struct opts *o, struct vfab_config *cfg)
{
	char err[512], host[RUNDIR_MAX + 16];
	int rc = o->config ? vfab_config_load_file(o->config, cfg, err, sizeof(err))
			   : vfab_config_load_default(cfg, err, sizeof(err));

	if (rc) {
		fprintf(stderr, "vfabd: %s\n", err);
		return rc;
	}
	/* A multi-host fabric: this machine's share, as `vfab up --host` recorded. */
	rc = vfab_run_host_path(host, sizeof(host), o->rundir)
		 ? -ENAMETOOLONG
		 : vfab_config_apply_host_file(cfg, host, err, sizeof(err));
	if (rc) {
		fprintf(stderr, "vfabd: %s\n", rc == -ENAMETOOLONG ? "run dir path too long" : err);
		vfab_config_free(cfg);
	}
	return rc;
}

/*
 * Region and topology; on failure nothing is left behind. The topology is
 * filled into vfabd's private copy *t first and copied into the region from
 * there: vfabd never reads back a name or index another user may have
 * written meanwhile (fabric/topology.h).
 */
static int create_region(struct opts *o, const struct vfab_config *cfg, struct vfab_region **r,
			 struct vfab_region **t)
{
	char path[256], abs[PATH_MAX];
	uint32_t nhcas = 0;
	int rc;

	vfab_region_path(o->fabric, path, sizeof(path));
	if (access(path, F_OK) == 0) {
		fprintf(stderr,
			"vfabd: fabric '%s' already exists (%s); stop it with "
			"'vfab --fabric %s down' first\n",
			o->fabric, path, o->fabric);
		return -EEXIST;
	}
	rc = vfab_mkdir_p(o->rundir, 0755);
	if (rc) {
		fprintf(stderr, "vfabd: cannot create %s: %s\n", o->rundir, strerror(-rc));
		return rc;
	}
	/* The region records the run dir for the provider: make it absolute. */
	if (realpath(o->rundir, abs) && strlen(abs) <= RUNDIR_MAX)
		snprintf(o->rundir, sizeof(o->rundir), "%s", abs);
	rc = vfab_topology_private(o->fabric, o->rundir, cfg, t);
	if (rc) {
		fprintf(stderr, "vfabd: the config does not fit the region: %s\n", strerror(-rc));
		return rc;
	}
	for (uint32_t i = 0; i < cfg->nnodes; i++)
		nhcas += cfg->nodes[i].nhcas;
	rc = vfab_region_create_pool(o->fabric, o->rundir,
				     vfab_pool_bytes(nhcas, cfg->ring_pool_mib), r);
	if (rc) {
		fprintf(stderr, "vfabd: cannot create %s: %s\n", path, strerror(-rc));
		vfab_topology_private_free(*t);
		return rc;
	}
	rc = vfab_topology_publish(*r, *t);
	if (rc) {
		fprintf(stderr, "vfabd: cannot fill %s: %s\n", path, strerror(-rc));
		vfab_region_close(*r);
		vfab_region_unlink(o->fabric);
		vfab_topology_private_free(*t);
	}
	return rc;
}

/* Pid file, socket, signals, timer. On failure nothing of it is left. */
static int setup(const struct opts *o, struct vfabd *d)
{
	int rc;

	d->srv.listen_fd = d->srv.signal_fd = d->srv.timer_fd = -1;
	d->countersfs.fd = -1;
	/*
	 * Every file vfabd touches below the run dir is opened from this
	 * descriptor without following links (base/beneath.h).
	 */
	d->rundir_fd = open(o->rundir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	rc = d->rundir_fd < 0 ? -errno : 0;
	if (rc >= 0)
		rc = vfab_ktab_create(d->rundir_fd, &d->k);
	if (rc >= 0)
		rc = vfabd_counters_init(d);
	if (rc >= 0)
		rc = vfabd_history_init(d); /* the ring, for d->t's links, once */
	if (rc >= 0)
		rc = d->srv.signal_fd = signal_fd();
	if (rc >= 0) {
		d->srv.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
		rc = d->srv.timer_fd < 0 ? -errno : 0;
	}
	if (rc >= 0)
		rc = write_pid_file(o->rundir);
	/* Before the socket: `vfab up` builds the nodes, which bind it, once vfabd answers. */
	if (rc >= 0) {
		int fs = o->counters_tick ? -ENOTSUP : vfabd_countersfs_init(d);

		if (fs)
			vfabd_log("counters: refreshed every %d ms (no FUSE file system: %s)",
				  VFABD_TICK_MS,
				  o->counters_tick ? "--counters tick" : strerror(-fs));
		else
			vfabd_log("counters: computed at every read (FUSE file system)");
	}
	if (rc >= 0)
		rc = d->srv.listen_fd = listen_socket(o->rundir);
	if (rc >= 0) {
		int aw = vfabd_addrwatch_init(d);

		if (aw)
			vfabd_log("address changes in the nodes will not reach the GID tables: %s",
				  strerror(-aw));
		aw = vfabd_ipwire_init(d);
		if (aw)
			vfabd_log("the IP side of the wires will not follow the links: %s",
				  strerror(-aw));
		/*
		 * The RoCE wire, for a fabric with other machines to reach: on
		 * one host every GID is in the region, and a QP to an unknown
		 * one keeps the in-host path's answer (none).
		 */
		aw = d->nremote ? vfabd_wire_init(d) : 0;
		if (aw)
			vfabd_log("no RoCE wire to other machines (%s): %s", VFAB_WIRE_SOCK,
				  strerror(-aw));
		return 0;
	}
	fprintf(stderr, "vfabd: cannot set up %s: %s\n", o->rundir, strerror(-rc));
	if (d->srv.signal_fd >= 0)
		close(d->srv.signal_fd);
	if (d->srv.timer_fd >= 0)
		close(d->srv.timer_fd);
	if (d->rundir_fd >= 0)
		close(d->rundir_fd);
	vfabd_countersfs_free(d);
	vfabd_counters_free(d);
	vfabd_history_free(d);
	remove_run_files(o->rundir);
	return rc;
}

static int serve(const struct opts *o, struct vfabd *d)
{
	int rc;

	vfabd_log("fabric %s ready: %u node(s), %u HCA(s), %u link(s); socket %s/%s", o->fabric,
		  d->t->nnodes, d->t->nhcas, d->t->nlinks, o->rundir, VFAB_CTL_SOCK);
	rc = vfabd_serve(d);
	if (rc)
		vfabd_log("event loop failed: %s", strerror(-rc));
	close(d->srv.listen_fd);
	/* No paused node or latency spike outlives the daemon that made it. */
	vfabd_faults_release(d);
	vfabd_faultlog_free(&d->log);
	vfabd_close_all(d);
	vfabd_countersfs_free(d);
	vfabd_counters_free(d);
	vfabd_history_free(d);
	vfabd_addrwatch_free(d);
	vfabd_ipwire_free(d);
	vfabd_wire_free(d);
	remove_run_files(o->rundir);
	close(d->srv.signal_fd);
	close(d->srv.timer_fd);
	close(d->rundir_fd);
	vfabd_log("stopped (the region stays until 'vfab down')");
	return rc;
}

/*
 * Multi-host: the other machines' leaves and spanning-leaf nodes
 * (cfg->routes) as the delay line's remote senders, with the latencies their
 * links start with.
 */
static int remote_senders(const struct vfab_config *cfg, struct vfabd *d)
{
	struct vfab_class_lat lat;

	if (!cfg->nroutes)
		return 0;
	d->remote = calloc(cfg->nroutes, sizeof(*d->remote));
	if (!d->remote)
		return -ENOMEM;
	for (uint32_t i = 0; i < cfg->nroutes; i++) {
		const struct vfab_cfg_addr *dst = &cfg->routes[i].dst;

		d->remote[i].family = dst->family;
		memcpy(d->remote[i].a, dst->addr, sizeof(d->remote[i].a));
		d->remote[i].len = dst->prefix;
		d->remote[i].leaf =
		    cfg->routes[i].leaf < 0 ? UINT32_MAX : (uint32_t)cfg->routes[i].leaf;
	}
	d->nremote = cfg->nroutes;
	vfab_topology_class_lat(cfg, &lat);
	d->remote_lat = (struct vfabd_delay_lat){.up_ns = lat.port_up_ns,
						 .down_ns = lat.port_down_ns,
						 .leaf_up_ns = lat.leaf_up_ns,
						 .leaf_down_ns = lat.leaf_down_ns};
	return 0;
}

int main(int argc, char **argv)
{
	struct vfab_config cfg;
	struct vfab_region *r, *t;
	struct opts o = {0};
	struct vfabd d = {0};
	int rc;

	if (parse_args(argc, argv, &o))
		return 2;
	if (load_config(&o, &cfg))
		return 2;
	rc = create_region(&o, &cfg, &r, &t);
	if (!rc && remote_senders(&cfg, &d)) {
		vfab_region_close(r);
		vfab_region_unlink(o.fabric);
		vfab_topology_private_free(t);
		rc = -ENOMEM;
	}
	vfab_config_free(&cfg);
	if (rc)
		return 1;
	d.r = r;
	d.t = t;
	d.fabric = o.fabric;
	d.rundir = o.rundir;
	if (setup(&o, &d)) {
		/* Nobody was told about this fabric yet: leave nothing behind. */
		vfab_region_close(r);
		vfab_region_unlink(o.fabric);
		vfab_topology_private_free(t);
		free(d.remote);
		return 1;
	}
	rc = serve(&o, &d);
	vfab_region_close(r);
	vfab_topology_private_free(t);
	free(d.remote);
	return rc ? 1 : 0;
}
