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
#include "base/locator.h"
#include "base/proc.h"
#include "cm/cm_addr.h"

#define ENTRY_MAX 64		/* "<qpn> <pid> <start>\n" is far shorter */
#define CAP_NET_BIND_SERVICE 10 /* linux/capability.h */
#define NAME_MAX_LEN 128

int vfab_cm_dir_locator(const char *ibdev, struct vfab_locator *loc)
{
	char path[256], text[1024];
	ssize_t n;

	if (vfab_pathf(path, sizeof(path), "/sys/class/infiniband/%s/device/vfab", ibdev))
		return -ENAMETOOLONG;
	n = vfab_read_file(path, text, sizeof(text) - 1);
	if (n < 0)
		return (int)n;
	text[n] = 0;
	return vfab_locator_parse(text, UINT32_MAX, loc) ? -ENOENT : 0;
}

int vfab_cm_dir_rundir(const char *ibdev, char *buf, size_t len)
{
	struct vfab_locator loc;
	int rc = vfab_cm_dir_locator(ibdev, &loc);

	return rc ? rc : vfab_pathf(buf, len, "%s", loc.rundir);
}

int vfab_cm_dir_name(char *buf, size_t len, uint16_t ps, const struct sockaddr *addr, uint16_t port)
{
	char ip[INET6_ADDRSTRLEN];
	const void *a = addr->sa_family == AF_INET
			    ? (const void *)&((const struct sockaddr_in *)addr)->sin_addr
			    : (const void *)&((const struct sockaddr_in6 *)addr)->sin6_addr;

	if (!inet_ntop(addr->sa_family, a, ip, sizeof(ip)))
		return -EINVAL;
	return vfab_pathf(buf, len, "%04x-%s-%u", ps, ip, port);
}

int vfab_cm_dir_name_ok(const char *name)
{
	size_t n = strnlen(name, NAME_MAX_LEN);

	return n > 0 && n < NAME_MAX_LEN && name[0] != '.' && !strchr(name, '/');
}

/* The service's port: the digits after the name's last '-'. */
static long name_port(const char *name)
{
	const char *p = strrchr(name, '-');
	char *end;
	long v;

	if (!p || !p[1])
		return -1;
	v = strtol(p + 1, &end, 10);
	return *end || v < 0 || v > 65535 ? -1 : v;
}

/* The file's content, read without following links or blocking on a FIFO. */
static int read_entry(const char *path, struct vfab_cm_entry *e, struct stat *st)
{
	char text[ENTRY_MAX + 1];
	unsigned q;
	int pid;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -ESTALE;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || st->st_size > ENTRY_MAX) {
		close(fd);
		return -ESTALE;
	}
	n = read(fd, text, ENTRY_MAX);
	close(fd);
	if (n <= 0)
		return -ESTALE;
	text[n] = 0;
	if (sscanf(text, "%u %d %llu", &q, &pid, &e->start) != 3 || pid <= 0)
		return -ESTALE;
	e->cm_qpn = q;
	e->pid = pid;
	return 0;
}

/*
 * What the kernel says of e's process: it runs, it is the one that started
 * at e->start, and the file's owner is one of its users (root's entries
 * excepted); a privileged port needs CAP_NET_BIND_SERVICE, as binding it did.
 * A /proc file the reader may not read (hidepid) does not make a process
 * dead (base/proc.h): the check passes on what it can read.
 */
static int check_process(const struct vfab_cm_entry *e, uid_t owner, long port)
{
	struct vfab_proc_creds c;
	unsigned long long start;
	char state;
	int ret = vfab_proc_stat(e->pid, &state, &start);

	if (ret == -ENOENT || ret == -ESRCH)
		return -ESTALE;
	if (!ret && (state == 'Z' || state == 'X' || start != e->start))
		return -ESTALE;
	if (owner == 0)
		return 0;
	ret = vfab_proc_creds(e->pid, &c);
	if (ret == -ENOENT)
		return -ESTALE;
	if (ret)
		return 0;
	if (c.uid[0] != owner && c.uid[1] != owner && c.uid[2] != owner && c.uid[3] != owner)
		return -ESTALE;
	if (port < VFAB_CM_PROT_SOCK && !(c.cap_eff & (1ull << CAP_NET_BIND_SERVICE)))
		return -ESTALE;
	return 0;
}

