/* SPDX-License-Identifier: MIT */
#include "netns/node_gpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/mountinfo.h"

/* The host's /dev submounts; a fabric without root binds every entry of its /dev (userns.c). */
#define MAX_DEV_SUBMOUNTS 4096

int vfab_node_gpus_write(const char *rundir, const char *node, const struct vfab_gpu_plan *p,
			 uint32_t cfg_node)
{
	const struct vfab_gpu_node *g;
	char path[4096], buf[4096];
	size_t used;

	if (cfg_node >= p->nnodes)
		return -EINVAL;
	g = &p->node[cfg_node];
	if (g->all)
		return 0;
	if (vfab_node_gpus_path(path, sizeof(path), rundir, node))
		return -ENAMETOOLONG;
	used = (size_t)snprintf(buf, sizeof(buf),
				"# vfab up: this node's host GPUs (keep) and the others (hide):"
				" MINOR BUS-ID\n");
	for (uint32_t h = 0; h < p->host.n && used < sizeof(buf); h++) {
		const struct vfab_host_gpu *hg = &p->host.gpu[h];
		bool keep = false;

		for (uint32_t k = 0; k < g->n; k++)
			keep |= g->host[k] == h;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s %u %s\n",
					 keep ? "keep" : "hide", hg->minor,
					 hg->busid[0] ? hg->busid : "-");
	}
	if (used >= sizeof(buf))
		return -E2BIG;
	return vfab_write_file(path, buf, used, 0644);
}

int vfab_node_gpus_load(const char *rundir, const char *node, struct vfab_node_gpus *g)
{
	char path[4096], line[128];
	FILE *f;
	int ret = 0;

	memset(g, 0, sizeof(*g));
	if (vfab_node_gpus_path(path, sizeof(path), rundir, node))
		return -ENAMETOOLONG;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret == 0 && fgets(line, sizeof(line), f)) {
		char kind[8];
		unsigned minor;

		if (line[0] == '#' || line[0] == '\n')
			continue;
		if (sscanf(line, "%7s %u", kind, &minor) != 2 || minor > VFAB_GPU_MAX_MINOR)
			ret = -EINVAL;
		else if (strcmp(kind, "keep") == 0 && g->nkeep < VFAB_GPU_MAX)
			g->keep[g->nkeep++] = minor;
		else if (strcmp(kind, "hide") == 0 && g->nhide < VFAB_GPU_MAX)
			g->hide[g->nhide++] = minor;
		else
			ret = -EINVAL;
	}
	fclose(f);
	return ret;
}

static bool kept(const struct vfab_node_gpus *g, uint32_t minor)
{
	for (uint32_t i = 0; i < g->nkeep; i++)
		if (g->keep[i] == minor)
			return true;
	return false;
}

