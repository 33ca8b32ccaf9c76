/* SPDX-License-Identifier: MIT */
#include "netns/node_mounts.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/ctrfs_view.h"
#include "netns/node_bin.h"
#include "netns/mountinfo.h"
#include "netns/node_gpus.h"
#include "netns/node_identity.h"
#include "netns/pci_view.h"

#define MAX_SYS_SUBMOUNTS 64
#define LDCONFIG_AUX_DIR "/var/cache/ldconfig"

static int bind_ro(const char *src, const char *dst)
{
	if (mount(src, dst, NULL, MS_BIND, NULL))
		return -errno;
	if (mount(NULL, dst, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

/*
 * A tmpfs at `dir` holding, for each entry of `live`, a directory bound from
 * it (so it stays the kernel's, live), except the names `view` has, which are
 * bound read-only from there. `view` may be missing. Left writable: the
 * caller remounts it read-only once done.
 */
static int build_bind_dir(const char *live, const char *view, const char *dir, const char *opts,
			  char *err, size_t errlen)
{
	char src[4096], dst[4096], vsrc[4096];
	struct dirent *de;
	struct stat st;
	DIR *d;
	int ret = 0;

	if (mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts))
		return vfab_fail(err, errlen, -errno, "tmpfs on %s", dir);
	d = opendir(live);
	if (!d)
		return vfab_fail(err, errlen, -errno, "open %s", live);
	while ((de = readdir(d)) && ret == 0) {
		if (de->d_name[0] == '.')
			continue;
		if (vfab_pathf(src, sizeof(src), "%s/%s", live, de->d_name) ||
		    vfab_pathf(dst, sizeof(dst), "%s/%s", dir, de->d_name) ||
		    (view && vfab_pathf(vsrc, sizeof(vsrc), "%s/%s", view, de->d_name)))
			ret = vfab_fail(err, errlen, -ENAMETOOLONG, "path of %s", de->d_name);
		else if (view && stat(vsrc, &st) == 0)
			continue; /* the view's, below */
		else if (lstat(src, &st) || !S_ISDIR(st.st_mode))
			continue; /* sysfs top levels hold directories only */
		else if (mkdir(dst, 0755))
			ret = vfab_fail(err, errlen, -errno, "mkdir %s", dst);
		else if (mount(src, dst, NULL, MS_BIND, NULL))
			ret = vfab_fail(err, errlen, -errno, "bind %s", src);
	}
	closedir(d);
	d = view && ret == 0 ? opendir(view) : NULL;
	while (d && (de = readdir(d)) && ret == 0) {
		if (de->d_name[0] == '.')
			continue;
		if (vfab_pathf(src, sizeof(src), "%s/%s", view, de->d_name) ||
		    vfab_pathf(dst, sizeof(dst), "%s/%s", dir, de->d_name))
			ret = vfab_fail(err, errlen, -ENAMETOOLONG, "path of view %s", de->d_name);
		else if (mkdir(dst, 0755))
			ret = vfab_fail(err, errlen, -errno, "mkdir %s", dst);
		else if ((ret = bind_ro(src, dst)))
			ret = vfab_fail(err, errlen, ret, "bind view %s", src);
	}
	if (d)
		closedir(d);
	if (ret)
		return ret;
	/* Like the real directory: nobody creates entries in it. */
	if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, opts))
		return vfab_fail(err, errlen, -errno, "remount %s read-only", dir);
	return 0;
}

/*
 * Build the node's /sys/class on a tmpfs at `cls`: every class of the node's
 * fresh sysfs at `sys` bound as is, the view's classes (InfiniBand, and
 * pci_bus with the synthetic buses) from the run dir.
 */
