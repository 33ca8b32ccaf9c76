/* SPDX-License-Identifier: MIT */
/*
 * The processes of a node, for FAULT kill and pause: every process whose
 * network namespace is the node's (/proc/PID/ns/net against the published
 * /run/netns/vfab-<fabric>-<node> and the holder's own). The holder keeps the
 * namespaces alive and sshd is how people get in: both are the node's
 * infrastructure, not its workload, and are left alone.
 */

#include "vfabd_nodeproc.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vfabd.h"

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "netns/node_procs.h"

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

struct collect {
	pid_t holders[2];
	struct vfabd_proc *v;
	size_t n, cap;
};

/* Keeps pid when it is workload (not the holder or sshd) and alive. */
static int collect_one(pid_t pid, void *arg)
{
	struct collect *c = arg;
	unsigned long long start;
	char state;

	if (is_infrastructure(pid, c->holders, 2) || vfab_proc_stat(pid, &state, &start) ||
	    state == 'Z' || state == 'X')
		return 0;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 32;
		struct vfabd_proc *nv = realloc(c->v, cap * sizeof(*nv));

		if (!nv)
			return -ENOMEM;
		c->v = nv;
		c->cap = cap;
	}
	c->v[c->n++] = (struct vfabd_proc){pid, start};
	return 0;
}

int vfabd_node_procs(const struct vfabd *d, uint32_t node, struct vfabd_proc **out)
{
	const struct vfab_node *nd = &d->r->nodes[node];
	struct collect c = {.holders = {atomic_load(&nd->holder_pid), 0}};
	struct vfab_ns_set ns = {0};
	char path[PATH_MAX];
	int rc;

	vfab_ns_set_add_node(&ns, d->r->fabric, nd->id, c.holders[0]);
	if (vfab_holder_pid_path(path, sizeof(path), d->r->rundir, nd->id) == 0)
		vfab_read_pid_file(path, &c.holders[1]);
	if (!ns.n)
		return -ESRCH;
	rc = vfab_ns_set_each_pid(&ns, collect_one, &c);
	if (rc) {
		free(c.v);
		return rc;
	}
	*out = c.v;
	return (int)c.n;
}
