/* SPDX-License-Identifier: MIT */
#include "cm/cm_dir.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"

int vfab_cm_dir_rundir(const char *ibdev, char *buf, size_t len)
{
	char path[256], text[1024], *line, *save = NULL;
	ssize_t n;

	if (vfab_pathf(path, sizeof(path), "/sys/class/infiniband/%s/device/vfab", ibdev))
		return -ENAMETOOLONG;
	n = vfab_read_file(path, text, sizeof(text) - 1);
	if (n < 0)
		return (int)n;
	text[n] = 0;
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (!strncmp(line, "rundir ", 7))
			return vfab_pathf(buf, len, "%s", line + 7);
	return -ENOENT;
}

static int entry_path(char *buf, size_t len, const char *rundir, uint16_t ps,
		      const struct sockaddr *addr, uint16_t port)
{
	char dir[512], ip[INET6_ADDRSTRLEN];
	const void *a = addr->sa_family == AF_INET
			    ? (const void *)&((const struct sockaddr_in *)addr)->sin_addr
			    : (const void *)&((const struct sockaddr_in6 *)addr)->sin6_addr;

	if (!inet_ntop(addr->sa_family, a, ip, sizeof(ip)) || vfab_cm_dir(dir, sizeof(dir), rundir))
		return -EINVAL;
	return vfab_pathf(buf, len, "%s/%04x-%s-%u", dir, ps, ip, port);
}

static int read_entry(const char *path, uint32_t *qpn, pid_t *pid)
{
	char text[64];
	unsigned q;
	int p;
	ssize_t n = vfab_read_file(path, text, sizeof(text) - 1);

	if (n < 0)
		return (int)n;
	text[n] = 0;
	if (sscanf(text, "%u %d", &q, &p) != 2)
		return -EIO;
	*qpn = q;
	*pid = p;
	return 0;
}

int vfab_cm_dir_lookup(const char *rundir, uint16_t ps, const struct sockaddr *addr, uint16_t port,
		       uint32_t *cm_qpn, pid_t *pid)
{
	char path[1024];
	int ret = entry_path(path, sizeof(path), rundir, ps, addr, port);

	if (ret)
		return ret;
	ret = read_entry(path, cm_qpn, pid);
	if (ret)
		return -ENOENT;
	return vfab_pid_alive(*pid) ? 0 : -ENOENT;
}

int vfab_cm_dir_publish(const char *rundir, uint16_t ps, const struct sockaddr *addr, uint16_t port,
			uint32_t cm_qpn, pid_t pid)
{
	char path[1024], tmp[1100], dir[512], text[64];
	uint32_t q = 0;
	pid_t p = 0;
	int ret = entry_path(path, sizeof(path), rundir, ps, addr, port);

	if (ret)
		return ret;
	if (read_entry(path, &q, &p) == 0 && p != pid && vfab_pid_alive(p))
		return -EADDRINUSE;
	if (vfab_cm_dir(dir, sizeof(dir), rundir))
		return -ENAMETOOLONG;
	ret = vfab_mkdir_p(dir, 0777);
	if (ret && ret != -EEXIST)
		return ret;
	snprintf(text, sizeof(text), "%u %d\n", cm_qpn, (int)pid);
	if (vfab_pathf(tmp, sizeof(tmp), "%s.%d", path, (int)pid))
		return -ENAMETOOLONG;
	ret = vfab_write_file(tmp, text, strlen(text), 0644);
	if (ret)
		return ret;
	/* Atomic: a lookup sees the old entry or the new one, never half. */
	if (rename(tmp, path)) {
		ret = -errno;
		unlink(tmp);
	}
	return ret;
}

void vfab_cm_dir_remove(const char *rundir, uint16_t ps, const struct sockaddr *addr, uint16_t port)
{
	char path[1024];
	uint32_t q = 0;
	pid_t p = 0;

	if (entry_path(path, sizeof(path), rundir, ps, addr, port) == 0 &&
	    read_entry(path, &q, &p) == 0 && p == getpid())
		unlink(path);
}
