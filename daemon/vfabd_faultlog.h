/* SPDX-License-Identifier: MIT */
/* The fault log: every fault, link and shape change, for the REPORT. */
#ifndef VFAB_DAEMON_VFABD_FAULTLOG_H
#define VFAB_DAEMON_VFABD_FAULTLOG_H

#include <stddef.h>
#include <stdint.h>

#define VFABD_FAULTLOG_MAX 4096

/* One entry of the fault log. */
struct vfabd_event {
	uint64_t unix_ms;
	char kind[16];	  /* link, shape, kill, pause, resume, spike, spike_end */
	char target[128]; /* node, node/hca[/port] or link name */
	char params[128]; /* the request's parameters, e.g. "down", "bw=25 lat=2" */
	char detail[128]; /* what it did, e.g. "2 context(s) notified" */
};

/* The log, oldest first (zero-initialised: empty). */
struct vfabd_faultlog {
	struct vfabd_event *events;
	size_t nevents, cap;
	uint64_t dropped; /* entries past VFABD_FAULTLOG_MAX, only counted */
};

void vfabd_event_add(struct vfabd_faultlog *log, const char *kind, const char *target,
		     const char *params, const char *detail);
void vfabd_faultlog_free(struct vfabd_faultlog *log);

#endif /* VFAB_DAEMON_VFABD_FAULTLOG_H */
