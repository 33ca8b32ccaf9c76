/* SPDX-License-Identifier: MIT */
/*
 * The listener directory: which process's CM QP answers for a service
 * (port space, IP address, port) of a node. It plays the part of the
 * well-known QP1 of a real HCA, which vfab's per-process CM agents cannot
 * share: a REQ goes to the CM QP the directory names, through the fabric.
 *
 * Entries live in <rundir>/cm (made by `vfab up`, mode 01777: every user
 * may listen, nobody may remove or replace another user's entries), one
 * file each, "<cm_qpn> <pid> <start>", written by the listening process.
 * Nothing read from an entry is trusted until checked against what the
 * kernel says of the process it names (docs/TRUST.md "RDMA CM").
 */
#ifndef VFAB_CM_DIR_H
#define VFAB_CM_DIR_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "base/locator.h"

/* What an entry says: the CM QP that answers and the process that owns it. */
struct vfab_cm_entry {
	uint32_t cm_qpn;
	pid_t pid;
	unsigned long long start; /* its start time (/proc/PID/stat field 22) */
};

/* An HCA's sysfs device/vfab locator (base/locator.h), and the run dir it names. */
int vfab_cm_dir_locator(const char *ibdev, struct vfab_locator *loc);
int vfab_cm_dir_rundir(const char *ibdev, char *buf, size_t len);

/* The entry's file name for a service: "<ps>-<ip>-<port>" (port space in hex). */
int vfab_cm_dir_name(char *buf, size_t len, uint16_t ps, const struct sockaddr *addr,
		     uint16_t port);

/* Whether name could be an entry's name (no path, no hidden file). */
int vfab_cm_dir_name_ok(const char *name);

/*
 * Read and check dir/name: 0 and *e when it names a live process that
 * could have written it; -ENOENT when there is none; -ESTALE when that
 * process is gone or the file is not what a listener writes (a link, not a
 * regular file, another user's claim on a process, a privileged port
 * without CAP_NET_BIND_SERVICE).
 */
int vfab_cm_dir_check(const char *dir, const char *name, struct vfab_cm_entry *e);

/* Write e into a new file of dir, to be linked under each name: its path into tmp. */
int vfab_cm_dir_prepare(const char *dir, const struct vfab_cm_entry *e, char *tmp, size_t len);

/*
 * Make dir/name the prepared entry tmp (atomically: a name is taken or it
 * is not). 0; -EADDRINUSE when a live listener holds it; -EPERM when a gone
 * listener of another user does (the sticky directory lets only its owner
 * and root remove it: vfabd's CMFREE does).
 */
int vfab_cm_dir_publish(const char *dir, const char *tmp, const char *name,
			const struct vfab_cm_entry *e);

/* Remove dir/name if it is e's: a listener removes only its own entries. */
void vfab_cm_dir_remove(const char *dir, const char *name, const struct vfab_cm_entry *e);

/* Remove dir/name if it names no live listener: 0, -EADDRINUSE when it does. */
int vfab_cm_dir_free_stale(const char *dir, const char *name);

#endif /* VFAB_CM_DIR_H */