/* An overlay whiteout: a character device 0:0 in the upper layer. */
static int whiteout(const char *upper, uint32_t minor)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_NVIDIA_DEV_PREFIX "%u", upper, minor))
		return -ENAMETOOLONG;
	if (mknod(path, S_IFCHR, makedev(0, 0)) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The other GPUs: those the file names (their nodes may not exist yet: the
 * driver leaves making them to user space, and one made on the host later
 * must not appear here) and any nvidia<N> of the host's /dev it does not.
 */
static int whiteouts(const struct vfab_node_gpus *g, const char *upper)
{
	struct vfab_host_gpus present;
	int ret = vfab_dev_gpus_scan(VFAB_HOST_DEV, &present);

	for (uint32_t i = 0; ret == 0 && i < g->nhide; i++)
		ret = whiteout(upper, g->hide[i]);
	for (uint32_t i = 0; ret == 0 && i < present.n; i++)
		if (!kept(g, present.gpu[i].minor))
			ret = whiteout(upper, present.gpu[i].minor);
	return ret;
}

/* The overlay at stage, with the host's /dev submounts bound back where the overlay shows them. */
static int overlay_dev(const char *layer, const char *stage, const char *opts, char *err,
		       size_t errlen)
{
	char(*subs)[VFAB_MOUNTPOINT_MAX] = malloc(MAX_DEV_SUBMOUNTS * sizeof(*subs));
	char dst[4096];
	int nsubs, ret = 0;

	if (!subs)
		return vfab_fail(err, errlen, -ENOMEM, "room for the /dev submounts");
	nsubs = vfab_mount_children(VFAB_HOST_DEV, subs, MAX_DEV_SUBMOUNTS);
	if (nsubs < 0)
		ret = vfab_fail(err, errlen, nsubs, "read /proc/self/mountinfo");
	else if (mount("overlay", stage, "overlay", MS_NOSUID, opts))
		ret = vfab_fail(err, errlen, -errno, "overlay on %s (%s)", stage, opts);
	/* The overlay keeps its layers; nobody in the node edits them behind its back. */
	if (!ret)
		umount2(layer, MNT_DETACH);
	for (int i = 0; !ret && i < nsubs; i++) {
		struct stat st;

		if (vfab_pathf(dst, sizeof(dst), "%s%s", stage, subs[i] + strlen(VFAB_HOST_DEV)) ||
		    lstat(dst, &st))
			continue; /* its mount point is not in the lower layer (or hidden) */
		if (mount(subs[i], dst, NULL, MS_BIND | MS_REC, NULL))
			ret = vfab_fail(err, errlen, -errno, "bind %s again", subs[i]);
	}
	free(subs);
	return ret;
}

/*
 * The node's /dev: overlay(upper = whiteouts on a private tmpfs, lower = the
 * host's /dev), built at <nd>/mnt/dev with the host's /dev submounts bound
 * back, then moved onto /dev. Not nodev: the device nodes must open.
 */
static int mount_dev(const char *nd, const struct vfab_node_gpus *g, char *err, size_t errlen)
{
	char layer[4096], upper[4096], work[4096], stage[4096], opts[12800];
	int ret;

	if (vfab_pathf(layer, sizeof(layer), "%s/mnt/dev-layer", nd) ||
	    vfab_pathf(upper, sizeof(upper), "%s/upper", layer) ||
	    vfab_pathf(work, sizeof(work), "%s/work", layer) ||
	    vfab_pathf(stage, sizeof(stage), "%s/mnt/dev", nd) ||
	    vfab_pathf(opts, sizeof(opts), "lowerdir=" VFAB_HOST_DEV ",upperdir=%s,workdir=%s",
		       upper, work))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	ret = vfab_mkdir_p(layer, 0755);
	if (ret == 0)
		ret = vfab_mkdir_p(stage, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", layer);
	/* Private to the node (its mount namespace): gone with it, nothing for `down`. */
	if (mount("vfab-dev", layer, "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=4m"))
		return vfab_fail(err, errlen, -errno, "tmpfs on %s", layer);
	ret = vfab_mkdir_p(upper, 0755);
	if (ret == 0)
		ret = vfab_mkdir_p(work, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", upper);
	ret = whiteouts(g, upper);
	if (ret)
		return vfab_fail(err, errlen, ret, "whiteouts in %s", upper);
	ret = overlay_dev(layer, stage, opts, err, errlen);
	if (ret)
		return ret;
	if (mount(stage, VFAB_HOST_DEV, NULL, MS_MOVE, NULL))
		return vfab_fail(err, errlen, -errno, "move %s to " VFAB_HOST_DEV, stage);
	return 0;
}

/*
 * /proc/driver/nvidia/gpus as nvidia-container-toolkit leaves it in a
 * container: only the node's GPUs, bound from the driver's (live), on a
 * read-only tmpfs built at <nd>/mnt/nvidia-gpus and moved there.
 */
static int mount_proc_gpus(const char *nd, const struct vfab_node_gpus *g, char *err, size_t errlen)
{
	char dir[256], stage[4096], src[4096], dst[4096];
	struct dirent *de;
	struct stat st;
	int ret = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), VFAB_HOST_PROC "/" VFAB_NVIDIA_PROC_GPUS);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return 0;
	if (vfab_pathf(stage, sizeof(stage), "%s/mnt/nvidia-gpus", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	ret = vfab_mkdir_p(stage, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", stage);
	if (mount("vfab-nvidia", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0555,size=64k"))
		return vfab_fail(err, errlen, -errno, "tmpfs on %s", stage);
	d = opendir(dir);
	if (!d)
		return vfab_fail(err, errlen, -errno, "open %s", dir);
	while (ret == 0 && (de = readdir(d))) {
		uint32_t minor;

		if (de->d_name[0] == '.' ||
		    vfab_pathf(src, sizeof(src), "%s/%s", dir, de->d_name) ||
		    vfab_pathf(dst, sizeof(dst), "%s/information", src) ||
		    vfab_nvidia_info_minor(dst, &minor) || !kept(g, minor) ||
		    vfab_pathf(dst, sizeof(dst), "%s/%s", stage, de->d_name))
			continue;
		if (mkdir(dst, 0555))
			ret = vfab_fail(err, errlen, -errno, "mkdir %s", dst);
		else if (mount(src, dst, NULL, MS_BIND, NULL))
			ret = vfab_fail(err, errlen, -errno, "bind %s", src);
	}
	closedir(d);
	if (ret)
		return ret;
	if (mount(NULL, stage, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0555,size=64k"))
		return vfab_fail(err, errlen, -errno, "remount %s read-only", stage);
	if (mount(stage, dir, NULL, MS_MOVE, NULL))
		return vfab_fail(err, errlen, -errno, "move %s to %s", stage, dir);
	return 0;
}

int vfab_node_gpus_mount(const char *rundir, const char *node, char *err, size_t errlen)
{
	struct vfab_node_gpus g;
	char nd[4096];
	int ret = vfab_node_gpus_load(rundir, node, &g);

	if (ret == -ENOENT)
		return 0;
	if (ret)
		return vfab_fail(err, errlen, ret, "read the GPU list of node %s", node);
	if (vfab_node_dir(nd, sizeof(nd), rundir, node))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	ret = mount_dev(nd, &g, err, errlen);
	return ret ? ret : mount_proc_gpus(nd, &g, err, errlen);
}
