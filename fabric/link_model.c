/* SPDX-License-Identifier: MIT */
/* Time through the fabric: paths, bookings, loss (see link_model.h). */
#include "fabric/link_model.h"
#include "base/clock.h"

#include <errno.h>
#include <time.h>

/*
 * Every index and count of the region is any local user's to write: each is
 * checked against the tables' sizes before it is followed (fuzz_region).
 */
static const struct vfab_hca *hca_at(const struct vfab_region *r, uint32_t hca, uint32_t port)
{
	if (hca >= r->nhcas || hca >= VFAB_MAX_HCAS || !r->hcas[hca].in_use || port < 1 ||
	    port > r->hcas[hca].nports || port > VFAB_MAX_PORTS)
		return NULL;
	return &r->hcas[hca];
}

static bool link_ok(const struct vfab_region *r, uint32_t idx)
{
	return idx < r->nlinks && idx < VFAB_MAX_LINKS && r->links[idx].in_use;
}

int fabric_path_resolve(const struct vfab_region *r, uint32_t src_hca, uint32_t src_port,
			uint32_t dst_hca, uint32_t dst_port, struct fabric_path *out)
{
	const struct vfab_hca *sh = hca_at(r, src_hca, src_port);
	const struct vfab_hca *dh = hca_at(r, dst_hca, dst_port);
	const struct vfab_port *sp, *dp;
	uint32_t n = 0;

	if (!sh || !dh || sh->node >= r->nnodes || sh->node >= VFAB_MAX_NODES)
		return -EINVAL;
	sp = &sh->ports[src_port - 1];
	dp = &dh->ports[dst_port - 1];
	if (sh->node == dh->node) {
		out->link[n++] = r->nodes[sh->node].loopback;
	} else if (sp->segment == dp->segment) {
		out->link[n++] = sp->link_up;
		out->link[n++] = dp->link_down;
	} else {
		if (!r->spine.present || sp->segment >= r->nleaves || dp->segment >= r->nleaves ||
		    sp->segment >= VFAB_MAX_LEAVES || dp->segment >= VFAB_MAX_LEAVES)
			return -EHOSTUNREACH;
		out->link[n++] = sp->link_up;
		out->link[n++] = r->leaves[sp->segment].uplink;
		out->link[n++] = r->leaves[dp->segment].downlink;
		out->link[n++] = dp->link_down;
	}
	for (uint32_t i = 0; i < n; i++)
		if (!link_ok(r, out->link[i]))
			return -EINVAL;
	out->nhops = n;
	return 0;
}

/* Rates and latencies may be changed at run time (vfab shape): read them once per use. */
static uint64_t rate_of(const struct vfab_link *l)
{
	return __atomic_load_n(&l->rate_bps, __ATOMIC_RELAXED);
}

static uint64_t latency_of(const struct vfab_link *l)
{
	return __atomic_load_n(&l->latency_ns, __ATOMIC_RELAXED);
}

uint64_t fabric_path_latency_ns(const struct vfab_region *r, const struct fabric_path *p)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < p->nhops; i++)
		sum += latency_of(&r->links[p->link[i]]);
	return sum;
}

bool fabric_path_shaped(const struct vfab_region *r, const struct fabric_path *p)
{
	for (uint32_t i = 0; i < p->nhops; i++)
		if (rate_of(&r->links[p->link[i]]) || latency_of(&r->links[p->link[i]]))
			return true;
	return false;
}

uint64_t fabric_ser_ns(uint64_t bytes, uint64_t rate_bps)
{
	if (!rate_bps)
		return 0;
	/* bytes * 8e9 overflows 64 bits past 2 GB: chunks are far below that. */
	return (uint64_t)(((unsigned __int128)bytes * 8000000000u + rate_bps / 2) / rate_bps);
}

static uint64_t max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/* Per hop state of one booking: the own previous chunk and an idle twin. */
struct hop_state {
	uint64_t own_end;  /* when our previous chunk left this hop */
	uint64_t idle_end; /* the same on an idle path */
	uint64_t queued;   /* waiting this hop caused beyond our own chunks */
};

/*
 * Takes [start, end) on a link: start no earlier than the first bit's
 * arrival or the link's clock, end no earlier than start + ser nor than the
 * last bit's arrival (cut-through). Returns start; *end gets the end.
 */
static uint64_t take_link(struct vfab_link_clock *l, uint64_t arrive, uint64_t last_in,
			  uint64_t ser, uint64_t *end)
{
	uint64_t busy = atomic_load_explicit(&l->busy_until_ns, memory_order_relaxed), start;

	do {
		start = max64(arrive, busy);
		*end = max64(start + ser, last_in);
	} while (!atomic_compare_exchange_weak_explicit(
	    &l->busy_until_ns, &busy, *end, memory_order_acq_rel, memory_order_relaxed));
	return start;
}

