/* SPDX-License-Identifier: MIT */
#include "netns/node_identity.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"

static int random_bytes(uint8_t *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = getrandom(buf + got, len - got, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		got += (size_t)n;
	}
	return 0;
}

int vfab_node_identity_write(const char *node_dir, const char *etc_upper)
{
	uint8_t b[16], m[16];
	char path[4096];
	int ret;

	ret = random_bytes(b, sizeof(b));
	if (ret == 0)
		ret = random_bytes(m, sizeof(m));
	if (ret)
		return ret;
	/* A version 4 UUID, as the kernel makes its boot_id. */
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	if (vfab_pathf(path, sizeof(path), "%s/" VFAB_NODE_BOOT_ID_FILE, node_dir))
		return -ENAMETOOLONG;
	ret = vfab_write_filef(path,
			       "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			       "%02x%02x%02x%02x%02x%02x\n",
			       b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10],
			       b[11], b[12], b[13], b[14], b[15]);
	if (ret)
		return ret;
	/* machine-id(5): 32 lowercase hex digits and a newline, not all zero. */
	m[6] = (uint8_t)((m[6] & 0x0f) | 0x40);
	m[8] = (uint8_t)((m[8] & 0x3f) | 0x80);
	if (vfab_pathf(path, sizeof(path), "%s/machine-id", etc_upper))
		return -ENAMETOOLONG;
	return vfab_write_filef(
	    path, "%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x%02x\n", m[0], m[1],
	    m[2], m[3], m[4], m[5], m[6], m[7], m[8], m[9], m[10], m[11], m[12], m[13], m[14],
	    m[15]);
}

static int bind_boot_id(const char *node_dir, char *err, size_t errlen)
{
	char src[4096];

	if (vfab_pathf(src, sizeof(src), "%s/" VFAB_NODE_BOOT_ID_FILE, node_dir))
		return vfab_fail(err, errlen, -ENAMETOOLONG, "node dir path too long");
	if (mount(src, VFAB_HOST_BOOT_ID, NULL, MS_BIND, NULL))
		return vfab_fail(err, errlen, -errno, "bind %s on " VFAB_HOST_BOOT_ID, src);
	if (mount(NULL, VFAB_HOST_BOOT_ID, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL))
		return vfab_fail(err, errlen, -errno, "remount " VFAB_HOST_BOOT_ID " read-only");
	return 0;
}

/*
 * The region and the directory of its users' shards are opened before the
 * fresh tmpfs hides them and bound back in by their descriptors: the node's
 * /dev/shm then holds nothing of the host's but them (shards vfabd makes
 * later appear through the directory's bind).
 */
static int private_shm(const char *region_path, char *err, size_t errlen)
{
	const char *name = strrchr(region_path, '/');
	char fdpath[64], dst[4096], dir[4096];
	int fd, dfd = -1, ret = 0;

	if (!name || strncmp(region_path, VFAB_HOST_SHM "/", sizeof(VFAB_HOST_SHM)) != 0 ||
	    vfab_shard_dir(region_path, dir, sizeof(dir)))
		return vfab_fail(err, errlen, -EINVAL, "region %s is not in " VFAB_HOST_SHM,
				 region_path);
	fd = open(region_path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return vfab_fail(err, errlen, -errno, "open %s", region_path);
	dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		ret = vfab_fail(err, errlen, -errno, "open %s", dir);
		goto out;
	}
	if (mount("shm", VFAB_HOST_SHM, "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777")) {
		ret = vfab_fail(err, errlen, -errno, "tmpfs on " VFAB_HOST_SHM);
		goto out;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
	if (vfab_pathf(dst, sizeof(dst), "%s", region_path) || vfab_write_file(dst, "", 0, 0600)) {
		ret = vfab_fail(err, errlen, -EIO, "create %s in the node", region_path);
		goto out;
	}
	if (mount(fdpath, dst, NULL, MS_BIND, NULL)) {
		ret = vfab_fail(err, errlen, -errno, "bind the region on %s", dst);
		goto out;
	}
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", dfd);
	if (mkdir(dir, 0755) < 0 || mount(fdpath, dir, NULL, MS_BIND, NULL))
		ret = vfab_fail(err, errlen, -errno, "bind the shards on %s", dir);
out:
	if (dfd >= 0)
		close(dfd);
	close(fd);
	return ret;
}

int vfab_node_identity_mount(const char *node_dir, const char *region_path, char *err,
			     size_t errlen)
{
	int ret = bind_boot_id(node_dir, err, errlen);

	return ret ? ret : private_shm(region_path, err, errlen);
}
