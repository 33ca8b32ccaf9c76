/* SPDX-License-Identifier: MIT */
/*
 * Reaching the registered owner of an object (docs/TRUST.md, "Copies reach
 * only the registered owner"): which proc names the fabric's processes, what
 * this process registers there, and handles on a peer that cannot name
 * anyone else.
 *
 * The fabric's pids are those of the nodes' PID namespace (the host's). A
 * process in a PID namespace of its own sees other numbers ("foreign" pids):
 * it finds the fabric's through the host's /proc that every node mounts at
 * vfab_host_proc_dir (its own /proc may be its namespace's), registers its
 * pid there, and copies only through that proc's /proc/<pid>/mem, because
 * pidfd_open and process_vm_writev take pid numbers of its own namespace.
 */
#ifndef VFAB_OWNER_H
#define VFAB_OWNER_H

#include <stdbool.h>

#include "fabric/region.h"

struct vfab_pidview {
	char proc[300]; /* the proc showing the fabric's pids: the host's view or /proc */
	bool foreign;	/* they are not this process's pids: copies go by memfd only */
};

/*
 * Picks the proc for the fabric of run dir rundir and fills self's pid and
 * start time as the fabric sees them (start 0 when unknown).
 */
void vfab_pidview_init(struct vfab_pidview *v, const char *rundir, struct vfab_owner *self);

/*
 * Handles on one owner: a pidfd (-1 for foreign pids) and its /proc/<pid>/mem
 * (-1 none). refused: the kernel refused that /proc/<pid>/mem (EACCES: the
 * ptrace rules, another user), so it refuses every copy into the owner too.
 */
struct vfab_owner_fds {
	int32_t pid;
	uint64_t start_ticks;
	int pidfd, memfd;
	bool refused;
};

void vfab_owner_fds_init(struct vfab_owner_fds *f);
void vfab_owner_fds_close(struct vfab_owner_fds *f);

/*
 * Opens handles on o into f (closing what f held), both before the start
 * time of the process now holding o's pid is compared with the registered
 * one: on a match they name the owner, on a mismatch the owner is gone and
 * its pid reused. 0, or -ESRCH (nobody answers there; f holds nothing).
 * Foreign pids need the memfd; otherwise the pidfd.
 */
int vfab_owner_open(const struct vfab_pidview *v, const struct vfab_owner *o,
		    struct vfab_owner_fds *f);

/* The same, keeping f when it already names o (same pid and start time). */
static inline int vfab_owner_get(const struct vfab_pidview *v, const struct vfab_owner *o,
				 struct vfab_owner_fds *f)
{
	if (f->pid == o->pid && f->start_ticks == o->start_ticks &&
	    (f->pidfd >= 0 || f->memfd >= 0))
		return 0;
	return vfab_owner_open(v, o, f);
}

/*
 * A new id, unique in this process and never 0: context ids and the FIFO
 * names <rundir>/fifo/<pid>.<id> of async events and completion channels
 * (the pid makes them the fabric's).
 */
uint32_t vfab_next_id(void);

/*
 * Says once per process that a copy into pid is not this user's to make
 * (the kernel refused it, or the peer's QP is in another user's shard).
 */
void vfab_owner_refused(int32_t pid);

#endif /* VFAB_OWNER_H */
