/* SPDX-License-Identifier: MIT */
/*
 * The CM agent of a process: what the kernel's rdma_cm and ib_cm run on.
 * It owns the lock every ucma object is kept under, the process's HCA
 * contexts and CM ports (cm_port.h), and one thread that receives CM
 * messages, watches the contexts' async events (GID and port changes) and
 * runs the timers. What a message or a timer means is the business of the
 * layers above, which hand their functions in at the start.
 */
#ifndef VFAB_CM_AGENT_H
#define VFAB_CM_AGENT_H

#include <infiniband/verbs.h>
#include <stdint.h>
#include <sys/types.h>

#include "cm/cm_port.h"
#include "cm/cm_wire.h"

/* What the agent thread calls, with the lock held. */
struct vfab_cm_hooks {
	/* A message arrived on port p. */
	void (*recv)(struct vfab_cm_port *p, const struct vfab_cm_msg *m);
	/* Run what is due at now; returns when something is due next (0: nothing). */
	uint64_t (*timers)(uint64_t now);
	/* The node's HCA addresses changed (the address cache is already reset). */
	void (*addrs_changed)(void);
};

/* Start the agent once per process (contexts, thread); 0 or -errno. */
int vfab_cm_agent_start(const struct vfab_cm_hooks *h);
void vfab_cm_lock(void);
void vfab_cm_unlock(void);

/* Port port_num of context dev, its CM QP opened on first use; NULL when it cannot be. */
struct vfab_cm_port *vfab_cm_agent_port(int dev, uint8_t port_num);

/* The open contexts (for the loopback binding's port choice). */
struct ibv_context *const *vfab_cm_agent_ctxs(int *n);

/* The node GUID (network order) of context dev. */
uint64_t vfab_cm_agent_guid(int dev);

/* The fabric's listener directory, <rundir>/cm, and the run dir. */
const char *vfab_cm_agent_dir(void);
const char *vfab_cm_agent_rundir(void);

/* This process as its peers know it: the pid they see and its start time. */
pid_t vfab_cm_agent_pid(void);
unsigned long long vfab_cm_agent_start_time(void);

/* Something is due at ns: the timers run then (at the latest), from any thread. */
void vfab_cm_agent_arm(uint64_t ns);

#endif /* VFAB_CM_AGENT_H */
