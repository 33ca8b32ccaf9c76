/* SPDX-License-Identifier: MIT */
/*
 * Writing into the node views (<rundir>/nodes/<node>/class/infiniband/...,
 * bind-mounted as the node's /sys/class/infiniband). Entries of a view may
 * be hard links shared with other entries (the empty GID and pkey slots),
 * and readers in the nodes must never see a half-written file, so a file is
 * always replaced: a temp file in the same directory renamed over it.
 */
#include "vfabd.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int vfabd_view_open(const struct vfab_region *r, uint32_t hca, uint32_t port, const char *sub)
{
	const struct vfab_hca *h;
	char path[PATH_MAX];
	int n, fd;

	if (hca >= VFAB_MAX_HCAS || !r->hcas[hca].in_use || r->hcas[hca].node >= VFAB_MAX_NODES)
		return -EINVAL;
	h = &r->hcas[hca];
	n = snprintf(path, sizeof(path), "%s/nodes/%s/class/infiniband/%s/ports/%u%s%s", r->rundir,
		     r->nodes[h->node].id, h->name, port, *sub ? "/" : "", sub);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int vfabd_view_replace(int dirfd, const char *name, const char *text)
{
	size_t len = strlen(text);
	char tmp[NAME_MAX + 1];
	int fd, n, rc = 0;

	/* A dot name: a glob over counters/ in a node never picks up the temp file. */
	n = snprintf(tmp, sizeof(tmp), ".%s.vfabd", name);
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		rc = errno ? -errno : -EIO;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && renameat(dirfd, tmp, dirfd, name))
		rc = -errno;
	if (rc)
		unlinkat(dirfd, tmp, 0);
	return rc;
}
