/* SPDX-License-Identifier: MIT */
#include "netns/node_procs.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"

void vfab_ns_set_add(struct vfab_ns_set *s, const char *nsfile)
{
	struct stat st;

	if (stat(nsfile, &st) || s->n >= VFAB_NS_SET_MAX)
		return;
	for (int i = 0; i < s->n; i++)
		if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino)
			return;
	s->dev[s->n] = st.st_dev;
	s->ino[s->n++] = st.st_ino;
}

void vfab_ns_set_add_node(struct vfab_ns_set *s, const char *fabric, const char *node, pid_t holder)
{
	char path[PATH_MAX];

	if (holder > 0 && vfab_pathf(path, sizeof(path), "/proc/%d/ns/net", (int)holder) == 0)
		vfab_ns_set_add(s, path);
	if (vfab_netns_path(path, sizeof(path), fabric, node) == 0)
		vfab_ns_set_add(s, path);
}

bool vfab_ns_set_has(const struct vfab_ns_set *s, pid_t pid)
{
	char path[64];
	struct stat st;

	if (vfab_pathf(path, sizeof(path), "/proc/%d/ns/net", (int)pid) || stat(path, &st))
		return false;
	for (int i = 0; i < s->n; i++)
		if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino)
			return true;
	return false;
}

int vfab_ns_set_each_pid(const struct vfab_ns_set *s, int (*fn)(pid_t pid, void *arg), void *arg)
{
	pid_t self = getpid();
	struct dirent *de;
	DIR *d = opendir("/proc");
	int rc = 0;

	if (!d)
		return -errno;
	while (!rc && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self || !vfab_ns_set_has(s, (pid_t)pid))
			continue;
		rc = fn((pid_t)pid, arg);
	}
	closedir(d);
	return rc;
}
