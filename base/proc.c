/* SPDX-License-Identifier: MIT */
#include "base/proc.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"

int vfab_proc_stat(pid_t pid, char *state, unsigned long long *start)
{
	char path[64], buf[1024], *p;
	ssize_t n;
	int field = 3;

	if (pid <= 0)
		return -EINVAL;
	if (vfab_pathf(path, sizeof(path), "/proc/%d/stat", (int)pid))
		return -EINVAL;
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
