/* SPDX-License-Identifier: MIT */
/*
 * The listener directory: which process's CM QP answers for a service
 * (port space, IP address, port) of a node. It plays the part of the
 * well-known QP1 of a real HCA, which vfab's per-process CM agents cannot
 * share: a REQ goes to the CM QP the directory names, through the fabric.
 * Entries live under <rundir>/cm, one file each: "<cm_qpn> <pid>".
 */
#ifndef VFAB_CM_DIR_H
#define VFAB_CM_DIR_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/* The run dir of the fabric of an HCA (its sysfs device/vfab locator). */
int vfab_cm_dir_rundir(const char *ibdev, char *buf, size_t len);

/* Publish; -EADDRINUSE when a live process has the service. */
int vfab_cm_dir_publish(const char *rundir, uint16_t ps, const struct sockaddr *addr, uint16_t port,
			uint32_t cm_qpn, pid_t pid);

/* Look up; -ENOENT when nobody (alive) listens. */
int vfab_cm_dir_lookup(const char *rundir, uint16_t ps, const struct sockaddr *addr, uint16_t port,
		       uint32_t *cm_qpn, pid_t *pid);

/* Remove an entry this process published. */
void vfab_cm_dir_remove(const char *rundir, uint16_t ps, const struct sockaddr *addr,
			uint16_t port);

#endif /* VFAB_CM_DIR_H */
