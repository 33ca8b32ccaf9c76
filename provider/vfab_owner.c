/* SPDX-License-Identifier: MIT */
/* Reaching the registered owner of an object (see vfab_owner.h). */
#include "provider/vfab_owner.h"
#include "base/paths.h"
#include "base/proc.h"
#include "provider/vfab_xfer.h"

#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

void vfab_pidview_init(struct vfab_pidview *v, const char *rundir, struct vfab_owner *self)
{
	unsigned long long start = 0;
	pid_t pid = -1;
	char state;

	/* The host's view when this process is in a node, else its own /proc. */
	if (!vfab_host_proc_dir(v->proc, sizeof(v->proc), rundir))
		pid = vfab_proc_outer_pid_in(v->proc);
	if (pid <= 0) {
		snprintf(v->proc, sizeof(v->proc), "/proc");
		pid = vfab_proc_outer_pid();
	}
	/*
	 * Peers address us by the pid they see: in a PID namespace of our own
	 * that is the outer one (NSpid's first entry), not getpid().
	 */
	self->pid = pid;
	v->foreign = pid != getpid();
	/* With the pid, names this process to peers across pid reuse (0: unknown). */
	if (vfab_proc_self_stat_in(v->proc, &state, &start))
		start = 0;
	self->start_ticks = start;
}

void vfab_owner_fds_init(struct vfab_owner_fds *f)
{
	f->pid = 0;
	f->start_ticks = 0;
	f->pidfd = -1;
	f->memfd = -1;
	f->refused = false;
}

void vfab_owner_fds_close(struct vfab_owner_fds *f)
{
	if (f->memfd >= 0)
		close(f->memfd);
	if (f->pidfd >= 0)
		close(f->pidfd);
	vfab_owner_fds_init(f);
}

/* /proc/<pid>/mem of the proc showing the fabric's pids, or -errno. */
static int open_mem(const struct vfab_pidview *v, int32_t pid)
{
	char path[320];
	int fd;

	if (!v->foreign)
		return vfab_xfer_open(pid); /* may be turned off (VFAB_XFER=pvm) */
	snprintf(path, sizeof(path), "%s/%d/mem", v->proc, (int)pid);
	fd = open(path, O_RDWR | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int vfab_owner_open(const struct vfab_pidview *v, const struct vfab_owner *o,
		    struct vfab_owner_fds *f)
{
	unsigned long long start;
	char state;
	int fd;

	vfab_owner_fds_close(f);
	if (!v->foreign) {
		fd = (int)syscall(SYS_pidfd_open, o->pid, 0);
		if (fd < 0)
			return -ESRCH;
		f->pidfd = fd;
	}
	fd = open_mem(v, o->pid);
	f->memfd = fd >= 0 ? fd : -1;
	f->refused = fd == -EACCES || fd == -EPERM;
	if ((v->foreign && f->memfd < 0) || vfab_proc_stat_in(v->proc, o->pid, &state, &start) ||
	    state == 'Z' || (o->start_ticks && start != o->start_ticks)) {
		vfab_owner_fds_close(f);
		return -ESRCH;
	}
	f->pid = o->pid;
	f->start_ticks = o->start_ticks;
	return 0;
}

uint32_t vfab_next_id(void)
{
	static _Atomic uint32_t next = 1;
	uint32_t id;

	do {
		id = atomic_fetch_add(&next, 1);
	} while (id == 0);
	return id;
}

void vfab_owner_refused(int32_t pid)
{
	static atomic_bool told;

	if (!atomic_exchange(&told, true))
		fprintf(stderr,
			"vfab: cannot copy into pid %d: permission denied. vfab moves bytes with "
			"process_vm_writev/readv, which needs ptrace rights over the peer: both "
			"processes must run as the same user (or this one as root). Such WRs get "
			"no answer (IBV_WC_RETRY_EXC_ERR); see docs/TRUST.md\n",
			(int)pid);
}
