/* SPDX-License-Identifier: MIT */
/* Programs on every node's PATH (see node_bin.h). */
#include "netns/node_bin.h"

#include <errno.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>

#include "base/fsutil.h"

int vfab_node_bin_write(const char *rundir)
{
	char dir[4096], path[4096];
	int ret;

	if (vfab_pathf(dir, sizeof(dir), "%s/" VFAB_NODE_BIN_DIR, rundir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0755);
	for (size_t i = 0; !ret && vfab_node_bin_files[i].name; i++) {
		const struct vfab_node_bin_file *f = &vfab_node_bin_files[i];

		if (vfab_pathf(path, sizeof(path), "%s/%s", dir, f->name))
			return -ENAMETOOLONG;
		ret = vfab_write_file(path, f->text, strlen(f->text), 0755);
		/* The umask must not take the x bits: the nodes run it as it is. */
		if (!ret && chmod(path, 0755))
			ret = -errno;
	}
	return ret;
}

int vfab_node_bin_node_dirs(const char *node_dir)
{
	char path[4096];
	int ret;

	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_NODE_BIN_UPPER, node_dir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(path, 0755);
	if (ret)
		return ret;
	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_NODE_BIN_WORK, node_dir))
		return -ENAMETOOLONG;
	return vfab_mkdir_p(path, 0755);
}

int vfab_node_bin_mount(const char *rundir, const char *node_dir, char *err, size_t errlen)
{
	char opts[8192];
	struct stat st;

	if (stat(VFAB_NODE_BIN_MOUNT, &st) || !S_ISDIR(st.st_mode))
		return 0;
	/* Ours first: a host program of the same name is hidden in the node. */
	if (vfab_pathf(opts, sizeof(opts),
		       "lowerdir=%s/" VFAB_NODE_BIN_DIR ":" VFAB_NODE_BIN_MOUNT
		       ",upperdir=%s/" VFAB_NODE_BIN_UPPER ",workdir=%s/" VFAB_NODE_BIN_WORK,
		       rundir, node_dir, node_dir))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	if (mount("overlay", VFAB_NODE_BIN_MOUNT, "overlay", 0, opts))
		return vfab_fail(err, errlen, -errno, "overlay on " VFAB_NODE_BIN_MOUNT " (%s)",
				 opts);
	return 0;
}
