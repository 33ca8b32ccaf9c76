/* SPDX-License-Identifier: MIT */
#include "base/beneath.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

static int component_ok(const char *c)
{
	return *c && strcmp(c, ".") != 0 && strcmp(c, "..") != 0;
}

int vfab_open_beneath(int dirfd, const char *rel, int flags, mode_t mode)
{
	char buf[PATH_MAX], *comp, *slash;
	int cur = dirfd, next;
	size_t n = strlen(rel);

	if (n == 0 || rel[0] == '/')
		return -EINVAL;
	if (n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, rel, n + 1);
	for (comp = buf; (slash = strchr(comp, '/')); comp = slash + 1) {
		*slash = '\0';
		if (!component_ok(comp)) {
			next = -EINVAL;
		} else {
			/* O_PATH: a directory on the way needs no read right, only search. */
			next = openat(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (next < 0)
				next = -errno;
		}
		if (cur != dirfd)
			close(cur);
		if (next < 0)
			return next;
		cur = next;
	}
	if (!component_ok(comp)) {
		next = -EINVAL;
	} else {
		next = openat(cur, comp, flags | O_NOFOLLOW | O_CLOEXEC, mode);
		if (next < 0)
			next = -errno;
	}
	if (cur != dirfd)
		close(cur);
	return next;
}

ssize_t vfab_read_beneath(int dirfd, const char *rel, char *buf, size_t len)
{
	int fd = vfab_open_beneath(dirfd, rel, O_RDONLY, 0);
	ssize_t n;

	if (fd < 0)
		return fd;
	if (len == 0) {
		close(fd);
		return -EINVAL;
	}
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}
