/* SPDX-License-Identifier: MIT */
/*
 * The link model with a fake clock: paths, serialization and latency of one
 * message, queueing behind another, cut-through, latency-only links, fair
 * sharing of one link by two flows booked chunk by chunk, oversubscribed
 * uplinks, loss draws and where a loss falls in a message, the in-order
 * rule of one sender's messages, and lock-free booking from several threads. No sleeps:
 * every time is computed, none is measured.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fabric/link_model.h"
#include "fabric_fixture.h"

#define MIB (1ull << 20)
#define T0 1000000000ull /* the fake clock starts at 1 s */

/* 2 leaves of 4 nodes: 100 Gb/s ports, 2 us node to node, 1 us across the spine. */
static const char leafspine[] = "nodes: [{id: n0}, {id: n1}, {id: n2}, {id: n3},\n"
				"        {id: n4}, {id: n5}, {id: n6}, {id: n7}]\n"
				"fabric:\n"
				"  leaf_size: 4\n"
				"  intra_node: {bandwidth_gbps: 400, latency_us: 1}\n"
				"  inter_node: {bandwidth_gbps: 100, latency_us: 2, "
				"oversubscription: %g}\n"
				"  spine: {latency_us: 1}\n";

static struct vfab_region *leafspine_region(double oversub)
{
	char yaml[sizeof(leafspine) + 16];

	snprintf(yaml, sizeof(yaml), leafspine, oversub);
	return fixture_fill(yaml, NULL);
}

static void path(struct vfab_region *r, uint32_t from, uint32_t to, struct fabric_path *p)
{
	uint32_t s, d;

	fixture_port(r, from, 0, &s);
	fixture_port(r, to, 0, &d);
	assert_int_equal(fabric_path_resolve(r, s, 1, d, 1, p), 0);
}

static struct vfab_link *link_of(struct vfab_region *r, const struct fabric_path *p, uint32_t h)
{
	return &r->links[p->link[h]];
}

/* Hop h's clock and counters (this process's shard's, region.h). */
static struct vfab_link_clock *clk_of(struct vfab_region *r, const struct fabric_path *p,
				      uint32_t h)
{
	return &vfab_own(r)->clk[p->link[h]];
}

static void test_paths(void **state)
{
	struct vfab_region *r = leafspine_region(2), *plain;
	struct fabric_path p;
	uint32_t s;

	(void)state;
	path(r, 0, 1, &p);
	assert_int_equal(p.nhops, 2);
	assert_int_equal(p.link[0], fixture_port(r, 0, 0, NULL)->link_up);
	assert_int_equal(p.link[1], fixture_port(r, 1, 0, NULL)->link_down);
	assert_int_equal(fabric_path_latency_ns(r, &p), 2000);
	path(r, 0, 5, &p);
	assert_int_equal(p.nhops, 4);
	assert_int_equal(p.link[1], r->leaves[0].uplink);
	assert_int_equal(p.link[2], r->leaves[1].downlink);
	assert_int_equal(link_of(r, &p, 3)->kind, VFAB_LINK_NODE_DOWN);
	assert_int_equal(fabric_path_latency_ns(r, &p), 3000);
	assert_true(fabric_path_shaped(r, &p));
	path(r, 3, 3, &p);
	assert_int_equal(p.nhops, 1);
	assert_int_equal(link_of(r, &p, 0)->kind, VFAB_LINK_LOOPBACK);
	assert_int_equal(link_of(r, &p, 0)->rate_bps, 400000000000ull);
	assert_int_equal(fabric_path_latency_ns(r, &p), 1000);
	fixture_port(r, 0, 0, &s);
	assert_int_equal(fabric_path_resolve(r, s, 2, s, 1, &p), -EINVAL);
	assert_int_equal(fabric_path_resolve(r, s, 1, 999, 1, &p), -EINVAL);
	r->spine.present = 0;
	assert_int_equal(fabric_path_resolve(r, s, 1, r->nodes[4].hcas[0], 1, &p), -EHOSTUNREACH);
	fixture_region_free(r);

	plain = fixture_fill("nodes: [{id: a}, {id: b}]\n", NULL);
	path(plain, 0, 1, &p);
	assert_false(fabric_path_shaped(plain, &p));
	fixture_region_free(plain);
}

