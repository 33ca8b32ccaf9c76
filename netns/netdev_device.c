/* SPDX-License-Identifier: MIT */
#include "netns/netdev_device.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "netns/node_enter.h"
#include "netns/pci_path.h"

struct link_report {
	int error;
	char text[480];
};

/* An empty directory or file at `to` for a bind of the entry st describes. */
static int make_stub(const struct stat *st, const char *to)
{
	int fd;

	if (S_ISDIR(st->st_mode))
		return mkdir(to, 0755) ? -errno : 0;
	fd = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, st->st_mode & 0777);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/*
 * The entries of `orig` (a netdev's sysfs directory) into the tmpfs at `dst`;
 * `speed` from the file at `speed` instead (the port's rate: a veth
 * reports a fixed 10000).
 */
static int mirror_entries(const char *orig, const char *dst, const char *speed, char *err,
			  size_t errlen)
{
	char src[4096], to[4096], target[4096];
	struct dirent *de;
	int ret = 0;
	DIR *d = opendir(orig);

	if (!d)
		return vfab_fail(err, errlen, -errno, "open %s", orig);
	while ((de = readdir(d)) && ret == 0) {
		struct stat st;
		ssize_t n;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (vfab_pathf(src, sizeof(src), "%s/%s", orig, de->d_name) ||
		    vfab_pathf(to, sizeof(to), "%s/%s", dst, de->d_name)) {
			ret = vfab_fail(err, errlen, -ENAMETOOLONG, "path of %s", de->d_name);
		} else if (lstat(src, &st)) {
			continue; /* gone meanwhile */
		} else if (S_ISLNK(st.st_mode)) {
			n = readlink(src, target, sizeof(target) - 1);
			if (n <= 0)
				continue;
			target[n] = '\0';
			/* Relative links resolve the same: the tmpfs sits at the same path. */
			if (symlink(target, to))
				ret = vfab_fail(err, errlen, -errno, "symlink %s", to);
		} else if ((ret = make_stub(&st, to))) {
			ret = vfab_fail(err, errlen, ret, "create %s", to);
		} else if (mount(strcmp(de->d_name, "speed") ? src : speed, to, NULL, MS_BIND,
				 NULL)) {
			ret = vfab_fail(err, errlen, -errno, "bind %s", src);
		}
	}
	closedir(d);
	return ret;
}

/*
 * Covers the sysfs directory of `netdev` (inside the node): a tmpfs made at
 * <nd>/mnt/netdev-new with the kernel's entries (read through a bind of the
 * directory at <nd>/mnt/netdev-orig) and device -> `function`, then moved
 * over the directory.
 */
static int cover_netdev(const char *nd, const char *netdev, const char *function, const char *speed,
			char *err, size_t errlen)
{
	char link[4096], text[4096], rel[4096], dir[4096], orig[4096], fresh[4096], dev[4096];
	struct stat st;
	ssize_t n;
	int ret;

	if (vfab_pathf(link, sizeof(link), "/sys/class/net/%s", netdev) ||
	    vfab_pathf(orig, sizeof(orig), "%s/mnt/netdev-orig", nd) ||
	    vfab_pathf(fresh, sizeof(fresh), "%s/mnt/netdev-new", nd))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "path of netdev %s", netdev);
	n = readlink(link, text, sizeof(text) - 1);
	if (n <= 0)
		return vfab_fail(err, errlen, n < 0 ? -errno : -EINVAL, "readlink %s", link);
	text[n] = '\0';
	ret = vfab_pci_path_join("class/net", text, rel, sizeof(rel));
	if (ret || vfab_pathf(dir, sizeof(dir), "/sys/%s", rel) ||
	    vfab_pathf(dev, sizeof(dev), "%s/device", dir))
		return vfab_fail(err, errlen, ret ? ret : -ENAMETOOLONG, "where %s points", link);
	if (lstat(dev, &st) == 0)
		return 0; /* done before, or a netdev with a device of its own */
	ret = vfab_mkdir_p(orig, 0755);
	if (ret == 0)
		ret = vfab_mkdir_p(fresh, 0755);
	if (ret)
		return vfab_fail(err, errlen, ret, "mkdir %s", fresh);
	if (mount(dir, orig, NULL, MS_BIND, NULL))
		return vfab_fail(err, errlen, -errno, "bind %s", dir);
	if (mount("tmpfs", fresh, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0755,size=16k"))
		ret = vfab_fail(err, errlen, -errno, "tmpfs on %s", fresh);
	if (ret == 0)
		ret = mirror_entries(orig, fresh, speed, err, errlen);
	if (ret == 0 && (vfab_pci_rel_link(rel, function, text, sizeof(text)) ||
			 vfab_pathf(link, sizeof(link), "%s/device", fresh)))
		ret = vfab_fail(err, errlen, -ENAMETOOLONG, "device link of %s", netdev);
	if (ret == 0 && symlink(text, link))
		ret = vfab_fail(err, errlen, -errno, "symlink %s", link);
	if (ret == 0 &&
	    mount(NULL, fresh, NULL, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "mode=0755,size=16k"))
		ret = vfab_fail(err, errlen, -errno, "remount %s read-only", fresh);
	if (ret == 0 && mount(fresh, dir, NULL, MS_MOVE, NULL))
		ret = vfab_fail(err, errlen, -errno, "move %s to %s", fresh, dir);
	if (ret)
		umount2(fresh, MNT_DETACH);
	umount2(orig, MNT_DETACH);
	return ret;
}

/* Writes the port's rate (Mb/s) to the netdev's speed file; its path in `path`. */
static int speed_file(const char *rundir, const char *node, const char *netdev, uint32_t mbps,
		      char *path, size_t len, char *err, size_t errlen)
{
	char text[16], *slash;
	int ret;

	if (vfab_netdev_speed_path(path, len, rundir, node, netdev))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "speed file of %s", netdev);
	slash = strrchr(path, '/');
	*slash = '\0';
	ret = vfab_mkdir_p(path, 0755);
	*slash = '/';
	snprintf(text, sizeof(text), "%u\n", mbps);
	if (!ret)
		ret = vfab_write_file(path, text, strlen(text), 0444);
	return ret ? vfab_fail(err, errlen, ret, "write %s", path) : 0;
}

