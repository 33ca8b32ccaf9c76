/* SPDX-License-Identifier: MIT */
#include "base/paths.h"

#include <errno.h>
#include <string.h>

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

int vfab_run_dir(char *buf, size_t len, const char *fabric)
{
	return vfab_pathf(buf, len, VFAB_RUN_ROOT "/%s", fabric);
}

int vfab_netns_path(char *buf, size_t len, const char *fabric, const char *suffix)
{
	return vfab_pathf(buf, len, VFAB_NETNS_DIR "/vfab-%s-%s", fabric, suffix);
}

int vfab_run_config_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/config.yaml", rundir);
}

int vfab_ctl_sock_path(char *buf, size_t len, const char *rundir)
{
	return vfab_pathf(buf, len, "%s/" VFAB_CTL_SOCK, rundir);
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
