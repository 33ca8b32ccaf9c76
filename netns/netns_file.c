/* SPDX-License-Identifier: MIT */
#include "netns/netns_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include "base/fsutil.h"

/*
 * Namespace files must be mount points that propagate (as `ip netns` makes
 * them), so that unmounting one here also drops the copies that node mount
 * namespaces (rslave of this one) received.
 */
static int prepare_netns_dir(void)
{
	char dir[4096];
	int ret = vfab_netns_dir(dir, sizeof(dir));

	if (!ret)
		ret = vfab_mkdir_p(dir, 0755);
	if (ret)
		return ret;
	if (mount("", dir, "none", MS_SHARED | MS_REC, NULL) == 0)
		return 0;
	if (errno != EINVAL)
		return -errno;
	if (mount(dir, dir, "none", MS_BIND | MS_REC, NULL))
		return -errno;
	if (mount("", dir, "none", MS_SHARED | MS_REC, NULL))
		return -errno;
	return 0;
}

int vfab_netns_publish(const char *src, const char *dst)
{
	int fd, ret;

	ret = prepare_netns_dir();
	if (ret)
		return ret;
	fd = open(dst, O_RDONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	close(fd);
	if (mount(src, dst, "none", MS_BIND, NULL)) {
		ret = -errno;
		unlink(dst);
		return ret;
	}
	return 0;
}

int vfab_net_bind_ns(const char *fabric, const char *suffix, pid_t pid)
{
	char src[64], dst[256];

	if (vfab_pathf(src, sizeof(src), "/proc/%d/ns/net", (int)pid) ||
	    vfab_netns_path(dst, sizeof(dst), fabric, suffix))
		return -ENAMETOOLONG;
	return vfab_netns_publish(src, dst);
}

int vfab_net_unbind_ns(const char *fabric, const char *suffix)
{
	char path[256];

	if (vfab_netns_path(path, sizeof(path), fabric, suffix))
		return -ENAMETOOLONG;
	if (umount2(path, MNT_DETACH) && errno != EINVAL && errno != ENOENT)
		return -errno;
	if (unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}

int vfab_netns_run(int nsfd, int (*fn)(void *), void *arg)
{
	/* setns() moves the calling thread only: back to that thread's own namespace. */
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int ret;

	if (self < 0)
		return -errno;
	if (setns(nsfd, CLONE_NEWNET)) {
		ret = -errno;
		close(self);
		return ret;
	}
	ret = fn(arg);
	if (setns(self, CLONE_NEWNET)) {
		/* Going on in the wrong namespace could touch the host network. */
		perror("vfab: cannot return to the original network namespace");
		abort();
	}
	close(self);
	return ret;
}

int vfab_netns_open(const char *fabric, const char *suffix)
{
	char path[256];
	int fd;

	if (vfab_netns_path(path, sizeof(path), fabric, suffix))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
