/* SPDX-License-Identifier: MIT */
/* The nodes' and the host's side of vfabd's counters file system (ctrfs_view.h). */
#include "netns/ctrfs_view.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "base/fsutil.h"
#include "base/paths.h"

#define FUSE_MAGIC 0x65735546 /* linux/magic.h FUSE_SUPER_MAGIC */

static const char *const subdirs[] = {"counters", "hw_counters"};

/* Read-only like the view it covers; reads stay the file system's own. */
static int bind_ro(const char *src, const char *dst)
{
	if (mount(src, dst, NULL, MS_BIND, NULL))
		return -errno;
	if (mount(NULL, dst, NULL,
		  MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	return 0;
}

static bool is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Both directories of one port, where the view has the port. */
static int bind_port(const char *fs, const char *cls, const char *hca, const char *port, char *err,
		     size_t errlen)
{
	char src[4096], dst[4096];
	int ret;

	for (size_t i = 0; i < sizeof(subdirs) / sizeof(subdirs[0]); i++) {
		if (vfab_pathf(src, sizeof(src), "%s/%s/%s/%s", fs, hca, port, subdirs[i]) ||
		    vfab_pathf(dst, sizeof(dst), "%s/infiniband/%s/ports/%s/%s", cls, hca, port,
			       subdirs[i]))
			return vfab_fail(err, errlen, -ENAMETOOLONG, "path of %s port %s", hca,
					 port);
		if (!is_dir(dst) || !is_dir(src))
			continue;
		ret = bind_ro(src, dst);
		if (ret)
			return vfab_fail(err, errlen, ret, "bind %s on %s", src, dst);
	}
	return 0;
}

int vfab_ctrfs_bind_node(const char *rundir, const char *node, const char *cls, char *err,
			 size_t errlen)
{
	char top[4096], fs[4096], hcadir[4096];
	struct dirent *de, *pe;
	struct statfs sf;
	DIR *d, *pd;
	int ret = 0;

	if (vfab_counters_fs_dir(top, sizeof(top), rundir) ||
	    vfab_pathf(fs, sizeof(fs), "%s/%s", top, node))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "counters path too long");
	/* Only vfabd's file system: a plain directory there is no counter source. */
	if (statfs(top, &sf) || sf.f_type != FUSE_MAGIC)
		return 0;
	/* Names from vfabd's topology (its file system), never from the region. */
	d = opendir(fs);
	if (!d)
		return errno == ENOENT ? 0 : vfab_fail(err, errlen, -errno, "open %s", fs);
	while (ret == 0 && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (vfab_pathf(hcadir, sizeof(hcadir), "%s/%s", fs, de->d_name)) {
			ret = vfab_fail(err, errlen, -ENAMETOOLONG, "path of %s", de->d_name);
			break;
		}
		pd = opendir(hcadir);
		if (!pd) {
			ret = vfab_fail(err, errlen, -errno, "open %s", hcadir);
			break;
		}
		while (ret == 0 && (pe = readdir(pd)))
			if (pe->d_name[0] != '.')
				ret = bind_port(fs, cls, de->d_name, pe->d_name, err, errlen);
		closedir(pd);
	}
	closedir(d);
	return ret;
}

int vfab_ctrfs_unmount(const char *rundir)
{
	char path[4096];

	if (vfab_counters_fs_dir(path, sizeof(path), rundir))
		return -ENAMETOOLONG;
	/* MNT_DETACH: a dead connection's mount cannot be unmounted otherwise, if busy. */
	if (umount2(path, MNT_DETACH) && errno != EINVAL && errno != ENOENT)
		return -errno;
	return 0;
}

int vfab_ctrfs_mounted(const char *rundir)
{
	char path[4096], line[8192];
	FILE *f;
	int found = 0;

	if (vfab_counters_fs_dir(path, sizeof(path), rundir))
		return -ENAMETOOLONG;
	f = fopen("/proc/self/mountinfo", "re");
	if (!f)
		return -errno;
	/* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [TAGS] - FSTYPE SOURCE SUPEROPTS" */
	while (!found && fgets(line, sizeof(line), f)) {
		char mp[4096], *dash = strstr(line, " - ");
		char fstype[64];

		if (!dash || sscanf(line, "%*s %*s %*s %*s %4095s", mp) != 1 ||
		    sscanf(dash + 3, "%63s", fstype) != 1)
			continue;
		found = strcmp(mp, path) == 0 && strncmp(fstype, "fuse", 4) == 0;
	}
	fclose(f);
	return found;
}
