/* SPDX-License-Identifier: MIT */
#include "base/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/fsutil.h"

static int parse_stat(const char *path, char *state, unsigned long long *start)
{
	char buf[1024], *p;
	ssize_t n;
	int field = 3;

	n = vfab_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	/* "pid (comm) S ...": comm may contain ')' so take the last one. */
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return -EIO;
	p += 2;
	*state = *p;
	while (field < 22 && (p = strchr(p, ' '))) {
		p++;
		field++;
	}
	if (!p)
		return -EIO;
	*start = strtoull(p, NULL, 10);
	return 0;
}

int vfab_proc_stat_in(const char *root, pid_t pid, char *state, unsigned long long *start)
{
	char path[4096];

	if (pid <= 0)
		return -EINVAL;
	if (vfab_pathf(path, sizeof(path), "%s/%d/stat", root, (int)pid))
		return -EINVAL;
	return parse_stat(path, state, start);
}

int vfab_proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	return vfab_proc_stat_in("/proc", pid, state, start);
}

int vfab_proc_self_stat_in(const char *root, char *state, unsigned long long *start)
{
	char path[4096];

	if (vfab_pathf(path, sizeof(path), "%s/self/stat", root))
		return -EINVAL;
	return parse_stat(path, state, start);
}

int vfab_proc_self_stat(char *state, unsigned long long *start)
{
	return vfab_proc_self_stat_in("/proc", state, start);
}

pid_t vfab_proc_outer_pid_in(const char *root)
{
	char path[4096], buf[4096], *p;
	ssize_t n;
	long pid;

	if (vfab_pathf(path, sizeof(path), "%s/self/status", root))
		return -EINVAL;
	n = vfab_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 ? (pid_t)n : -EIO;
	p = strstr(buf, "\nNSpid:");
	if (!p)
		return getpid();
	pid = strtol(p + 8, NULL, 10);
	return pid > 0 ? (pid_t)pid : getpid();
}

pid_t vfab_proc_outer_pid(void)
{
	pid_t pid = vfab_proc_outer_pid_in("/proc");

	return pid > 0 ? pid : getpid();
}

int vfab_proc_creds(pid_t pid, struct vfab_proc_creds *c)
{
	char path[64], buf[4096], *p;
	unsigned long u[4];
	ssize_t n;

	if (pid < 0)
		return -EINVAL;
	if (pid ? vfab_pathf(path, sizeof(path), "/proc/%d/status", (int)pid)
		: vfab_pathf(path, sizeof(path), "/proc/self/status"))
		return -EINVAL;
	n = vfab_read_file(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	p = strstr(buf, "\nUid:");
	if (!p || sscanf(p + 5, "%lu %lu %lu %lu", &u[0], &u[1], &u[2], &u[3]) != 4)
		return -EIO;
	for (int i = 0; i < 4; i++)
		c->uid[i] = (uid_t)u[i];
	p = strstr(buf, "\nCapEff:");
	if (!p || sscanf(p + 8, "%llx", &c->cap_eff) != 1)
		return -EIO;
	return 0;
}

bool vfab_pid_alive(pid_t pid)
{
	unsigned long long start;
	char state;
	int ret;

	if (pid <= 0)
		return false;
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return false;
	ret = vfab_proc_stat(pid, &state, &start);
	if (ret == -ENOENT || ret == -ESRCH)
		return false;
	if (ret)
		return true; /* exists but unreadable: see proc.h */
	return state != 'Z' && state != 'X';
}

int vfab_pid_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n;

	if (vfab_pathf(path, sizeof(path), "/proc/%d/comm", (int)pid))
		return -EINVAL;
	n = vfab_read_file(path, buf, len);
	if (n < 0)
		return (int)n;
	if (n > 0 && buf[n - 1] == '\n')
		buf[n - 1] = '\0';
	return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77 /* Linux 6.5 */
#endif

int vfab_proc_peer(int fd, struct vfab_proc_peer *p)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char state;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	if (cred.pid <= 0)
		return -ESRCH;
	p->pid = cred.pid;
	p->uid = cred.uid;
	p->gid = cred.gid;
	len = sizeof(p->pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &p->pidfd, &len) < 0)
		p->pidfd = (int)syscall(SYS_pidfd_open, cred.pid, 0);
	/* Read after the pidfd: if it names the peer, so does this start time. */
	if (vfab_proc_stat(cred.pid, &state, &p->start))
		p->start = 0;
	return 0;
}