static void test_one_message(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	uint64_t chunk = fabric_ser_ns(FABRIC_CHUNK_BYTES, 100000000000ull), q = 1, t;
	struct fabric_path p;

	(void)state;
	/* 1 MiB at 100 Gb/s is 83.886 us; 64 KiB chunks round to the ns. */
	assert_int_equal(fabric_ser_ns(MIB, 100000000000ull), 83886);
	assert_int_equal(chunk, 5243);
	assert_int_equal(fabric_ser_ns(12345, 0), 0);
	path(r, 0, 1, &p);
	t = fabric_path_reserve(r, &p, T0, MIB, &q);
	assert_int_equal(t - T0, 2000 + 16 * chunk);
	assert_int_equal(q, 0);
	for (uint32_t h = 0; h < 2; h++) {
		assert_int_equal(clk_of(r, &p, h)->bytes, MIB);
		assert_int_equal(clk_of(r, &p, h)->msgs, 1);
		assert_int_equal(clk_of(r, &p, h)->queue_ns, 0);
	}
	/* The sender's port is busy for the serialization time only. */
	assert_int_equal(clk_of(r, &p, 0)->busy_until_ns, T0 + 16 * chunk);
	/* Across the spine: one more microsecond, same rate (uplink 200 Gb/s). */
	path(r, 2, 6, &p);
	t = fabric_path_reserve(r, &p, T0, MIB, NULL);
	assert_int_equal(t - T0, 3000 + 16 * chunk);
	fixture_region_free(r);
}

static void test_queueing(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	uint64_t chunk = fabric_ser_ns(FABRIC_CHUNK_BYTES, 100000000000ull), q, t1, t2, t3;
	struct fabric_path p;

	(void)state;
	path(r, 0, 1, &p);
	t1 = fabric_path_reserve(r, &p, T0, MIB, &q);
	t2 = fabric_path_reserve(r, &p, T0, MIB, &q);
	assert_int_equal(t2 - t1, 16 * chunk);
	assert_int_equal(q, 16 * chunk);
	/* Queued at the first hop: the second hop saw a back-to-back stream. */
	assert_int_equal(clk_of(r, &p, 0)->queue_ns, 16 * chunk);
	assert_int_equal(clk_of(r, &p, 1)->queue_ns, 0);
	assert_int_equal(clk_of(r, &p, 0)->msgs, 2);
	/* Once the link has drained nothing waits. */
	t3 = fabric_path_reserve(r, &p, t2 + 1000, 4096, &q);
	assert_int_equal(q, 0);
	assert_int_equal(t3 - (t2 + 1000), 2000 + fabric_ser_ns(4096, 100000000000ull));
	fixture_region_free(r);
}

/* Cut-through: a message takes its slowest hop's time plus the latencies. */
static void test_cut_through(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	uint64_t slow = fabric_ser_ns(FABRIC_CHUNK_BYTES, 50000000000ull), t;
	struct fabric_path p;

	(void)state;
	path(r, 0, 1, &p);
	link_of(r, &p, 1)->rate_bps = 50000000000ull;
	t = fabric_path_reserve(r, &p, T0, MIB, NULL);
	assert_int_equal(t - T0, 2000 + 16 * slow);
	/* The other way round (slow sender, fast receiver port) ends the same. */
	path(r, 2, 3, &p);
	link_of(r, &p, 0)->rate_bps = 50000000000ull;
	t = fabric_path_reserve(r, &p, T0, MIB, NULL);
	assert_int_equal(t - T0, 2000 + 16 * slow);
	fixture_region_free(r);
}

