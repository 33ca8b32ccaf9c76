/* SPDX-License-Identifier: MIT */
/*
 * The links' counters over time, for a report that draws throughput and
 * queueing: once per VFABD_HISTORY_INTERVAL_MS the loop's tick (no timer of
 * its own, so vfabd wakes no more often than it did) copies every link's
 * cumulative bytes, msgs, queue_ns and drops from the region into a ring
 * of the last VFABD_HISTORY_SAMPLES samples, stamped with the wall clock.
 *
 * The ring is allocated once, at start, for the links of vfabd's own
 * topology (d->t), never for VFAB_MAX_LINKS and never again afterwards:
 * VFABD_HISTORY_SAMPLES * (nlinks * 32 + 8) bytes, about 180 KiB for the
 * default 2-node fabric. Which links exist, their indices and names come
 * from d->t; the counters come from the region, which any local user can
 * write: they are only copied and printed, never used as an index or size.
 * They are read as REPORT reads them, each number whole and without locks.
 *
 * HISTORY (docs/REPORT_SCHEMA.md) prints the ring oldest first, one array
 * per line.
 */
#include "vfabd_history.h"

#include "daemon/vfabd_json.h"
#include "fabric/region.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_server.h"

#define HISTORY_SCHEMA "vfab-history/1"
#define LOAD(field) __atomic_load_n(&(field), __ATOMIC_RELAXED)
/*
 * A larger document is refused (EFBIG) rather than queued: vfabd_conn.c
 * shuts a connection whose pending reply passes 64 MiB. Only a fabric near
 * VFAB_MAX_LINKS whose counters have 15 or more digits comes near it.
 */
#define HISTORY_BODY_MAX (60u << 20)

/* The sample grid is a whole number of ticks: a sample every 4th tick. */
_Static_assert(VFABD_HISTORY_INTERVAL_MS % VFABD_TICK_MS == 0,
	       "the history interval must be a multiple of the loop's tick");

struct vfabd_history_point {
	uint64_t bytes, msgs, queue_ns, drops;
};

enum { F_BYTES, F_MSGS, F_QUEUE_NS, F_DROPS, NFIELDS };

static const char *const field_names[NFIELDS] = {"bytes", "msgs", "queue_ns", "drops"};

static uint64_t field(const struct vfabd_history_point *p, int f)
{
	switch (f) {
	case F_BYTES:
		return p->bytes;
	case F_MSGS:
		return p->msgs;
	case F_QUEUE_NS:
		return p->queue_ns;
	default:
		return p->drops;
	}
}

