/* SPDX-License-Identifier: MIT */
/*
 * The processes of a node, for FAULT kill and pause: every process whose
 * network namespace is the node's (/proc/PID/ns/net against the published
 * /run/netns/vfab-<fabric>-<node> and the holder's own). The holder keeps the
 * namespaces alive and sshd is how people get in: both are the node's
 * infrastructure, not its workload, and are left alone.
 */
#include "vfabd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"

struct ns_set {
	int n;
	dev_t dev[2];
	ino_t ino[2];
};

static void ns_add(struct ns_set *s, const char *path)
{
	struct stat st;

	if (stat(path, &st))
		return;
	for (int i = 0; i < s->n; i++)
		if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino)
			return;
	s->dev[s->n] = st.st_dev;
	s->ino[s->n++] = st.st_ino;
}

static bool ns_has(const struct ns_set *s, pid_t pid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	if (stat(path, &st))
		return false;
	for (int i = 0; i < s->n; i++)
		if (s->dev[i] == st.st_dev && s->ino[i] == st.st_ino)
			return true;
	return false;
}

bool vfabd_proc_same(const struct vfabd_proc *p)
{
	unsigned long long start;
	char state;

	return vfab_proc_stat(p->pid, &state, &start) == 0 && start == p->start && state != 'Z' &&
	       state != 'X';
}

static bool is_infrastructure(pid_t pid, const pid_t *holders, int nholders)
{
	char comm[32];

	for (int i = 0; i < nholders; i++)
		if (pid == holders[i])
			return true;
	return vfab_pid_comm(pid, comm, sizeof(comm)) == 0 && strcmp(comm, "sshd") == 0;
}

static int push(struct vfabd_proc **v, size_t *n, size_t *cap, pid_t pid, unsigned long long st)
{
	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 32;
		struct vfabd_proc *nv = realloc(*v, c * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = c;
	}
	(*v)[(*n)++] = (struct vfabd_proc){pid, st};
	return 0;
}

int vfabd_node_procs(const struct vfabd *d, uint32_t node, struct vfabd_proc **out)
{
	const struct vfab_node *nd = &d->r->nodes[node];
	struct vfabd_proc *v = NULL;
	size_t n = 0, cap = 0;
	struct ns_set ns = {0};
	pid_t holders[2] = {atomic_load(&nd->holder_pid), 0}, self = getpid();
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int rc = 0;

	if (vfab_netns_path(path, sizeof(path), d->r->fabric, nd->id) == 0)
		ns_add(&ns, path);
	if (holders[0] > 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)holders[0]);
		ns_add(&ns, path);
	}
	if (vfab_holder_pid_path(path, sizeof(path), d->r->rundir, nd->id) == 0)
		vfab_read_pid_file(path, &holders[1]);
	if (!ns.n)
		return -ESRCH;
	dir = opendir("/proc");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		unsigned long long start;
		char *end, state;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0 || pid == self || !ns_has(&ns, (pid_t)pid))
			continue;
		if (is_infrastructure((pid_t)pid, holders, 2) ||
		    vfab_proc_stat((pid_t)pid, &state, &start) || state == 'Z' || state == 'X')
			continue;
		rc = push(&v, &n, &cap, (pid_t)pid, start);
		if (rc)
			break;
	}
	closedir(dir);
	if (rc) {
		free(v);
		return rc;
	}
	*out = v;
	return (int)n;
}
