/* SPDX-License-Identifier: MIT */
/*
 * The fault log: every fault, link and shape change, in memory for the
 * report (and echoed to vfabd.log). Bounded: past VFABD_FAULTLOG_MAX entries
 * new ones are only counted, so a script that flaps a link forever cannot
 * grow the daemon without limit.
 */

#include "vfabd_faultlog.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vfabd_log.h"

void vfabd_event_add(struct vfabd_faultlog *log, const char *kind, const char *target,
		     const char *params, const char *detail)
{
	struct vfabd_event *e;
	struct timespec ts;

	vfabd_log("%s %s %s%s%s", kind, target, params, *detail ? ": " : "", detail);
	if (log->nevents == VFABD_FAULTLOG_MAX) {
		log->dropped++;
		return;
	}
	if (log->nevents == log->cap) {
		size_t cap = log->cap ? 2 * log->cap : 64;
		struct vfabd_event *ne = realloc(log->events, cap * sizeof(*ne));

		if (!ne) {
			log->dropped++;
			return;
		}
		log->events = ne;
		log->cap = cap;
	}
	e = &log->events[log->nevents++];
	clock_gettime(CLOCK_REALTIME, &ts);
	e->unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	snprintf(e->target, sizeof(e->target), "%s", target);
	snprintf(e->params, sizeof(e->params), "%s", params);
	snprintf(e->detail, sizeof(e->detail), "%s", detail);
}

void vfabd_faultlog_free(struct vfabd_faultlog *log)
{
	free(log->events);
	*log = (struct vfabd_faultlog){0};
}