static __attribute__((noreturn)) void child_main(const char *rundir, const struct vfab_region *r,
						 uint32_t node, const struct vfab_pci_layout *l,
						 int fd)
{
	struct link_report rep = {0};
	char nd[4096], function[VFAB_PCI_PATH_MAX], speed[4096];
	const char *id = r->nodes[node].id;

	rep.error = vfab_node_enter(rundir, id);
	if (rep.error)
		snprintf(rep.text, sizeof(rep.text), "enter node %s", id);
	else if (vfab_node_dir(nd, sizeof(nd), rundir, id))
		rep.error = vfab_fail(rep.text, sizeof(rep.text), -ENAMETOOLONG, "node dir");
	for (uint32_t k = 0; rep.error == 0 && k < l->nhcas; k++) {
		const struct vfab_pci_dev *d = &l->devs[l->hca_dev[k]];

		rep.error = vfab_pci_dev_path(l, l->hca_dev[k], function, sizeof(function));
		if (rep.error)
			snprintf(rep.text, sizeof(rep.text), "path of %s", r->hcas[d->hca].name);
		for (uint32_t p = 0; rep.error == 0 && p < r->hcas[d->hca].nports; p++) {
			const char *netdev = vfab_pci_port_netdev(r, node, d->hca, p);

			if (netdev)
				rep.error = speed_file(rundir, id, netdev,
						       r->hcas[d->hca].ports[p].speed_mbps, speed,
						       sizeof(speed), rep.text, sizeof(rep.text));
			if (netdev && !rep.error)
				rep.error = cover_netdev(nd, netdev, function, speed, rep.text,
							 sizeof(rep.text));
		}
	}
	if (write(fd, &rep, sizeof(rep)) < 0)
		_exit(2);
	_exit(rep.error ? 1 : 0);
}

int vfab_netdev_device_links(const char *rundir, const struct vfab_region *r, uint32_t node,
			     const struct vfab_pci_layout *l, char *err, size_t errlen)
{
	struct link_report rep = {.error = -EPIPE};
	int fds[2], status = 0;
	pid_t pid;
	ssize_t n;

	if (l->nhcas == 0)
		return 0;
	if (pipe2(fds, O_CLOEXEC))
		return vfab_fail(err, errlen, -errno, "pipe");
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return vfab_fail(err, errlen, -errno, "fork");
	}
	if (pid == 0) {
		close(fds[0]);
		child_main(rundir, r, node, l, fds[1]);
	}
	close(fds[1]);
	do
		n = read(fds[0], &rep, sizeof(rep));
	while (n < 0 && errno == EINTR);
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(rep))
		return vfab_fail(err, errlen, -EPIPE, "netdev device links of node %s: no report",
				 r->nodes[node].id);
	if (rep.error)
		return vfab_fail(err, errlen, rep.error, "netdev device links of node %s: %s",
				 r->nodes[node].id, rep.text);
	return 0;
}