static void test_latency_only_and_empty(void **state)
{
	struct vfab_region *r = fixture_fill("nodes: [{id: a}, {id: b}]\n"
					     "fabric: {inter_node: {latency_us: 10}}\n",
					     NULL);
	struct vfab_region *s = leafspine_region(2);
	struct fabric_path p;
	uint64_t q;

	(void)state;
	path(r, 0, 1, &p);
	assert_true(fabric_path_shaped(r, &p));
	assert_int_equal(fabric_path_reserve(r, &p, T0, 64 * MIB, &q), T0 + 10000);
	assert_int_equal(fabric_path_reserve(r, &p, T0, 64 * MIB, &q), T0 + 10000);
	assert_int_equal(q, 0);
	assert_int_equal(clk_of(r, &p, 0)->busy_until_ns, 0); /* unshaped: never booked */
	assert_int_equal(clk_of(r, &p, 0)->bytes, 128 * MIB);
	/* A zero-length message (WRITE_WITH_IMM of 0 bytes) still pays the path. */
	path(s, 0, 1, &p);
	assert_int_equal(fabric_path_reserve(s, &p, T0, 0, NULL), T0 + 2000);
	fixture_region_free(r);
	fixture_region_free(s);
}

struct flow {
	struct fabric_path p;
	uint64_t left, next, done;
	bool started;
};

/*
 * Flows that book one chunk at a time, each when its own port is free again:
 * the earliest flow goes next, as chunks would arrive at a switch.
 */
static void run_flows(struct vfab_region *r, struct flow *f, uint32_t n)
{
	for (;;) {
		struct fabric_booking b;
		struct flow *x = NULL;
		uint64_t size;

		for (uint32_t i = 0; i < n; i++)
			if (f[i].left && (!x || f[i].next < x->next))
				x = &f[i];
		if (!x)
			return;
		size = x->left < FABRIC_CHUNK_BYTES ? x->left : FABRIC_CHUNK_BYTES;
		fabric_path_book(r, &x->p, x->next, size, !x->started, &b);
		x->started = true;
		x->left -= size;
		x->next = b.sent_ns;
		x->done = b.deliver_ns;
	}
}

static void test_two_flows_share(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	/* 8 MiB alone: 128 chunks back to back plus the path's latency. */
	uint64_t solo = 2000 + 128 * fabric_ser_ns(FABRIC_CHUNK_BYTES, 100000000000ull);
	struct flow f[2];
	uint64_t ta, tb;

	(void)state;
	memset(f, 0, sizeof(f));
	/* n0 and n1 both send 8 MiB to n2: they share n2's down link (incast). */
	path(r, 0, 2, &f[0].p);
	path(r, 1, 2, &f[1].p);
	for (int i = 0; i < 2; i++) {
		f[i].left = 8 * MIB;
		f[i].next = T0;
	}
	run_flows(r, f, 2);
	ta = f[0].done - T0;
	tb = f[1].done - T0;
	/* Each gets half of 100 Gb/s: twice the time alone, within 10 %. */
	assert_true(ta > solo * 18 / 10 && ta < solo * 22 / 10);
	assert_true(tb > solo * 18 / 10 && tb < solo * 22 / 10);
	/* ... interleaved chunk by chunk: they finish one chunk apart. */
	assert_true((ta > tb ? ta - tb : tb - ta) <= 2 * 5243);
	assert_true(vfab_own(r)->clk[fixture_port(r, 2, 0, NULL)->link_down].queue_ns > 0);
	assert_int_equal(vfab_own(r)->clk[fixture_port(r, 2, 0, NULL)->link_down].msgs, 2);
	fixture_region_free(r);

	/* Booked as one burst each, the first takes the link first (FIFO). */
	r = leafspine_region(2);
	path(r, 0, 2, &f[0].p);
	path(r, 1, 2, &f[1].p);
	ta = fabric_path_reserve(r, &f[0].p, T0, 8 * MIB, NULL) - T0;
	tb = fabric_path_reserve(r, &f[1].p, T0, 8 * MIB, NULL) - T0;
	assert_true(ta < solo * 11 / 10 && tb > solo * 19 / 10);
	fixture_region_free(r);
}