static uint64_t clock_ms(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int vfabd_history_init(struct vfabd *d)
{
	struct vfabd_history *h = &d->hist;
	uint32_t n = d->t->nlinks < VFAB_MAX_LINKS ? d->t->nlinks : VFAB_MAX_LINKS;

	*h = (struct vfabd_history){0};
	h->points = calloc((size_t)VFABD_HISTORY_SAMPLES * (n ? n : 1), sizeof(*h->points));
	h->unix_ms = calloc(VFABD_HISTORY_SAMPLES, sizeof(*h->unix_ms));
	if (!h->points || !h->unix_ms) {
		vfabd_history_free(d);
		return -ENOMEM;
	}
	h->nlinks = n;
	h->cap = VFABD_HISTORY_SAMPLES;
	return 0;
}

void vfabd_history_free(struct vfabd *d)
{
	free(d->hist.points);
	free(d->hist.unix_ms);
	d->hist = (struct vfabd_history){0};
}

void vfabd_history_sample(struct vfabd *d, uint64_t unix_ms)
{
	struct vfabd_history *h = &d->hist;
	struct vfabd_history_point *row;

	if (!h->cap)
		return;
	row = &h->points[(size_t)h->head * h->nlinks];
	for (uint32_t i = 0; i < h->nlinks; i++) {
		struct vfab_link_clock l;

		if (!d->t->links[i].in_use) {
			row[i] = (struct vfabd_history_point){0};
			continue;
		}
		vfab_link_stats_sum(d->r, i, &l); /* every user's */
		row[i] = (struct vfabd_history_point){
		    .bytes = l.bytes,
		    .msgs = l.msgs,
		    .queue_ns = l.queue_ns,
		    .drops = l.drops,
		};
	}
	h->unix_ms[h->head] = unix_ms;
	h->head = h->head + 1 == h->cap ? 0 : h->head + 1;
	if (h->count < h->cap)
		h->count++;
}

void vfabd_history_tick(struct vfabd *d)
{
	struct vfabd_history *h = &d->hist;
	uint64_t now;

	if (!h->cap)
		return;
	now = clock_ms(CLOCK_MONOTONIC);
	/*
	 * The tick nearest each point of the grid takes the sample (half a
	 * tick early is due: the timer and this clock jitter by microseconds).
	 * The grid moves on by one interval, so samples do not drift; after a
	 * stall of the loop it restarts from now rather than bunching samples.
	 */
	if (h->next_due_ms && now + VFABD_TICK_MS / 2 < h->next_due_ms)
		return;
	if (h->next_due_ms && now < h->next_due_ms + VFABD_HISTORY_INTERVAL_MS / 2)
		h->next_due_ms += VFABD_HISTORY_INTERVAL_MS;
	else
		h->next_due_ms = now + VFABD_HISTORY_INTERVAL_MS;
	vfabd_history_sample(d, clock_ms(CLOCK_REALTIME));
}

/* An unsigned decimal without printf: a document holds up to 4 * 900 of them per link. */
static void put_u64(struct vjson_buf *b, uint64_t v, bool comma)
{
	char tmp[24];
	size_t i = sizeof(tmp);

	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	if (comma)
		tmp[--i] = ',';
	vjson_raw(b, tmp + i, sizeof(tmp) - i);
}

/* The ring's row of its k-th sample, oldest first. */
static uint32_t row_of(const struct vfabd_history *h, uint32_t k)
{
	uint32_t first = (h->head + h->cap - h->count) % h->cap;

	return (first + k) % h->cap;
}

static void link_series(struct vjson_buf *b, const struct vfabd_history *h, uint32_t link)
{
	for (int f = 0; f < NFIELDS; f++) {
		vjson_printf(b, ",\n\"%s\":[", field_names[f]);
		for (uint32_t k = 0; k < h->count; k++)
			put_u64(b, field(&h->points[(size_t)row_of(h, k) * h->nlinks + link], f),
				k > 0);
		vjson_text(b, "]");
	}
}

void vfabd_history_json(const struct vfabd *d, struct vjson_buf *b)
{
	const struct vfabd_history *h = &d->hist;
	uint32_t nlinks = d->t->nlinks < VFAB_MAX_LINKS ? d->t->nlinks : VFAB_MAX_LINKS;
	bool first = true;

	vjson_printf(b,
		     "{\"schema\":\"" HISTORY_SCHEMA "\",\n\"interval_ms\":%d,\n\"samples\":%u,"
		     "\n\"unix_ms\":[",
		     VFABD_HISTORY_INTERVAL_MS, h->count);
	for (uint32_t k = 0; k < h->count; k++)
		put_u64(b, h->unix_ms[row_of(h, k)], k > 0);
	vjson_text(b, "],\n\"links\":[");
	/* The links REPORT lists, by the same index and under the same name (vfabd's own). */
	for (uint32_t i = 0; i < nlinks; i++) {
		const struct vfab_link *own = &d->t->links[i];

		if (!own->in_use)
			continue;
		vjson_printf(b, "%s\n{\"index\":%u,\"name\":", first ? "" : ",", i);
		vjson_str(b, own->name);
		vjson_printf(b, ",\"rate_bps\":%llu",
			     (unsigned long long)LOAD(d->r->links[i].rate_bps));
		/* No ring (its allocation failed): no samples, empty arrays. */
		if (i < h->nlinks)
			link_series(b, h, i);
		else
			for (int f = 0; f < NFIELDS; f++)
				vjson_printf(b, ",\n\"%s\":[]", field_names[f]);
		vjson_text(b, "}");
		first = false;
	}
	vjson_text(b, "\n]\n}\n");
}

void vfabd_req_history(struct vfabd *d, struct vfabd_conn *c)
{
	struct vjson_buf b = {0};

	vfabd_history_json(d, &b);
	if (b.oom) {
		free(b.p);
		vfabd_reply_err(c, -ENOMEM, "no memory for the history");
		return;
	}
	if (b.len > HISTORY_BODY_MAX) {
		vfabd_reply_err(c, -EFBIG, "the history is %zu bytes, more than a reply may hold",
				b.len);
		free(b.p);
		return;
	}
	vfabd_reply_body(c, b.p, b.len);
}
