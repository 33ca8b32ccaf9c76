/* SPDX-License-Identifier: MIT */
/*
 * The node's PCI listings (pci_view.h): /sys/bus/pci/devices (hwloc and
 * lspci enumerate it) and /sys/class/pci_bus (NCCL resolves a bus id as
 * class/pci_bus/<DDDD:BB>/../../<DDDD:BB:DD.F>) hold the host's entries as
 * the host has them, plus the synthetic functions and buses. A GPU placed
 * next to an HCA is shown inside the synthetic switch: its bus and functions
 * point there, and its directory there links every entry to the real one, so
 * what is read stays the live hardware's.
 */
#include "netns/pci_view.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "netns/pci_path.h"

/* out/<list>/<name> -> text (replaced). */
static int put_link(const char *dir, const char *name, const char *text)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -ENAMETOOLONG;
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return symlink(text, path) ? -errno : 0;
}

/* Every link of sysroot/<list> copied as it is (the host's devices, buses). */
static int copy_links(const char *sysroot, const char *list, const char *dst)
{
	char src[4096], entry[4096], target[4096];
	struct dirent *de;
	int ret = 0;
	DIR *d;

	if (vfab_pathf(src, sizeof(src), "%s/%s", sysroot, list))
		return -ENAMETOOLONG;
	d = opendir(src);
	if (!d)
		return 0; /* no PCI at all (some containers): the synthetic entries only */
	while ((de = readdir(d)) && ret == 0) {
		ssize_t n;

		if (de->d_name[0] == '.' ||
		    vfab_pathf(entry, sizeof(entry), "%s/%s", src, de->d_name))
			continue;
		n = readlink(entry, target, sizeof(target) - 1);
		if (n <= 0)
			continue;
		target[n] = '\0';
		ret = put_link(dst, de->d_name, target);
	}
	closedir(d);
	return ret;
}

/* <list>/<name> -> `to` (relative to the sysfs root). */
static int put_rel(const char *dst, const char *list, const char *name, const char *to)
{
	char text[4096];
	int ret = vfab_pci_rel_link(list, to, text, sizeof(text));

	return ret ? ret : put_link(dst, name, text);
}

/*
 * The mirror of a host function at synthetic path `syn`: one link per entry
 * of its real directory `real`. A link of the real directory (driver,
 * subsystem, iommu_group) keeps its target, re-aimed from the new place.
 */
static int write_mirror(const char *sysroot, const char *outdir, const char *syn, const char *real)
{
	char src[4096], dir[4096], entry[4096], target[4096], full[4096], to[4096];
	struct dirent *de;
	int ret;
	DIR *d;

	if (vfab_pathf(src, sizeof(src), "%s/%s", sysroot, real) ||
	    vfab_pathf(dir, sizeof(dir), "%s/%s", outdir, syn))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0755);
	if (ret)
		return ret;
	d = opendir(src);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && ret == 0) {
		struct stat st;
		ssize_t n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
		    vfab_pathf(entry, sizeof(entry), "%s/%s", src, de->d_name) || lstat(entry, &st))
			continue;
		if (S_ISLNK(st.st_mode)) {
			n = readlink(entry, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			if (vfab_pci_path_join(real, target, full, sizeof(full)))
				continue;
		} else if (vfab_pathf(full, sizeof(full), "%s/%s", real, de->d_name)) {
			continue;
		}
		if (full[0] == '/')
			ret = put_link(dir, de->d_name, full);
		else if (vfab_pci_rel_link(syn, full, to, sizeof(to)) == 0)
			ret = put_link(dir, de->d_name, to);
	}
	closedir(d);
	return ret;
}

static int write_mirrors(const struct vfab_pci_layout *l, const char *sysroot, const char *outdir,
			 const char *devs)
{
	char syn[VFAB_PCI_PATH_MAX], bdf[16];
	int ret = 0;

	for (uint32_t i = 0; i < l->ndevs && ret == 0; i++) {
		const struct vfab_pci_dev *d = &l->devs[i];

		if (d->kind != VFAB_PCI_MIRROR)
			continue;
		ret = vfab_pci_dev_path(l, i, syn, sizeof(syn));
		if (!ret)
			ret = write_mirror(sysroot, outdir, syn, l->mirrors[d->mirror].path);
		vfab_pci_addr_text(&d->addr, bdf);
		if (!ret)
			ret = put_rel(devs, VFAB_PCI_VIEW_BUS_DEVICES, bdf, syn);
	}
	return ret;
}

/* class/pci_bus: the root bus and every bridge's secondary (a GPU port's: the real bus). */
static int write_buses(const struct vfab_pci_layout *l, const char *buses)
{
	char path[VFAB_PCI_PATH_MAX], name[16];
	int ret;

	snprintf(name, sizeof(name), "%04x:00", (unsigned)l->domain);
	if (vfab_pathf(path, sizeof(path), "devices/pci%04x:00/pci_bus/%s", (unsigned)l->domain,
		       name))
		return -ENAMETOOLONG;
	ret = put_rel(buses, VFAB_PCI_VIEW_CLASS_BUS, name, path);
	for (uint32_t i = 0; i < l->ndevs && ret == 0; i++) {
		const struct vfab_pci_dev *d = &l->devs[i];
		size_t n;

		if (!d->bus_name[0])
			continue;
		ret = vfab_pci_dev_path(l, i, path, sizeof(path));
		n = strlen(path);
		if (!ret && vfab_pathf(path + n, sizeof(path) - n, "/pci_bus/%s", d->bus_name))
			ret = -ENAMETOOLONG;
		if (!ret)
			ret = put_rel(buses, VFAB_PCI_VIEW_CLASS_BUS, d->bus_name, path);
	}
	return ret;
}

int vfab_pci_lists_write(const struct vfab_pci_layout *l, const char *sysroot, const char *outdir)
{
	char devs[4096], buses[4096], path[VFAB_PCI_PATH_MAX], bdf[16];
	int ret;

	if (l->ndevs == 0)
		return 0;
	if (vfab_pathf(devs, sizeof(devs), "%s/" VFAB_PCI_VIEW_BUS_DEVICES, outdir) ||
	    vfab_pathf(buses, sizeof(buses), "%s/" VFAB_PCI_VIEW_CLASS_BUS, outdir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(devs, 0755);
	if (!ret)
		ret = vfab_mkdir_p(buses, 0755);
	if (!ret)
		ret = copy_links(sysroot, VFAB_PCI_VIEW_BUS_DEVICES, devs);
	if (!ret)
		ret = copy_links(sysroot, VFAB_PCI_VIEW_CLASS_BUS, buses);
	for (uint32_t i = 0; i < l->ndevs && ret == 0; i++) {
		if (l->devs[i].kind == VFAB_PCI_MIRROR)
			continue;
		vfab_pci_addr_text(&l->devs[i].addr, bdf);
		ret = vfab_pci_dev_path(l, i, path, sizeof(path));
		if (!ret)
			ret = put_rel(devs, VFAB_PCI_VIEW_BUS_DEVICES, bdf, path);
	}
	if (!ret)
		ret = write_mirrors(l, sysroot, outdir, devs);
	if (!ret)
		ret = write_buses(l, buses);
	return ret;
}
