/* SPDX-License-Identifier: MIT */
/*
 * sshd in every node (`vfab up --ssh`): keys generated per fabric into the
 * run dir, one sshd per node started inside the node (so what it starts for
 * a login lives in the node's namespaces under the node's seccomp filter),
 * listening on port 22 of the node's eth0 addresses. `vfab down` needs nothing
 * of its own: the sshds are node processes.
 */
#ifndef VFAB_NETNS_NODE_SSHD_H
#define VFAB_NETNS_NODE_SSHD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/config.h"

#define VFAB_RUN_SSHD "/run/sshd" /* sshd's privilege separation directory */
#define VFAB_RUN_SSHD_MARKER "run-sshd-created"

/*
 * Fabric-wide: checks that sshd and ssh-keygen are installed, generates the
 * host key and the client key (<rundir>/ssh/), authorized_keys, the client
 * ssh_config, and makes sure /run/sshd exists. 0 or -errno with `err`.
 */
int vfab_ssh_prepare(const char *rundir, const struct vfab_config *cfg, char *err, size_t errlen);

/*
 * Start the sshd of node `node` (config index) inside the node, once its
 * network is up, and wait until it listens (its pid file appears). 0 or
 * -errno with `err` (the tail of the sshd's log when it gave up).
 */
int vfab_ssh_node_start(const char *rundir, const struct vfab_config *cfg, uint32_t node, char *err,
			size_t errlen);

/* Was the fabric brought up with sshd in its nodes? */
int vfab_ssh_enabled(const char *rundir);

/* Pid of the node's sshd when it is alive, else 0. */
pid_t vfab_sshd_pid(const char *rundir, const char *node);

#endif /* VFAB_NETNS_NODE_SSHD_H */
