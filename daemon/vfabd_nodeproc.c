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

#include "base/beneath.h"
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

static bool is_infrastructure(pid_t pid, pid_t holder)
{
	char comm[32];

	if (pid == holder)
		return true;
	return vfab_pid_comm(pid, comm, sizeof(comm)) == 0 && strcmp(comm, "sshd") == 0;
}

struct collect {
	pid_t holder;
	struct vfabd_proc *v;
	size_t n, cap;
};

/* Keeps pid when it is workload (not the holder or sshd) and alive. */
static int collect_one(pid_t pid, void *arg)
{
	struct collect *c = arg;
	unsigned long long start;
	char state;

	if (is_infrastructure(pid, c->holder) || vfab_proc_stat(pid, &state, &start) ||
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

/*
 * The node's holder, from its pid file below the run dir (written by `vfab
 * up` as root), never from the region: a pid another user wrote there
 * would make FAULT signal the processes of any namespace. 0 when unknown.
 */
static pid_t holder_of(const struct vfabd *d, const char *id)
{
	char rel[VFAB_PATH_REL_MAX], text[32];
	pid_t pid = 0;

	if (vfab_holder_pid_rel(rel, sizeof(rel), id) == 0 &&
	    vfab_read_beneath(d->rundir_fd, rel, text, sizeof(text)) > 0 &&
	    vfab_parse_pid_file(text, &pid) == 0)
		return pid;
	return 0;
}

int vfabd_node_procs(const struct vfabd *d, uint32_t node, struct vfabd_proc **out)
{
	const struct vfab_node *nd = &d->t->nodes[node];
	struct collect c = {.holder = holder_of(d, nd->id)};
	struct vfab_ns_set ns = {0};
	int rc;

	vfab_ns_set_add_node(&ns, d->fabric, nd->id, c.holder);
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
