/* SPDX-License-Identifier: MIT */
/*
 * Which processes belong to a node: those whose network namespace is the
 * node's, known by its published file (/run/netns/vfab-<fabric>-<node>) and by
 * its holder's /proc/PID/ns/net (a node whose publication never happened).
 * The teardown signals every process of a fabric's nodes with it, vfabd's
 * FAULT kill and pause the processes of one node.
 */
#ifndef VFAB_NETNS_NODE_PROCS_H
#define VFAB_NETNS_NODE_PROCS_H

#include <stdbool.h>
#include <sys/types.h>

#include "fabric/region.h"

#define VFAB_NS_SET_MAX (2 * (VFAB_MAX_NODES + 8)) /* a file and a holder per node */

/* A set of network namespaces, by device and inode of their namespace file. */
struct vfab_ns_set {
	int n;
	dev_t dev[VFAB_NS_SET_MAX];
	ino_t ino[VFAB_NS_SET_MAX];
};

/* Adds the namespace of nsfile; a missing file, a duplicate or a full set is ignored. */
void vfab_ns_set_add(struct vfab_ns_set *s, const char *nsfile);

/* Adds a node's namespaces: its published file and (holder > 0) its holder's. */
void vfab_ns_set_add_node(struct vfab_ns_set *s, const char *fabric, const char *node,
			  pid_t holder);

/* Is pid's network namespace one of the set? */
bool vfab_ns_set_has(const struct vfab_ns_set *s, pid_t pid);

/*
 * Calls fn for every process (but the caller) in one of the set's
 * namespaces, as /proc lists them; stops at fn's first nonzero return and
 * returns it. 0, or -errno when /proc cannot be read.
 */
int vfab_ns_set_each_pid(const struct vfab_ns_set *s, int (*fn)(pid_t pid, void *arg), void *arg);

#endif /* VFAB_NETNS_NODE_PROCS_H */
