/* SPDX-License-Identifier: MIT */
/* FAULT kill|pause|resume|spike, and their timers. */
#ifndef VFAB_DAEMON_VFABD_FAULTS_H
#define VFAB_DAEMON_VFABD_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fabric/region.h"
#include "vfabd_nodeproc.h"

struct vfabd;
struct vfabd_conn;

/* A paused node: the processes it stopped, resumed at `until_ms` (0: on request). */
struct vfabd_pause {
	bool active;
	uint64_t until_ms; /* CLOCK_MONOTONIC */
	struct vfabd_proc *procs;
	size_t nprocs;
};

/* A latency spike: `add_ns` on each of its links until `until_ms`. */
struct vfabd_spike {
	uint64_t until_ms; /* CLOCK_MONOTONIC */
	uint32_t add_ns;
	uint32_t nlinks;
	uint32_t links[2 * VFAB_MAX_PORTS];
	char target[128];
};

struct vfabd_faults {
	struct vfabd_pause pauses[VFAB_MAX_NODES];
	struct vfabd_spike *spikes;
	size_t nspikes;
	uint32_t spike_add_ns[VFAB_MAX_LINKS]; /* active spikes' share of latency_ns */
};

void vfabd_req_fault(struct vfabd *d, struct vfabd_conn *c, char *args);
/* Ends pauses and spikes whose time came; returns ms until the next one (-1: none). */
int vfabd_faults_due(struct vfabd *d);
/* Resumes every paused node and ends every spike, then frees what they held. */
void vfabd_faults_release(struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_FAULTS_H */