static int build_class_dir(const char *nd, const char *sys, const char *cls, char *err,
			   size_t errlen)
{
	char live[4096], view[4096];

	if (vfab_pathf(live, sizeof(live), "%s/class", sys) ||
	    vfab_pathf(view, sizeof(view), "%s/class", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "path %s/class", sys);
	return build_bind_dir(live, view, cls, "mode=0755,size=256k", err, errlen);
}

/*
 * The synthetic PCI roots (pci_view.h) must be in the node's /sys/devices,
 * where NCCL and hwloc walk from a function up to its root: /sys/devices
 * becomes a tmpfs of the fresh sysfs's entries (live: system, virtual/net of
 * the node, the real pci roots) plus the view's pci<DDDD>:00. The node's
 * /sys/bus/pci/devices is the view's listing (the host's links plus the
 * synthetic functions). A node without HCAs has no PCI view and keeps both.
 */
static int mount_pci_view(const char *nd, const char *sys, char *err, size_t errlen)
{
	char live[4096], view[4096], dir[4096];
	struct stat st;
	int ret;

	if (vfab_pathf(view, sizeof(view), "%s/" VFAB_PCI_VIEW_DEVICES, nd) ||
	    vfab_pathf(live, sizeof(live), "%s/devices", sys) ||
	    vfab_pathf(dir, sizeof(dir), "%s/mnt/devices", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	if (stat(view, &st) || !S_ISDIR(st.st_mode))
		return 0;
	ret = vfab_mkdir_p(dir, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", dir);
	ret = build_bind_dir(live, view, dir, "mode=0755,size=64k", err, errlen);
	if (ret)
		return ret;
	if (mount(dir, live, NULL, MS_MOVE, NULL))
		return vfab_fail(err, errlen, -errno, "move %s to %s", dir, live);
	if (vfab_pathf(view, sizeof(view), "%s/" VFAB_PCI_VIEW_BUS_DEVICES, nd) ||
	    vfab_pathf(live, sizeof(live), "%s/" VFAB_PCI_VIEW_BUS_DEVICES, sys))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	if (stat(view, &st) || stat(live, &st))
		return 0;
	ret = bind_ro(view, live);
	return ret ? vfab_fail(err, errlen, ret, "bind %s on %s", view, live) : 0;
}

int vfab_node_hide_peer_memory(const char *sys)
{
	static const char *const dirs[] = {"module/nvidia_peermem", "kernel/mm/memory_peers"};
	char path[4096];
	struct stat st;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (vfab_pathf(path, sizeof(path), "%s/%s", sys, dirs[i]))
			return -ENAMETOOLONG;
		if (stat(path, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
			  "size=4k,mode=0555"))
			return -errno;
	}
	return 0;
}

static int mount_node_sysfs(const char *nd, char *err, size_t errlen)
{
	char sys[4096], cls[4096], dst[4096];
	char subs[MAX_SYS_SUBMOUNTS][VFAB_MOUNTPOINT_MAX];
	struct stat st;
	int nsubs, ret;

	if (vfab_pathf(sys, sizeof(sys), "%s/mnt/sys", nd) ||
	    vfab_pathf(cls, sizeof(cls), "%s/mnt/class", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	ret = vfab_mkdir_p(sys, 0755);
	if (ret == 0)
		ret = vfab_mkdir_p(cls, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", sys);
	/* Mounted by this process, the sysfs shows the node's network namespace. */
	if (mount("sysfs", sys, "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return vfab_fail(err, errlen, -errno, "sysfs on %s", sys);
	/*
	 * The mounts sitting directly on the host's /sys (cgroup, bpf, debugfs
	 * ...): the fresh sysfs would hide them, and programs in the node (NCCL,
	 * torch read cgroup limits) expect them where they were.
	 */
	nsubs = vfab_mount_children("/sys", subs, MAX_SYS_SUBMOUNTS);
	if (nsubs < 0)
		return vfab_fail(err, errlen, nsubs, "read /proc/self/mountinfo");
	for (int i = 0; i < nsubs; i++) {
		if (strncmp(subs[i], "/sys/class", 10) == 0 ||
		    vfab_pathf(dst, sizeof(dst), "%s%s", sys, subs[i] + 4))
			continue;
		/* Only where the fresh sysfs has the directory (same kernel: it has). */
		if (stat(dst, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (mount(subs[i], dst, NULL, MS_BIND | MS_REC, NULL))
			return vfab_fail(err, errlen, -errno, "bind %s", subs[i]);
	}
	ret = vfab_node_hide_peer_memory(sys);
	if (ret)
		return vfab_fail(err, errlen, ret, "hide the host's peer memory module in %s", sys);
	ret = mount_pci_view(nd, sys, err, errlen);
	if (ret == 0)
		ret = build_class_dir(nd, sys, cls, err, errlen);
	if (ret)
		return ret;
	if (vfab_pathf(dst, sizeof(dst), "%s/class", sys))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "path %s/class", sys);
	if (mount(cls, dst, NULL, MS_MOVE, NULL))
		return vfab_fail(err, errlen, -errno, "move %s to %s", cls, dst);
	if (mount(sys, "/sys", NULL, MS_MOVE, NULL))
		return vfab_fail(err, errlen, -errno, "move %s to /sys", sys);
	return 0;
}

static int mount_dev_view(const char *nd, char *err, size_t errlen)
{
	char src[4096];

	if (vfab_pathf(src, sizeof(src), "%s/dev", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	/* Recursive: a rootless fabric's device nodes are mounts (sysfs_view.c). */
	if (mount(src, "/dev/infiniband", NULL, MS_BIND | MS_REC, NULL))
		return vfab_fail(err, errlen, -errno, "bind %s on /dev/infiniband", src);
	/*
	 * The run dir may live on a nodev file system (/run usually is); the
	 * uverbs nodes must open, so this mount explicitly allows devices.
	 */
	if (mount(NULL, "/dev/infiniband", NULL, MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NOEXEC,
		  NULL))
		return vfab_fail(err, errlen, -errno,
				 "remount /dev/infiniband with devices allowed");
	return 0;
}

static int mount_etc_overlay(const char *nd, char *err, size_t errlen)
{
	char opts[8192];

	if (vfab_pathf(opts, sizeof(opts),
		       "lowerdir=/etc,upperdir=%s/etc-upper,workdir=%s/etc-work", nd, nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	if (mount("overlay", "/etc", "overlay", 0, opts))
		return vfab_fail(err, errlen, -errno, "overlay on /etc (%s)", opts);
	return 0;
}

/*
 * ldconfig in a node writes the node's own /etc/ld.so.cache (overlay) but
 * also its auxiliary cache under /var: that one stays in the node too.
 */
static int mount_ldconfig_cache(char *err, size_t errlen)
{
	struct stat st;

	if (stat(LDCONFIG_AUX_DIR, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (mount("vfab-ldconfig", LDCONFIG_AUX_DIR, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0700,size=16m"))
		return vfab_fail(err, errlen, -errno, "tmpfs on " LDCONFIG_AUX_DIR);
	return 0;
}

/*
 * The host's /proc once more at vfab_host_proc_dir: a process of the node
 * that enters a PID namespace of its own with a /proc of that namespace
 * (unshare --pid --mount-proc) keeps this one, and through it the pids,
 * start times and memory of its peers (the provider's pid view).
 */
static int mount_host_proc(const char *rundir, char *err, size_t errlen)
{
	char dir[4096];
	int ret;

	if (vfab_host_proc_dir(dir, sizeof(dir), rundir))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "run dir path too long");
	ret = vfab_mkdir_p(dir, 0555);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", dir);
	if (mount("/proc", dir, NULL, MS_BIND, NULL))
		return vfab_fail(err, errlen, -errno, "bind /proc on %s", dir);
	return 0;
}

int vfab_node_mounts_setup(const char *rundir, const char *node, const char *region_path, char *err,
			   size_t errlen)
{
	char nd[4096];
	int ret;

	if (vfab_node_dir(nd, sizeof(nd), rundir, node))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	/* Nothing mounted here may reach the host; host changes still arrive. */
	if (mount(NULL, "/", NULL, MS_REC | MS_SLAVE, NULL))
		return vfab_fail(err, errlen, -errno, "make / rslave");
	/* First: what later mounts on /dev (infiniband, shm) must sit on the overlay. */
	ret = vfab_node_gpus_mount(rundir, node, err, errlen);
	if (ret == 0)
		ret = mount_node_sysfs(nd, err, errlen);
	/* Counters read at every read, where vfabd serves them (ctrfs_view.h). */
	if (ret == 0)
		ret = vfab_ctrfs_bind_node(rundir, node, "/sys/class", err, errlen);
	if (ret == 0)
		ret = mount_dev_view(nd, err, errlen);
	if (ret == 0)
		ret = mount_etc_overlay(nd, err, errlen);
	if (ret == 0)
		ret = vfab_node_bin_mount(rundir, nd, err, errlen);
	if (ret == 0)
		ret = mount_ldconfig_cache(err, errlen);
	if (ret == 0)
		ret = vfab_node_identity_mount(nd, region_path, err, errlen);
	if (ret == 0)
		ret = mount_host_proc(rundir, err, errlen);
	return ret;
}
