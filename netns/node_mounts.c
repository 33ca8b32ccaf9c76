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
#include "netns/node_bin.h"
#include "netns/node_identity.h"

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

/* mountinfo escapes blanks and backslashes as \ooo. */
static void unescape_mountinfo(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '7' && r[2] && r[3]) {
			*w++ = (char)(((r[1] - '0') << 6) | ((r[2] - '0') << 3) | (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/*
 * The mounts sitting directly on the host's /sys (cgroup, bpf, debugfs ...):
 * the fresh sysfs would hide them, and programs in the node (NCCL, torch read
 * cgroup limits) expect them where they were.
 */
static int sys_submounts(char (*out)[256], int max)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096];
	int sys_id = -1, n = 0;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		int id, parent;
		char mp[1024];

		if (sscanf(line, "%d %d %*s %*s %1023s", &id, &parent, mp) != 3)
			continue;
		unescape_mountinfo(mp);
		if (strcmp(mp, "/sys") == 0)
			sys_id = id; /* the last one listed is the visible one */
	}
	rewind(f);
	while (sys_id >= 0 && fgets(line, sizeof(line), f) && n < max) {
		int id, parent;
		char mp[1024];

		if (sscanf(line, "%d %d %*s %*s %1023s", &id, &parent, mp) != 3)
			continue;
		unescape_mountinfo(mp);
		if (parent != sys_id || strncmp(mp, "/sys/", 5) != 0 ||
		    strncmp(mp, "/sys/class", 10) == 0 || strlen(mp) >= 256)
			continue;
		strcpy(out[n++], mp);
	}
	fclose(f);
	return n;
}

static int is_view_class(const char *name)
{
	return strcmp(name, "infiniband") == 0 || strcmp(name, "infiniband_verbs") == 0 ||
	       strcmp(name, "infiniband_mad") == 0;
}

/*
 * Build the node's /sys/class on a tmpfs at `cls`: every class of the node's
 * fresh sysfs at `sys` bound as is, the InfiniBand classes from the views.
 */
static int build_class_dir(const char *nd, const char *sys, const char *cls, char *err,
			   size_t errlen)
{
	char src[4096], dst[4096];
	struct dirent *de;
	DIR *d;
	int ret = 0;

	if (mount("tmpfs", cls, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=64k"))
		return vfab_fail(err, errlen, -errno, "tmpfs on %s", cls);
	if (vfab_pathf(src, sizeof(src), "%s/class", sys))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "path %s/class", sys);
	d = opendir(src);
	if (!d)
		return vfab_fail(err, errlen, -errno, "open %s", src);
	while ((de = readdir(d)) && ret == 0) {
		if (de->d_name[0] == '.' || is_view_class(de->d_name))
			continue;
		if (vfab_pathf(src, sizeof(src), "%s/class/%s", sys, de->d_name) ||
		    vfab_pathf(dst, sizeof(dst), "%s/%s", cls, de->d_name))
			ret = vfab_fail(err, errlen, -ENAMETOOLONG, "path of class %s", de->d_name);
		else if (mkdir(dst, 0755))
			ret = vfab_fail(err, errlen, -errno, "mkdir %s", dst);
		else if (mount(src, dst, NULL, MS_BIND, NULL))
			ret = vfab_fail(err, errlen, -errno, "bind %s", src);
	}
	closedir(d);
	for (int i = 0; ret == 0 && i < 3; i++) {
		static const char *const views[] = {"infiniband", "infiniband_verbs",
						    "infiniband_mad"};

		if (vfab_pathf(src, sizeof(src), "%s/class/%s", nd, views[i]) ||
		    vfab_pathf(dst, sizeof(dst), "%s/%s", cls, views[i]))
			return vfab_fail(err, errlen, -ENAMETOOLONG, "path of view %s", views[i]);
		if (mkdir(dst, 0755))
			return vfab_fail(err, errlen, -errno, "mkdir %s", dst);
		ret = bind_ro(src, dst);
		if (ret)
			return vfab_fail(err, errlen, ret, "bind view %s", src);
	}
	if (ret)
		return ret;
	/* Like the real /sys/class: nobody creates entries in it. */
	if (mount(NULL, cls, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=64k"))
		return vfab_fail(err, errlen, -errno, "remount %s read-only", cls);
	return 0;
}

static int mount_node_sysfs(const char *nd, char *err, size_t errlen)
{
	char sys[4096], cls[4096], dst[4096];
	char subs[MAX_SYS_SUBMOUNTS][256];
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
	nsubs = sys_submounts(subs, MAX_SYS_SUBMOUNTS);
	if (nsubs < 0)
		return vfab_fail(err, errlen, nsubs, "read /proc/self/mountinfo");
	for (int i = 0; i < nsubs; i++) {
		if (vfab_pathf(dst, sizeof(dst), "%s%s", sys, subs[i] + 4))
			continue;
		/* Only where the fresh sysfs has the directory (same kernel: it has). */
		if (stat(dst, &st) || !S_ISDIR(st.st_mode))
			continue;
		if (mount(subs[i], dst, NULL, MS_BIND | MS_REC, NULL))
			return vfab_fail(err, errlen, -errno, "bind %s", subs[i]);
	}
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
	if (mount(src, "/dev/infiniband", NULL, MS_BIND, NULL))
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
	ret = mount_node_sysfs(nd, err, errlen);
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
