/* SPDX-License-Identifier: MIT */
/*
 * Starting programs inside a running node from the host side: a forked child
 * joins the node (node_enter.h) and execs. Used for the node's own services
 * (ldconfig, sshd) and by `vfab run`.
 */
#ifndef VFAB_NETNS_NODE_SPAWN_H
#define VFAB_NETNS_NODE_SPAWN_H

#include <sys/types.h>

struct vfab_spawn_opts {
	int out_fd;	      /* stdout and stderr of the program; -1: /dev/null */
	int new_pgrp;	      /* own process group (led by the child) */
	char *const *env_add; /* "NAME=value" entries set on top of ours; NULL-terminated */
	int death_signal;     /* sent to the program when the caller dies; 0: none */
};

/*
 * Fork, join node `node` of the fabric at `rundir`, exec argv[0] (searched in
 * the node's PATH unless it contains a '/'). stdin is /dev/null, the signal
 * mask and dispositions start clean, no other descriptor is inherited.
 * Returns 0 with *pid once the exec succeeded (the child is the caller's to
 * reap), or -errno with *failed (when not NULL) naming the step: "enter the
 * node" (-ENOENT/-ESRCH: the node or its holder is missing) or "exec"; the
 * child is then already reaped.
 */
int vfab_node_spawn(const char *rundir, const char *node, char *const argv[],
		    const struct vfab_spawn_opts *opts, pid_t *pid, const char **failed);

/*
 * vfab_node_spawn and wait: *wstatus gets the waitpid status. Returns 0 or
 * -errno as vfab_node_spawn.
 */
int vfab_node_run(const char *rundir, const char *node, char *const argv[], int out_fd,
		  int *wstatus, const char **failed);

#endif /* VFAB_NETNS_NODE_SPAWN_H */