/* Aggregate rate of n flows node i -> node 4 + i across the spine. */
static double aggregate_gbps(double oversub, uint32_t n)
{
	struct vfab_region *r = leafspine_region(oversub);
	struct flow f[4];
	uint64_t last = 0;

	memset(f, 0, sizeof(f));
	for (uint32_t i = 0; i < n; i++) {
		path(r, i, 4 + i, &f[i].p);
		f[i].left = 4 * MIB;
		f[i].next = T0;
	}
	run_flows(r, f, n);
	for (uint32_t i = 0; i < n; i++)
		if (f[i].done > last)
			last = f[i].done;
	assert_int_equal(vfab_own(r)->clk[r->leaves[0].uplink].bytes, n * 4 * MIB);
	fixture_region_free(r);
	return (double)(n * 4 * MIB * 8) / (double)(last - T0);
}

static void test_oversubscription(void **state)
{
	double g;

	(void)state;
	/* 4 x 100 Gb/s into a 2:1 leaf: the uplink's 200 Gb/s, within 10 %. */
	g = aggregate_gbps(2, 4);
	assert_true(g > 180 && g < 220);
	/* Not oversubscribed: all four at line rate. */
	g = aggregate_gbps(1, 4);
	assert_true(g > 360 && g < 440);
	/* Two senders do not fill the 2:1 uplink: each keeps 100 Gb/s. */
	g = aggregate_gbps(2, 2);
	assert_true(g > 180 && g < 220);
	g = aggregate_gbps(4, 4); /* 4:1: 100 Gb/s for all of them */
	assert_true(g > 90 && g < 110);
}

static void test_loss(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	struct fabric_path p;
	uint64_t rng = 42;
	uint32_t lost = 0;

	(void)state;
	path(r, 0, 5, &p);
	for (int i = 0; i < 1000; i++)
		assert_false(fabric_path_drop(r, &p, &rng));
	link_of(r, &p, 2)->loss_ppm = 1000000;
	assert_true(fabric_path_drop(r, &p, &rng));
	assert_int_equal(clk_of(r, &p, 2)->drops, 1);
	link_of(r, &p, 2)->loss_ppm = 0;
	link_of(r, &p, 0)->loss_ppm = 100000; /* 10 % */
	for (int i = 0; i < 100000; i++)
		lost += fabric_path_drop(r, &p, &rng);
	assert_true(lost > 9500 && lost < 10500);
	assert_int_equal(clk_of(r, &p, 0)->drops, lost);
	fixture_region_free(r);
}

/* Where in a lost attempt the loss falls: uniform over its packets, 0 for one. */
static void test_lost_packet(void **state)
{
	uint32_t seen[8] = {0};
	uint64_t rng = 7;

	(void)state;
	assert_int_equal(fabric_lost_packet(&rng, 1), 0);
	assert_int_equal(fabric_lost_packet(&rng, 0), 0);
	for (int i = 0; i < 80000; i++) {
		uint32_t k = fabric_lost_packet(&rng, 8);

		assert_true(k < 8);
		seen[k]++;
	}
	for (int k = 0; k < 8; k++)
		assert_true(seen[k] > 9500 && seen[k] < 10500);
}

/*
 * The ordering rule of a lossless link: messages a sender books one after
 * the other on a path arrive in that order, whatever their sizes (a 0-byte
 * WRITE_WITH_IMM behind 1 MiB, a 1-byte one behind 4 KiB) and whatever
 * other flows book on the shared hops in between (incast at the receiver,
 * across the spine). The provider delivers them in posting order on top of
 * this (provider/vfab_sq.c); a delivery time is never earlier than the one
 * booked before it on the same path.
 */
