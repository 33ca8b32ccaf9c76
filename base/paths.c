/* SPDX-License-Identifier: MIT */
#include "base/paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"

int vfab_fabric_name_check(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > VFAB_FABRIC_NAME_MAX)
		return -EINVAL;
	for (const char *p = name; *p; p++)
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '_' && *p != '-')
			return -EINVAL;
	return 0;
}

int vfab_region_path(const char *fabric, char *buf, size_t len)
{
	return vfab_pathf(buf, len, "/dev/shm/vfab-%s", fabric);
}

int vfab_shard_dir(const char *region_path, char *buf, size_t len)
{
	return vfab_pathf(buf, len, "%s.users", region_path);
}

int vfab_shard_path(const char *region_path, unsigned uid, char *buf, size_t len)
{
	return vfab_pathf(buf, len, "%s.users/u%u", region_path, uid);
}

/*
 * The host id behind this process's effective uid or gid: /proc/self/uid_map
 * (gid_map) maps it ("inside outside count" lines); the host's own namespace
 * maps 0 to 0 over the whole range. -1 in the host's namespace.
 */
static long outer_id(const char *map, unsigned long id)
{
	unsigned long in, out, count;
	long found = -1;
	FILE *f = fopen(map, "re");

	if (!f)
		return -1;
	while (fscanf(f, "%lu %lu %lu", &in, &out, &count) == 3) {
		if (in == 0 && out == 0 && count == 4294967295ul) {
			found = -1;
			break;
		}
		if (id >= in && id - in < count)
			found = (long)(out + (id - in));
	}
	fclose(f);
	return found;
}

long vfab_fabric_owner_uid(void)
{
	uid_t euid = geteuid();
	long outer = outer_id("/proc/self/uid_map", euid);

	if (outer >= 0)
		return outer;
	return euid == 0 ? -1 : (long)euid;
}

long vfab_fabric_owner_gid(void)
{
	long outer = outer_id("/proc/self/gid_map", getegid());

	if (vfab_fabric_owner_uid() < 0)
		return -1;
	return outer >= 0 ? outer : (long)getegid();
}

int vfab_run_root(char *buf, size_t len)
{
	long uid = vfab_fabric_owner_uid();
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char session[64];
	struct stat st;

	if (uid < 0)
		return vfab_pathf(buf, len, VFAB_RUN_ROOT);
	/* Inside the user namespace the user's files are root's: the same test holds there. */
	if (xdg && xdg[0] == '/' && lstat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
	    st.st_uid == geteuid())
		return vfab_pathf(buf, len, "%s/vfab", xdg);
	snprintf(session, sizeof(session), "/run/user/%ld", uid);
	if (lstat(session, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid())
		return vfab_pathf(buf, len, VFAB_USER_RUN_ROOT, (unsigned)uid);
	return vfab_pathf(buf, len, VFAB_TMP_RUN_ROOT, (unsigned)uid);
}

int vfab_netns_dir(char *buf, size_t len)
{
	char root[4096];
	int ret;

	if (vfab_fabric_owner_uid() < 0)
		return vfab_pathf(buf, len, VFAB_NETNS_DIR);
	ret = vfab_run_root(root, sizeof(root));
	return ret ? ret : vfab_pathf(buf, len, "%s/netns", root);
}

int vfab_run_dir(char *buf, size_t len, const char *fabric)
{
	char root[4096];
	int ret = vfab_run_root(root, sizeof(root));

	return ret ? ret : vfab_pathf(buf, len, "%s/%s", root, fabric);
}

int vfab_userns_anchor_path(char *buf, size_t len, const char *fabric)
{
	char root[4096];
	int ret = vfab_run_root(root, sizeof(root));

	return ret ? ret : vfab_pathf(buf, len, "%s/%s.userns", root, fabric);
}

int vfab_netns_path(char *buf, size_t len, const char *fabric, const char *suffix)
{
	char dir[4096];
	int ret = vfab_netns_dir(dir, sizeof(dir));

	return ret ? ret : vfab_pathf(buf, len, "%s/vfab-%s-%s", dir, fabric, suffix);
}

int vfab_run_config_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/config.yaml", rundir);
}

int vfab_run_host_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/host", rundir);
}

int vfab_ctl_sock_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/" VFAB_CTL_SOCK, rundir);
}

int vfab_wire_sock_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/" VFAB_WIRE_SOCK, rundir);
}

int vfab_vfabd_pid_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/" VFAB_VFABD_PID_FILE, rundir);
}

int vfab_node_rel_dir(char *buf, size_t len, const char *node)
{
	return vfab_pathf(buf, len, "nodes/%s", node);
}

int vfab_node_dir(char *buf, size_t len, const char *rundir, const char *node)
{
	char rel[VFAB_PATH_REL_MAX];
	int rc = vfab_node_rel_dir(rel, sizeof(rel), node);

	return rc ? rc : vfab_pathf(buf, len, "%s/%s", rundir, rel);
}

int vfab_netdev_speed_rel(char *buf, size_t len, const char *node, const char *netdev)
{
	return vfab_pathf(buf, len, "nodes/%s/net-speed/%s", node, netdev);
}

int vfab_netdev_speed_path(char *buf, size_t len, const char *rundir, const char *node,
			   const char *netdev)
{
	char rel[VFAB_PATH_REL_MAX];
	int rc = vfab_netdev_speed_rel(rel, sizeof(rel), node, netdev);

	return rc ? rc : vfab_pathf(buf, len, "%s/%s", rundir, rel);
}

int vfab_holder_pid_rel(char *buf, size_t len, const char *node)
{
	return vfab_pathf(buf, len, "nodes/%s/" VFAB_HOLDER_PID_FILE, node);
}

int vfab_holder_pid_path(char *buf, size_t len, const char *rundir, const char *node)
{
	char rel[VFAB_PATH_REL_MAX];
	int rc = vfab_holder_pid_rel(rel, sizeof(rel), node);

	return rc ? rc : vfab_pathf(buf, len, "%s/%s", rundir, rel);
}

int vfab_node_gpus_path(char *buf, size_t len, const char *rundir, const char *node)
{
	return vfab_pathf(buf, len, "%s/nodes/%s/gpus", rundir, node);
}

int vfab_fifo_dir(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/fifo", rundir);
}

int vfab_capture_dir(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/capture", rundir);
}

int vfab_capture_sock(char *buf, size_t len, const char *rundir, unsigned int slot)
{
	return vfab_pathf(buf, len, "%s/capture/%u.sock", rundir, slot);
}

int vfab_cgroup_dir(char *buf, size_t len, const char *top, const char *fabric, const char *node)
{
	if (node)
		return vfab_pathf(buf, len, "%s/vfab-%s/%s", top, fabric, node);
	return vfab_pathf(buf, len, "%s/vfab-%s", top, fabric);
}

int vfab_cm_dir(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/cm", rundir);
}

int vfab_host_proc_dir(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/proc", rundir);
}

int vfab_counters_fs_dir(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/counters", rundir);
}
