/* SPDX-License-Identifier: MIT */
/*
 * The fault log: every fault, link and shape change, in memory for the
 * report (and echoed to vfabd.log). Bounded: past VFABD_FAULTLOG_MAX entries
 * new ones are only counted, so a script that flaps a link forever cannot
 * grow the daemon without limit.
 */
#include "vfabd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void vfabd_event_add(struct vfabd *d, const char *kind, const char *target, const char *params,
		     const char *detail)
{
	struct vfabd_event *e;
	struct timespec ts;

	vfabd_log("%s %s %s%s%s", kind, target, params, *detail ? ": " : "", detail);
	if (d->nevents == VFABD_FAULTLOG_MAX) {
		d->events_dropped++;
		return;
	}
	if (d->nevents == d->events_cap) {
		size_t cap = d->events_cap ? 2 * d->events_cap : 64;
		struct vfabd_event *ne = realloc(d->events, cap * sizeof(*ne));

		if (!ne) {
			d->events_dropped++;
			return;
		}
		d->events = ne;
		d->events_cap = cap;
	}
	e = &d->events[d->nevents++];
	clock_gettime(CLOCK_REALTIME, &ts);
	e->unix_ms = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	snprintf(e->kind, sizeof(e->kind), "%s", kind);
	snprintf(e->target, sizeof(e->target), "%s", target);
	snprintf(e->params, sizeof(e->params), "%s", params);
	snprintf(e->detail, sizeof(e->detail), "%s", detail);
}