static void test_in_order(void **state)
{
	static const uint64_t sizes[] = {MIB, 0, 4096, 1, 65536, 0, 3 * MIB + 17, 8, 1, 4096};
	struct vfab_region *r = leafspine_region(2);
	struct fabric_path mine, cross, far;
	uint64_t prev = 0, now = T0;

	(void)state;
	path(r, 0, 1, &mine);
	path(r, 2, 1, &cross); /* shares node1's down link */
	path(r, 4, 1, &far);   /* comes over the spine into node1 */
	for (int round = 0; round < 50; round++) {
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
			uint64_t t = fabric_path_reserve(r, &mine, now, sizes[i], NULL);

			assert_true(t >= prev);
			prev = t;
			fabric_path_reserve(r, &cross, now, (i & 1) ? MIB : 100, NULL);
			if (i % 3 == 0)
				fabric_path_reserve(r, &far, now, 2 * MIB, NULL);
			now += 700 * i; /* posts come faster than the link drains */
		}
	}
	fixture_region_free(r);
}

/*
 * IP bytes of a converged port occupy its link: an RDMA message booked
 * after them waits for their serialization, and the link's counters stay
 * RDMA's. An unshaped link is not occupied.
 */
static void test_occupy(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	struct fabric_path p;
	uint64_t idle, busy, bytes;

	(void)state;
	path(r, 0, 1, &p);
	idle = fabric_path_reserve(r, &p, T0, 4096, NULL) - T0;
	bytes = clk_of(r, &p, 0)->bytes;
	/* 1 MiB of IP at 100 Gb/s: 83886 ns on node0's up link. */
	fabric_link_occupy(r, p.link[0], 2 * T0, MIB);
	busy = fabric_path_reserve(r, &p, 2 * T0, 4096, NULL) - 2 * T0;
	assert_int_equal(busy, idle + fabric_ser_ns(MIB, 100000000000ull));
	assert_int_equal(clk_of(r, &p, 0)->bytes, bytes + 4096);
	link_of(r, &p, 0)->rate_bps = 0;
	fabric_link_occupy(r, p.link[0], 3 * T0, MIB);
	assert_true(clk_of(r, &p, 0)->busy_until_ns < 3 * T0);
	fixture_region_free(r);
}

struct booker {
	struct vfab_region *r;
	struct fabric_path p;
};

static void *book_many(void *arg)
{
	struct booker *b = arg;

	for (int i = 0; i < 500; i++)
		fabric_path_reserve(b->r, &b->p, T0, FABRIC_CHUNK_BYTES, NULL);
	return NULL;
}

/* Concurrent bookings lose no time: the clock ends at the sum of all of them. */
static void test_concurrent_bookings(void **state)
{
	struct vfab_region *r = leafspine_region(2);
	struct booker b = {.r = r};
	pthread_t t[4];

	(void)state;
	path(r, 0, 1, &b.p);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, book_many, &b), 0);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_int_equal(clk_of(r, &b.p, 0)->busy_until_ns,
			 T0 + 2000 * fabric_ser_ns(FABRIC_CHUNK_BYTES, 100000000000ull));
	assert_int_equal(clk_of(r, &b.p, 1)->bytes, 2000ull * FABRIC_CHUNK_BYTES);
	assert_int_equal(clk_of(r, &b.p, 1)->msgs, 2000);
	fixture_region_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_paths),
	    cmocka_unit_test(test_one_message),
	    cmocka_unit_test(test_queueing),
	    cmocka_unit_test(test_cut_through),
	    cmocka_unit_test(test_latency_only_and_empty),
	    cmocka_unit_test(test_two_flows_share),
	    cmocka_unit_test(test_oversubscription),
	    cmocka_unit_test(test_loss),
	    cmocka_unit_test(test_lost_packet),
	    cmocka_unit_test(test_in_order),
	    cmocka_unit_test(test_occupy),
	    cmocka_unit_test(test_concurrent_bookings),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
