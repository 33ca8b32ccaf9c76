/* SPDX-License-Identifier: MIT */
#include "base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

int vfab_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n >= len)
		return -ENAMETOOLONG;
	return 0;
}

int vfab_fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return ret;
}

int vfab_mkdir_p(const char *path, mode_t mode)
{
	char tmp[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, n + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int vfab_write_file(const char *path, const void *data, size_t len, mode_t mode)
{
	const char *p = data;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	int ret = 0;

	if (fd < 0)
		return -errno;
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) && ret == 0)
		ret = -errno;
	return ret;
}

int vfab_write_filef(const char *path, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(buf))
		return -EOVERFLOW;
	return vfab_write_file(path, buf, (size_t)n, 0644);
}

ssize_t vfab_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t got = 0;

	if (fd < 0)
		return -errno;
	while (got + 1 < len) {
		ssize_t r = read(fd, buf + got, len - 1 - got);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			int err = -errno;

			close(fd);
			return err;
		}
		if (r == 0)
			break;
		got += (size_t)r;
	}
	close(fd);
	buf[got] = '\0';
	return (ssize_t)got;
}

int vfab_copy_file(const char *src, const char *dst, mode_t mode)
{
	struct stat st;
	char *data;
	ssize_t n;
	int ret;

	if (stat(src, &st))
		return -errno;
	if (st.st_size > (1 << 24))
		return -EFBIG;
	data = malloc((size_t)st.st_size + 1);
	if (!data)
		return -ENOMEM;
	n = vfab_read_file(src, data, (size_t)st.st_size + 1);
	ret = n < 0 ? (int)n : vfab_write_file(dst, data, (size_t)n, mode);
	free(data);
	return ret;
}

int vfab_read_pid_file(const char *path, pid_t *pid)
{
	char buf[32];
	ssize_t n = vfab_read_file(path, buf, sizeof(buf));

	return n < 0 ? (int)n : vfab_parse_pid_file(buf, pid);
}

int vfab_parse_pid_file(const char *buf, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(buf, &end, 10);
	if (errno || end == buf || v <= 0 || (*end && *end != '\n'))
		return -EINVAL;
	*pid = (pid_t)v;
	return 0;
}

/*
 * Written to a temporary file and renamed over: a reader (vfab status, the
 * teardown, node_enter) sees the old pid or the new one, never a torn file.
 */
int vfab_write_pid_file(const char *path, pid_t pid)
{
	char tmp[4096];
	int ret = vfab_pathf(tmp, sizeof(tmp), "%s.tmp", path);

	if (ret)
		return ret;
	ret = vfab_write_filef(tmp, "%d\n", (int)pid);
	if (ret == 0 && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

static int rm_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (type == FTW_DP || type == FTW_DNR || type == FTW_D)
		return rmdir(path) && errno != ENOENT ? -errno : 0;
	return unlink(path) && errno != ENOENT ? -errno : 0;
}

int vfab_rm_rf(const char *path)
{
	struct stat st;
	int ret;

	if (lstat(path, &st))
		return errno == ENOENT ? 0 : -errno;
	/* FTW_MOUNT: never descend into something mounted below the tree. */
	ret = nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	if (ret > 0)
		ret = -EIO;
	return ret;
}

int vfab_self_exe_dir(char *buf, size_t len)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n < 0)
		return -errno;
	exe[n] = '\0';
	return vfab_pathf(buf, len, "%s", dirname(exe));
}

int vfab_path_public(const char *path, char *where, size_t wlen)
{
	char part[4096];
	size_t n = strlen(path);
	struct stat st;

	if (n >= sizeof(part) || path[0] != '/')
		return -EINVAL;
	for (size_t i = 1; i <= n; i++) {
		bool last = i == n;
		mode_t need;

		if (!last && path[i] != '/')
			continue;
		memcpy(part, path, i);
		part[i] = '\0';
		if (stat(part, &st))
			return -errno;
		need = last && !S_ISDIR(st.st_mode) ? S_IROTH : S_IXOTH;
		if (!(st.st_mode & need)) {
			snprintf(where, wlen, "%s", part);
			return -EACCES;
		}
	}
	return 0;
}

int vfab_unix_listen(const char *path, int type)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, rc;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || chmod(path, 0666) < 0 ||
	    listen(fd, 128) < 0) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}
