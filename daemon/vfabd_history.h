/* SPDX-License-Identifier: MIT */
/*
 * The links' counters over time: a sample per second of every link's
 * bytes, msgs, queue_ns and drops, the last 15 minutes of them, and the
 * HISTORY request that returns them (docs/REPORT_SCHEMA.md).
 */
#ifndef VFAB_DAEMON_VFABD_HISTORY_H
#define VFAB_DAEMON_VFABD_HISTORY_H

#include <stdint.h>

#define VFABD_HISTORY_INTERVAL_MS 1000
#define VFABD_HISTORY_SAMPLES 900 /* 15 minutes */

struct vfabd;
struct vfabd_conn;
struct vjson_buf;
/* One link's counters at one sample; see vfabd_history.c. */
struct vfabd_history_point;

/*
 * The ring, allocated once for the fabric's links (zero-initialised: no
 * ring, HISTORY answers with no samples).
 */
struct vfabd_history {
	struct vfabd_history_point *points; /* cap rows of nlinks points, by sample */
	uint64_t *unix_ms;		    /* cap sample times */
	uint32_t nlinks;		    /* vfabd's own topology's link count */
	uint32_t cap;			    /* VFABD_HISTORY_SAMPLES */
	uint32_t head;			    /* the row the next sample goes to */
	uint32_t count;			    /* samples kept, at most cap */
	uint64_t next_due_ms;		    /* CLOCK_MONOTONIC ms of the next sample; 0: now */
};

/* Allocates the ring for d->t's links. 0 or -ENOMEM. */
int vfabd_history_init(struct vfabd *d);
void vfabd_history_free(struct vfabd *d);
/* From the loop's tick: takes a sample when one is due (every VFABD_HISTORY_INTERVAL_MS). */
void vfabd_history_tick(struct vfabd *d);
/* Takes one sample of every link now, stamped unix_ms; the oldest goes when the ring is full. */
void vfabd_history_sample(struct vfabd *d, uint64_t unix_ms);
/* The HISTORY document (docs/REPORT_SCHEMA.md) into b. */
void vfabd_history_json(const struct vfabd *d, struct vjson_buf *b);
void vfabd_req_history(struct vfabd *d, struct vfabd_conn *c);

#endif /* VFAB_DAEMON_VFABD_HISTORY_H */
