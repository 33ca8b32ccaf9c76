/* SPDX-License-Identifier: MIT */
#include "netns/node_cpus.h"

#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fsutil.h"
#include "base/paths.h"

#define CGROUP_ROOT "/sys/fs/cgroup"
#define CGROUP_V1_CPUSET CGROUP_ROOT "/cpuset"
#define CGROUP_RMDIR_TRIES 100
#define CGROUP_RMDIR_WAIT_MS 20

enum cg_kind { CG_NONE, CG_V1, CG_V2 };

static int file_exists(const char *path)
{
	return access(path, F_OK) == 0;
}

/*
 * The cgroup v2 subtree delegated to this user (systemd's user@<uid>.service
 * with Delegate=): the highest directory above this process's cgroup that
 * the user owns, when the cpuset controller reaches it. -ENOENT otherwise.
 */
static int delegated_v2(char *top, size_t len)
{
	char line[4096], path[4096], ctl[256] = "";
	size_t root_len = strlen(CGROUP_ROOT);
	FILE *f = fopen("/proc/self/cgroup", "re");
	struct stat st;
	int found = 0;

	if (!f)
		return -ENOENT;
	while (!found && fgets(line, sizeof(line), f))
		found = strncmp(line, "0::/", 4) == 0;
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	if (!found || vfab_pathf(path, sizeof(path), CGROUP_ROOT "%s", line + 3))
		return -ENOENT;
	found = 0;
	/* Inside the fabric's user namespace the user's files show as root's: euid either way. */
	while (strlen(path) > root_len && stat(path, &st) == 0 && st.st_uid == geteuid()) {
		if (vfab_pathf(top, len, "%s", path))
			return -ENOENT;
		found = 1;
		*strrchr(path, '/') = '\0';
	}
	if (!found || vfab_pathf(path, sizeof(path), "%s/cgroup.controllers", top) ||
	    vfab_read_file(path, ctl, sizeof(ctl)) <= 0 || !strstr(ctl, "cpuset"))
		return -ENOENT;
	return 0;
}

/*
 * The hierarchy that has the cpuset controller, and its top directory. A
 * fabric without root never uses root's (its names are root's fabrics'): its
 * user's delegated v2 subtree where there is one, else none (CPU affinity).
 */
static enum cg_kind cg_find(const char **top)
{
	static char delegated[4096];
	char ctl[256] = "";

	if (vfab_fabric_owner_uid() >= 0) {
		if (delegated_v2(delegated, sizeof(delegated)))
			return CG_NONE;
		*top = delegated;
		return CG_V2;
	}

	if (file_exists(CGROUP_V1_CPUSET "/cpuset.cpus")) {
		*top = CGROUP_V1_CPUSET;
		return CG_V1;
	}
	if (vfab_read_file(CGROUP_ROOT "/cgroup.controllers", ctl, sizeof(ctl)) > 0 &&
	    strstr(ctl, "cpuset")) {
		*top = CGROUP_ROOT;
		return CG_V2;
	}
	return CG_NONE;
}

static int cg_write(const char *dir, const char *file, const char *value)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/%s", dir, file))
		return -ENAMETOOLONG;
	return vfab_write_filef(path, "%s\n", value);
}

static int cg_mkdir(const char *dir)
{
	return mkdir(dir, 0755) && errno != EEXIST ? -errno : 0;
}

/*
 * v1: a cpuset accepts tasks only once its cpus and mems are set, and a child
 * only takes CPUs its parent has: the fabric's cgroup gets the whole host's.
 * v2: the controller must be enabled in each parent's subtree_control.
 */
static int cg_make(enum cg_kind kind, const char *top, const char *fabric, const char *node,
		   const char *list)
{
	char fab[4096], dir[4096], mems[256] = "", all[4096] = "", path[4096];
	int ret;

	if (vfab_cgroup_dir(fab, sizeof(fab), top, fabric, NULL) ||
	    vfab_cgroup_dir(dir, sizeof(dir), top, fabric, node))
		return -ENAMETOOLONG;
	if (kind == CG_V2) {
		ret = cg_write(top, "cgroup.subtree_control", "+cpuset");
		if (ret == 0)
			ret = cg_mkdir(fab);
		if (ret == 0)
			ret = cg_write(fab, "cgroup.subtree_control", "+cpuset");
		if (ret == 0)
			ret = cg_mkdir(dir);
		return ret ? ret : cg_write(dir, "cpuset.cpus", list);
	}
	if (vfab_pathf(path, sizeof(path), "%s/cpuset.mems", top) ||
	    vfab_read_file(path, mems, sizeof(mems)) < 0 ||
	    vfab_pathf(path, sizeof(path), "%s/cpuset.cpus", top) ||
	    vfab_read_file(path, all, sizeof(all)) < 0)
		return -EIO;
	mems[strcspn(mems, "\n")] = '\0';
	all[strcspn(all, "\n")] = '\0';
	ret = cg_mkdir(fab);
	if (ret == 0)
		ret = cg_write(fab, "cpuset.cpus", all);
	if (ret == 0)
		ret = cg_write(fab, "cpuset.mems", mems);
	if (ret == 0)
		ret = cg_mkdir(dir);
	if (ret == 0)
		ret = cg_write(dir, "cpuset.cpus", list);
	return ret ? ret : cg_write(dir, "cpuset.mems", mems);
}

