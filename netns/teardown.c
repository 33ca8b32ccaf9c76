/* SPDX-License-Identifier: MIT */
#include "netns/sandbox.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "netns/ctrfs_view.h"
#include "netns/fabric_net.h"
#include "netns/holder.h"
#include "netns/host_dirs.h"
#include "netns/node_cpus.h"
#include "netns/node_procs.h"
#include "netns/node_sshd.h"

#define MAX_NODES (VFAB_MAX_NODES + 8)
#define TERM_GRACE_MS 500
#define KILL_WAIT_MS 3000

struct node_set {
	int n;
	char ids[MAX_NODES][VFAB_NAME_MAX];
	pid_t holders[MAX_NODES];
	struct vfab_ns_set ns;
};

static void note(char *err, size_t errlen, int *first, int ret, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* Keep the first failure; carry on with the rest of the teardown. */
static void note(char *err, size_t errlen, int *first, int ret, const char *fmt, ...)
{
	va_list ap;

	if (ret == 0 || *first)
		return;
	*first = ret;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

/*
 * The nodes are the run dir's nodes/<id> entries (created before anything
 * else of a node); their network namespaces come from the published files
 * and, for a node whose publication never happened, from its holder.
 */
static void collect_nodes(const char *fabric, const char *rundir, struct node_set *s)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	memset(s, 0, sizeof(*s));
	if (vfab_pathf(path, sizeof(path), "%s/nodes", rundir))
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)) && s->n < MAX_NODES) {
		pid_t pid = 0;

		if (de->d_name[0] == '.' || strlen(de->d_name) >= VFAB_NAME_MAX)
			continue;
		snprintf(s->ids[s->n], VFAB_NAME_MAX, "%s", de->d_name);
		if (vfab_holder_pid_path(path, sizeof(path), rundir, de->d_name) == 0 &&
		    vfab_read_pid_file(path, &pid) == 0 && vfab_holder_is_alive(pid))
			s->holders[s->n] = pid;
		vfab_ns_set_add_node(&s->ns, fabric, de->d_name, s->holders[s->n]);
		s->n++;
	}
	closedir(d);
}

struct signal_arg {
	int sig;
	int count;
};

static int signal_one(pid_t pid, void *arg)
{
	struct signal_arg *a = arg;

	if (vfab_pid_alive(pid) && kill(pid, a->sig) == 0)
		a->count++;
	return 0;
}

/* Signal every live process of the nodes; returns how many got it. */
static int signal_node_processes(const struct node_set *s, int sig)
{
	struct signal_arg a = {sig, 0};
	int count;

	vfab_ns_set_each_pid(&s->ns, signal_one, &a);
	count = a.count;
	for (int i = 0; i < s->n; i++)
		if (s->holders[i] > 0 && vfab_holder_is_alive(s->holders[i]) &&
		    kill(s->holders[i], sig) == 0)
			count++;
	return count;
}

/* SIGTERM, a grace period, then SIGKILL until nothing is left (or we give up). */
static int kill_node_processes(const struct node_set *s)
{
	long long deadline;

	if (s->ns.n == 0 && s->n == 0)
		return 0;
	if (signal_node_processes(s, SIGTERM) == 0)
		return 0;
	deadline = vfab_now_ms() + TERM_GRACE_MS;
	do {
		vfab_sleep_ms(5);
		/* Signal 0 just counts the survivors (and children forked meanwhile). */
		if (signal_node_processes(s, 0) == 0)
			return 0;
	} while (vfab_now_ms() < deadline);
	deadline = vfab_now_ms() + KILL_WAIT_MS;
	do {
		if (signal_node_processes(s, SIGKILL) == 0)
			return 0;
		vfab_sleep_ms(5);
	} while (vfab_now_ms() < deadline);
	return -EBUSY;
}

/* The tmpfs holding the node views (vfab_sandbox_prepare); gone with it. */
static int unmount_views(const char *rundir)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/nodes", rundir))
		return -ENAMETOOLONG;
	if (umount2(path, MNT_DETACH) && errno != EINVAL && errno != ENOENT)
		return -errno;
	return 0;
}

int vfab_sandbox_exists(const char *fabric, const char *rundir)
{
	char path[4096];

	if (access(rundir, F_OK) == 0)
		return 1;
	if (vfab_region_path(fabric, path, sizeof(path)) >= 0 && access(path, F_OK) == 0)
		return 1;
	return vfab_netns_path(path, sizeof(path), fabric, VFAB_FABRIC_NS_SUFFIX) == 0 &&
	       access(path, F_OK) == 0;
}

int vfab_sandbox_teardown(const char *fabric, const char *rundir, char *err, size_t errlen)
{
	struct node_set *s = malloc(sizeof(*s));
	char path[4096];
	int first = 0, ret;

	if (!s)
		return -ENOMEM;
	collect_nodes(fabric, rundir, s);
	ret = kill_node_processes(s);
	note(err, errlen, &first, ret, "some processes in the nodes did not die");
	ret = vfab_node_cpus_remove(fabric);
	note(err, errlen, &first, ret, "remove the cpuset cgroups of %s", fabric);
	for (int i = 0; i < s->n; i++) {
		ret = vfab_net_unbind_ns(fabric, s->ids[i]);
		note(err, errlen, &first, ret, "remove the namespace file of node %s", s->ids[i]);
	}
	/* The last reference to the fabric namespace: bridges, router, veths go with it. */
	ret = vfab_net_unbind_ns(fabric, VFAB_FABRIC_NS_SUFFIX);
	note(err, errlen, &first, ret, "remove the fabric namespace file");
	ret = vfab_region_unlink(fabric);
	note(err, errlen, &first, ret == -ENOENT ? 0 : ret, "unlink the region of %s", fabric);
	/* vfabd's counters file system, also a killed vfabd's (its readers get ENOTCONN). */
	ret = vfab_ctrfs_unmount(rundir);
	note(err, errlen, &first, ret, "unmount the counters under %s", rundir);
	ret = unmount_views(rundir);
	note(err, errlen, &first, ret, "unmount the views under %s", rundir);
	ret = vfab_host_dir_release(rundir, VFAB_HOST_DEVIB, VFAB_DEVIB_MARKER, 1);
	note(err, errlen, &first, ret, "remove " VFAB_HOST_DEVIB);
	/* The nodes' sshds, if any, died with the other node processes above. */
	ret = vfab_host_dir_release(rundir, VFAB_RUN_SSHD, VFAB_RUN_SSHD_MARKER, 0);
	note(err, errlen, &first, ret, "remove " VFAB_RUN_SSHD);
	ret = vfab_rm_rf(rundir);
	note(err, errlen, &first, ret, "remove %s", rundir);
	/* Only when no other fabric lives there (a rootless one: netns/userns.h). */
	if (vfab_run_root(path, sizeof(path)) == 0)
		rmdir(path);
	free(s);
	return first;
}
