/* SPDX-License-Identifier: MIT */
/*
 * The daemon as a whole: one struct vfabd holding each module's own state
 * (declared in the module's header). vfabd.c creates it, vfabd_server.c
 * loops over it; every module works on its part and calls only modules
 * below it (docs/DESIGN.md "vfabd").
 */
#ifndef VFAB_DAEMON_VFABD_H
#define VFAB_DAEMON_VFABD_H

#include "fabric/ktab.h"
#include "fabric/region.h"
#include "vfabd_counters.h"
#include "vfabd_delay.h"
#include "vfabd_countersfs.h"
#include "vfabd_faultlog.h"
#include "vfabd_faults.h"
#include "vfabd_history.h"
#include "vfabd_ipwire.h"
#include "vfabd_link.h"
#include "vfabd_server.h"

struct vfabd {
	/*
	 * The shared region: the state processes and vfabd share (port state,
	 * counters, GID tables, link parameters, object slots). Every local
	 * user can write it, so vfabd reads from it only values it stores,
	 * prints or compares: never a name, path, index or pid it acts on.
	 */
	struct vfab_region *r;
	/*
	 * vfabd's own topology, filled from the config it parsed
	 * (vfab_topology_private) and copied into r once: every name, path,
	 * table index and count vfabd acts on. Nobody else can write it.
	 */
	const struct vfab_region *t;
	/*
	 * The object table (fabric/ktab.h): who owns each object, MR bounds and
	 * rights, rings, FIFOs. vfabd alone writes it (SEAL, UNSEAL, reaping).
	 */
	struct vfab_ktab *k;
	int rundir_fd; /* O_PATH descriptor of the run dir: files below it via base/beneath.h */
	const char *fabric;
	const char *rundir; /* vfabd's own, never the region's copy (any user can write that) */
	struct vfabd_server srv;	    /* vfabd_server.c: fds, connections */
	struct vfabd_faultlog log;	    /* vfabd_faultlog.c */
	struct vfabd_faults faults;	    /* vfabd_faults.c: pauses, spikes */
	struct vfabd_link link;		    /* vfabd_link.c: link_downed counts */
	struct vfabd_counters counters;	    /* vfabd_counters.c: last values written */
	struct vfabd_countersfs countersfs; /* vfabd_countersfs.c: counters on every read */
	struct vfabd_history hist;	    /* vfabd_history.c: the links' counters over time */
	struct vfabd_addrwatch *aw;	    /* vfabd_addrwatch.c; NULL: not followed */
	struct vfabd_ipwire *ipw;	    /* vfabd_ipwire.c: the IP side of the wires */
	struct vfabd_wire *wire;	    /* vfabd_wire.c: the RoCE wire; NULL: not running */
	/*
	 * Multi-host: the other machines' leaf subnets and the latencies their
	 * senders' links have by the config (the delay line adds them).
	 */
	uint32_t nremote;
	struct vfabd_delay_prefix *remote;
	struct vfabd_delay_lat remote_lat;
};

#endif /* VFAB_DAEMON_VFABD_H */