static int cg_attach(const char *dir, pid_t pid)
{
	char num[32];

	snprintf(num, sizeof(num), "%d", (int)pid);
	return cg_write(dir, "cgroup.procs", num);
}

static int set_affinity(pid_t pid, const struct vfab_cpus *cpus)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	for (unsigned cpu = 0; cpu < CPU_SETSIZE && cpu < VFAB_CPUS_MAX; cpu++)
		if (vfab_cpus_has(cpus, cpu))
			CPU_SET(cpu, &set);
	return sched_setaffinity(pid, sizeof(set), &set) ? -errno : 0;
}

static int node_file(char *buf, size_t len, const char *rundir, const char *node, const char *name)
{
	return vfab_pathf(buf, len, "%s/nodes/%s/%s", rundir, node, name);
}

/* Reads one line of a node dir file; -ENOENT when it is not there. */
static int read_node_file(const char *rundir, const char *node, const char *name, char *buf,
			  size_t len)
{
	char path[4096];
	ssize_t n;

	if (node_file(path, sizeof(path), rundir, node, name))
		return -ENAMETOOLONG;
	n = vfab_read_file(path, buf, len);
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

int vfab_node_cpus_setup(const char *fabric, const char *rundir, const char *node,
			 const struct vfab_cpus *cpus, pid_t pid, char *err, size_t errlen)
{
	struct vfab_cpus host;
	char list[4096], path[4096], have[4096], dir[4096];
	const char *top;
	enum cg_kind kind;
	int ret;

	ret = vfab_cpus_of_self(&host);
	if (ret)
		return vfab_fail(err, errlen, ret, "read this process's CPUs");
	if (vfab_cpus_format_list(cpus, list, sizeof(list)) || !vfab_cpus_count(cpus))
		return vfab_fail(err, errlen, -EINVAL, "node %s: no CPUs", node);
	if (!vfab_cpus_subset(cpus, &host)) {
		vfab_cpus_format_list(&host, have, sizeof(have));
		return vfab_fail(err, errlen, -EINVAL,
				 "node %s: cpus %s are not all available here (this host: %s)",
				 node, list, have);
	}
	if (node_file(path, sizeof(path), rundir, node, VFAB_NODE_CPUS_FILE))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_write_filef(path, "%s\n", list);
	if (ret)
		return vfab_fail(err, errlen, ret, "write %s", path);
	kind = cg_find(&top);
	if (kind != CG_NONE && vfab_cgroup_dir(dir, sizeof(dir), top, fabric, node) == 0 &&
	    cg_make(kind, top, fabric, node, list) == 0 && cg_attach(dir, pid) == 0 &&
	    node_file(path, sizeof(path), rundir, node, VFAB_NODE_CGROUP_FILE) == 0)
		vfab_write_filef(path, "%s\n", dir);
	/* The cgroup sets the affinity too; without one this is all there is. */
	ret = set_affinity(pid, cpus);
	return ret ? vfab_fail(err, errlen, ret, "set the CPUs of node %s", node) : 0;
}

int vfab_node_cpus_join(const char *rundir, const char *node)
{
	struct vfab_cpus cpus;
	char list[4096], dir[4096];
	int ret;

	ret = read_node_file(rundir, node, VFAB_NODE_CPUS_FILE, list, sizeof(list));
	if (ret == -ENOENT)
		return 0; /* a fabric brought up without CPU sets */
	if (ret == 0)
		ret = vfab_cpus_parse(list, &cpus);
	if (ret)
		return ret;
	ret = read_node_file(rundir, node, VFAB_NODE_CGROUP_FILE, dir, sizeof(dir));
	if (ret == 0)
		ret = cg_attach(dir, getpid());
	if (ret && ret != -ENOENT)
		return ret;
	return set_affinity(0, &cpus);
}

/*
 * rmdir of a cgroup fails with EBUSY while a task in it is still exiting
 * (the node's processes were killed just before): try again for a while.
 */
static int rmdir_cgroup(const char *dir)
{
	for (int i = 0; i < CGROUP_RMDIR_TRIES; i++) {
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		vfab_sleep_ms(CGROUP_RMDIR_WAIT_MS);
	}
	return -EBUSY;
}

int vfab_node_cpus_remove(const char *fabric)
{
	char fab[4096], dir[4096];
	const char *top;
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (cg_find(&top) == CG_NONE)
		return 0;
	if (vfab_cgroup_dir(fab, sizeof(fab), top, fabric, NULL))
		return -ENAMETOOLONG;
	d = opendir(fab);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		int rc;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    vfab_pathf(dir, sizeof(dir), "%s/%s", fab, de->d_name))
			continue;
		rc = rmdir_cgroup(dir);
		if (rc && ret == 0)
			ret = rc; /* the first failure; the other nodes still go */
	}
	closedir(d);
	return ret ? ret : rmdir_cgroup(fab);
}