static int check_path(const char *path, const char *name, struct vfab_cm_entry *e)
{
	struct stat st;
	long port = name_port(name);
	int ret;

	if (port < 0)
		return -ESTALE;
	ret = read_entry(path, e, &st);
	return ret ? ret : check_process(e, st.st_uid, port);
}

int vfab_cm_dir_check(const char *dir, const char *name, struct vfab_cm_entry *e)
{
	char path[1024];

	if (!vfab_cm_dir_name_ok(name) || vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -EINVAL;
	return check_path(path, name, e);
}

int vfab_cm_dir_prepare(const char *dir, const struct vfab_cm_entry *e, char *tmp, size_t len)
{
	char text[ENTRY_MAX];
	int n = snprintf(text, sizeof(text), "%u %d %llu\n", e->cm_qpn, (int)e->pid, e->start);

	/*
	 * O_EXCL and O_NOFOLLOW: another user may have put anything under a
	 * name of this directory (a link to a file of ours, say); a name taken
	 * is skipped, never written through.
	 */
	for (unsigned k = 0; k < 64; k++) {
		ssize_t w;
		int fd, ret = 0;

		if (vfab_pathf(tmp, len, "%s/.%d.%u", dir, (int)e->pid, k))
			return -ENAMETOOLONG;
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0) {
			if (errno == EEXIST)
				continue;
			return -errno;
		}
		/* Readable by every user: their CMs look listeners up. */
		if (fchmod(fd, 0644))
			ret = -errno;
		else if ((w = write(fd, text, (size_t)n)) != n)
			ret = w < 0 ? -errno : -EIO;
		close(fd);
		if (ret)
			unlink(tmp);
		return ret;
	}
	return -EEXIST;
}

static int same(const struct vfab_cm_entry *a, const struct vfab_cm_entry *b)
{
	return a->pid == b->pid && a->start == b->start && a->cm_qpn == b->cm_qpn;
}

int vfab_cm_dir_publish(const char *dir, const char *tmp, const char *name,
			const struct vfab_cm_entry *e)
{
	char path[1024];

	if (!vfab_cm_dir_name_ok(name) || vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -EINVAL;
	for (int tries = 0; tries < 4; tries++) {
		struct vfab_cm_entry old;
		int ret;

		/* link() takes a free name or fails: two listeners never both win. */
		if (link(tmp, path) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
		ret = check_path(path, name, &old);
		if (ret == 0)
			return same(&old, e) ? 0 : -EADDRINUSE;
		if (ret == -ENOENT)
			continue; /* removed meanwhile: try again */
		if (unlink(path) && errno != ENOENT)
			return errno == EPERM || errno == EACCES ? -EPERM : -errno;
	}
	return -EADDRINUSE;
}

void vfab_cm_dir_remove(const char *dir, const char *name, const struct vfab_cm_entry *e)
{
	char path[1024];
	struct vfab_cm_entry old;
	struct stat st;

	if (vfab_cm_dir_name_ok(name) && !vfab_pathf(path, sizeof(path), "%s/%s", dir, name) &&
	    read_entry(path, &old, &st) == 0 && same(&old, e))
		unlink(path);
}

int vfab_cm_dir_free_stale(const char *dir, const char *name)
{
	char path[1024];
	struct vfab_cm_entry e;
	struct stat before, now;
	int ret;

	if (!vfab_cm_dir_name_ok(name) || vfab_pathf(path, sizeof(path), "%s/%s", dir, name))
		return -EINVAL;
	if (lstat(path, &before))
		return errno == ENOENT ? 0 : -errno;
	ret = check_path(path, name, &e);
	if (ret == 0)
		return -EADDRINUSE;
	if (ret == -ENOENT)
		return 0;
	/* Only the inode that was checked: a name taken again meanwhile stays. */
	if (lstat(path, &now) == 0 && now.st_ino == before.st_ino && now.st_dev == before.st_dev &&
	    unlink(path) && errno != ENOENT)
		return -errno;
	return 0;
}