void fabric_link_occupy(struct vfab_region *r, uint32_t link, uint64_t now_ns, uint64_t bytes)
{
	struct vfab_link *l;
	uint64_t rate, end;

	if (link >= VFAB_MAX_LINKS || !bytes)
		return;
	l = &r->links[link];
	rate = rate_of(l);
	if (rate)
		take_link(&vfab_own(r)->clk[link], now_ns, now_ns, fabric_ser_ns(bytes, rate),
			  &end);
}

static uint64_t book_chunk(struct vfab_region *r, const struct fabric_path *p, uint64_t now,
			   uint64_t size, struct hop_state *hs, uint64_t *sent, uint64_t *idle)
{
	uint64_t arrive = now, last_in = now, i_arrive = now, i_last_in = now;

	for (uint32_t h = 0; h < p->nhops; h++) {
		struct vfab_link *l = &r->links[p->link[h]];
		uint64_t rate = rate_of(l), lat = latency_of(l), ser = fabric_ser_ns(size, rate);
		uint64_t start, end, i_start, i_end;

		if (rate) {
			uint64_t own = max64(arrive, hs[h].own_end);

			start =
			    take_link(&vfab_own(r)->clk[p->link[h]], arrive, last_in, ser, &end);
			hs[h].queued += start > own ? start - own : 0;
			hs[h].own_end = end;
			i_start = max64(i_arrive, hs[h].idle_end);
			i_end = max64(i_start + ser, i_last_in);
			hs[h].idle_end = i_end;
		} else {
			start = arrive;
			end = max64(arrive, last_in);
			i_start = i_arrive;
			i_end = max64(i_arrive, i_last_in);
		}
		if (h == 0)
			*sent = end;
		arrive = start + lat;
		last_in = end + lat;
		i_arrive = i_start + lat;
		i_last_in = i_end + lat;
	}
	*idle = i_last_in;
	return last_in;
}

void fabric_path_book(struct vfab_region *r, const struct fabric_path *p, uint64_t now_ns,
		      uint64_t bytes, bool new_msg, struct fabric_booking *out)
{
	struct hop_state hs[FABRIC_PATH_MAX_HOPS] = {{0}};
	uint64_t left = bytes, deliver = now_ns, idle = now_ns, sent = now_ns;

	do { /* a zero-length message is one empty chunk: it still pays latency */
		uint64_t size = left < FABRIC_CHUNK_BYTES ? left : FABRIC_CHUNK_BYTES;

		deliver = book_chunk(r, p, now_ns, size, hs, &sent, &idle);
		left -= size;
	} while (left);
	for (uint32_t h = 0; h < p->nhops; h++) {
		struct vfab_link_clock *l = &vfab_own(r)->clk[p->link[h]];

		atomic_fetch_add_explicit(&l->bytes, bytes, memory_order_relaxed);
		if (new_msg)
			atomic_fetch_add_explicit(&l->msgs, 1, memory_order_relaxed);
		if (hs[h].queued)
			atomic_fetch_add_explicit(&l->queue_ns, hs[h].queued, memory_order_relaxed);
	}
	out->deliver_ns = deliver;
	out->sent_ns = sent;
	out->queue_ns = deliver > idle ? deliver - idle : 0;
}

uint64_t fabric_path_reserve(struct vfab_region *r, const struct fabric_path *p, uint64_t now_ns,
			     uint64_t bytes, uint64_t *queue_ns)
{
	struct fabric_booking b;

	fabric_path_book(r, p, now_ns, bytes, true, &b);
	if (queue_ns)
		*queue_ns = b.queue_ns;
	return b.deliver_ns;
}

/* splitmix64: tiny, seedable with anything, good enough for loss draws. */
static uint64_t next_random(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

bool fabric_path_drop(struct vfab_region *r, const struct fabric_path *p, uint64_t *rng)
{
	for (uint32_t h = 0; h < p->nhops; h++) {
		struct vfab_link *l = &r->links[p->link[h]];
		uint32_t ppm = __atomic_load_n(&l->loss_ppm, __ATOMIC_RELAXED);

		if (ppm && next_random(rng) % 1000000u < ppm) {
			atomic_fetch_add_explicit(&vfab_own(r)->clk[p->link[h]].drops, 1,
						  memory_order_relaxed);
			return true;
		}
	}
	return false;
}

uint32_t fabric_lost_packet(uint64_t *rng, uint32_t npkts)
{
	return npkts > 1 ? (uint32_t)(next_random(rng) % npkts) : 0;
}

uint64_t fabric_now_ns(void)
{
	return vfab_mono_ns();
}
