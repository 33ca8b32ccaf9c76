/* SPDX-License-Identifier: MIT */
/* The workload processes of a node (its network namespace), for FAULT kill and pause. */
#ifndef VFAB_DAEMON_VFABD_NODEPROC_H
#define VFAB_DAEMON_VFABD_NODEPROC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct vfabd;

struct vfabd_proc {
	pid_t pid;
	unsigned long long start; /* /proc/PID/stat starttime: guards against pid reuse */
};

/*
 * The node's processes except its holder and sshd, into *out (malloc'd).
 * Count or -errno (-ESRCH: the node has no namespace, e.g. not built).
 */
int vfabd_node_procs(const struct vfabd *d, uint32_t node, struct vfabd_proc **out);
/* Is pid still the process recorded (same start time)? */
bool vfabd_proc_same(const struct vfabd_proc *p);

#endif /* VFAB_DAEMON_VFABD_NODEPROC_H */
