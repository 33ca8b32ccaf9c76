/* SPDX-License-Identifier: MIT */
/*
 * The daemon as a whole: one struct vfabd holding each module's own state
 * (declared in the module's header). vfabd.c creates it, vfabd_server.c
 * loops over it; every module works on its part and calls only modules
 * below it (docs/DESIGN.md "vfabd").
 */
#ifndef VFAB_DAEMON_VFABD_H
#define VFAB_DAEMON_VFABD_H

#include "fabric/region.h"
#include "vfabd_counters.h"
#include "vfabd_faultlog.h"
#include "vfabd_faults.h"
#include "vfabd_link.h"
#include "vfabd_server.h"

struct vfabd {
	struct vfab_region *r;
	const char *fabric;
	const char *rundir; /* vfabd's own, never the region's copy (any user can write that) */
	struct vfabd_server srv;	/* vfabd_server.c: fds, connections */
	struct vfabd_faultlog log;	/* vfabd_faultlog.c */
	struct vfabd_faults faults;	/* vfabd_faults.c: pauses, spikes */
	struct vfabd_link link;		/* vfabd_link.c: link_downed counts */
	struct vfabd_counters counters; /* vfabd_counters.c: last values written */
	struct vfabd_addrwatch *aw;	/* vfabd_addrwatch.c; NULL: not followed */
};

#endif /* VFAB_DAEMON_VFABD_H */
