/* SPDX-License-Identifier: MIT */
/*
 * HISTORY (daemon/vfabd_history.c): the ring driven directly on vfabd's own
 * topology and a stand-in region (no samples; wrap-around after 900
 * samples keeps the newest 900 in order; names from the topology, never the
 * region; counters printed exactly), and a live vfabd's answer. Every
 * document is parsed and must have exactly the fields of the `history` and
 * `history.links[]` tables of docs/REPORT_SCHEMA.md, read at run time, with
 * every per-link array `samples` long.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"
#include "daemon/vfabd.h"
#include "daemon/vfabd_history.h"
#include "daemon/vfabd_json.h"
#include "fabric/topology.h"
#include "tests/unit/report_schema.h"
#include "tests/unit/vfabd_fixture.h"

#define T0_MS 1700000000000ull

static const char *const series[] = {"bytes", "msgs", "queue_ns", "drops"};

static uint64_t u(const struct vjson *o, const char *key)
{
	const struct vjson *v = vjson_get(o, key);

	assert_non_null(v);
	assert_true(v->is_uint);
	return v->u;
}

/* The k-th element of an array of integers. */
static uint64_t at(const struct vjson *arr, size_t k)
{
	const struct vjson *e = arr->child;

	while (k-- && e)
		e = e->next;
	assert_non_null(e);
	assert_true(e->is_uint);
	return e->u;
}

/*
 * Parses a HISTORY document and checks its structure against the schema:
 * every array of integers `samples` long, one links[] entry per link of t.
 */
static struct vjson *parse_checked(const char *text, size_t len, const struct vfab_region *t)
{
	const struct vjson *links, *l, *a;
	struct vjson *root;
	uint32_t used = 0;
	char err[128];
	uint64_t n;

	assert_true(len > 2 && text[len - 1] == '\n');
	root = vjson_parse(text, len, err, sizeof(err));
	if (!root)
		fail_msg("HISTORY is not JSON: %s", err);
	schema_check_object(root, "history");
	assert_string_equal(vjson_get(root, "schema")->str, "vfab-history/1");
	assert_int_equal(u(root, "interval_ms"), 1000);
	n = u(root, "samples");
	assert_true(n <= VFABD_HISTORY_SAMPLES);
	a = vjson_get(root, "unix_ms");
	assert_int_equal(a->n, n);
	for (const struct vjson *e = a->child; e; e = e->next)
		assert_true(e->type == VJSON_NUM && e->is_uint);
	links = vjson_get(root, "links");
	for (uint32_t i = 0; i < t->nlinks; i++)
		used += t->links[i].in_use != 0;
	assert_int_equal(links->n, used);
	for (l = links->child; l; l = l->next) {
		uint64_t idx;

		schema_check_object(l, "history.links[]");
		idx = u(l, "index");
		assert_true(idx < t->nlinks && t->links[idx].in_use);
		/* The name of vfabd's own topology, as REPORT gives it. */
		assert_string_equal(vjson_get(l, "name")->str, t->links[idx].name);
		for (size_t f = 0; f < sizeof(series) / sizeof(series[0]); f++) {
			a = vjson_get(l, series[f]);
			assert_int_equal(a->n, n);
			for (const struct vjson *e = a->child; e; e = e->next)
				assert_true(e->type == VJSON_NUM && e->is_uint);
		}
	}
	return root;
}

/* vfabd's own topology (default config) as d->t, and a stand-in region as d->r. */
static struct vfabd *make_daemon(void)
{
	struct vfabd *d = calloc(1, sizeof(*d));
	struct vfab_region *t = NULL, *r = NULL;
	struct vfab_config cfg;
	char err[256];

	assert_non_null(d);
	assert_int_equal(vfab_config_load_default(&cfg, err, sizeof(err)), 0);
	assert_int_equal(vfab_topology_private("unit-hist", "/tmp/unit-hist", &cfg, &t), 0);
	assert_int_equal(vfab_topology_private("unit-hist", "/tmp/unit-hist", &cfg, &r), 0);
	vfab_config_free(&cfg);
	assert_true(t->nlinks > 0 && t->nlinks < VFAB_MAX_LINKS);
	d->t = t;
	d->r = r;
	r->local.mapped = 1; /* its shard 0 is counted, as vfabd's region's */
	d->fabric = "unit-hist";
	assert_int_equal(vfabd_history_init(d), 0);
	/* Sized for the fabric's links, not VFAB_MAX_LINKS. */
	assert_int_equal(d->hist.nlinks, t->nlinks);
	assert_int_equal(d->hist.cap, VFABD_HISTORY_SAMPLES);
	return d;
}

static void free_daemon(struct vfabd *d)
{
	vfabd_history_free(d);
	assert_null(d->hist.points);
	vfab_topology_private_free(d->r);
	vfab_topology_private_free((struct vfab_region *)d->t);
	free(d);
}

static struct vjson *document(struct vfabd *d)
{
	struct vjson_buf b = {0};
	struct vjson *root;

	vfabd_history_json(d, &b);
	assert_false(b.oom);
	root = parse_checked(b.p, b.len, d->t);
	free(b.p);
	return root;
}

/* The counters of link i at sample s, as a hostile or busy region might hold them. */
static void set_counters(struct vfab_region *r, uint32_t i, uint64_t s)
{
	atomic_store(&vfab_own(r)->clk[i].bytes, s * 1000 + i);
	atomic_store(&vfab_own(r)->clk[i].msgs, s);
	atomic_store(&vfab_own(r)->clk[i].queue_ns, s * 7 + i);
	atomic_store(&vfab_own(r)->clk[i].drops,
		     UINT64_MAX - s); /* numbers only: printed exactly */
}

static void test_no_samples(void **state)
{
	struct vfabd *d = make_daemon();
	struct vjson *root;

	(void)state;
	root = document(d);
	assert_int_equal(u(root, "samples"), 0);
	assert_int_equal(vjson_get(root, "unix_ms")->n, 0);
	assert_true(vjson_get(root, "links")->n > 0);
	vjson_free(root);
	free_daemon(d);

	/* No ring at all (never initialised, as in tests/fuzz/fuzz_ctl): the same, N = 0. */
	{
		struct vfabd z = {0};
		struct vjson_buf b = {0};
		struct vfab_region *t = NULL;
		struct vfab_config cfg;
		char err[256];

		assert_int_equal(vfab_config_load_default(&cfg, err, sizeof(err)), 0);
		assert_int_equal(vfab_topology_private("unit-hist", "/tmp/unit-hist", &cfg, &t), 0);
		vfab_config_free(&cfg);
		z.t = z.r = t;
		vfabd_history_sample(&z, T0_MS); /* nothing to sample into: ignored */
		vfabd_history_json(&z, &b);
		root = parse_checked(b.p, b.len, t);
		assert_int_equal(u(root, "samples"), 0);
		vjson_free(root);
		free(b.p);
		vfab_topology_private_free(t);
	}
}

static void check_window(struct vfabd *d, uint64_t taken)
{
	uint64_t n = taken < VFABD_HISTORY_SAMPLES ? taken : VFABD_HISTORY_SAMPLES;
	uint64_t first = taken - n; /* the oldest sample kept */
	struct vjson *root = document(d);
	const struct vjson *times = vjson_get(root, "unix_ms"), *l;

	assert_int_equal(u(root, "samples"), n);
	for (uint64_t k = 0; k < n; k++)
		assert_true(at(times, k) == T0_MS + (first + k) * 1000);
	for (l = vjson_get(root, "links")->child; l; l = l->next) {
		uint64_t i = u(l, "index");
		const struct vjson *bytes = vjson_get(l, "bytes"), *msgs = vjson_get(l, "msgs"),
				   *q = vjson_get(l, "queue_ns"), *drops = vjson_get(l, "drops");

		for (uint64_t k = 0; k < n; k++) {
			uint64_t s = first + k;

			assert_true(at(bytes, k) == s * 1000 + i);
			assert_true(at(msgs, k) == s);
			assert_true(at(q, k) == s * 7 + i);
			assert_true(at(drops, k) == UINT64_MAX - s);
		}
	}
	vjson_free(root);
}

static void test_wrap(void **state)
{
	struct vfabd *d = make_daemon();
	uint64_t s = 0;

	(void)state;
	/* A name another user wrote into the region is never the one printed. */
	snprintf(d->r->links[0].name, sizeof(d->r->links[0].name), "%s", "evil\"name");
	atomic_store(&d->r->links[0].rate_bps, 25000000000ull);
	for (; s < 3; s++) {
		for (uint32_t i = 0; i < d->t->nlinks; i++)
			set_counters(d->r, i, s);
		vfabd_history_sample(d, T0_MS + s * 1000);
	}
	check_window(d, s);
	{
		struct vjson *root = document(d);
		const struct vjson *l0 = vjson_get(root, "links")->child;

		assert_int_equal(u(l0, "index"), 0);
		assert_string_equal(vjson_get(l0, "name")->str, d->t->links[0].name);
		assert_int_equal(u(l0, "rate_bps"), 25000000000ull);
		vjson_free(root);
	}
	/* Full, one past full, then past twice round: always the newest 900, oldest first. */
	for (size_t c = 0; c < 5; c++) {
		static const uint64_t stops[] = {899, 900, 901, 1000, 2345};

		for (; s < stops[c]; s++) {
			for (uint32_t i = 0; i < d->t->nlinks; i++)
				set_counters(d->r, i, s);
			vfabd_history_sample(d, T0_MS + s * 1000);
		}
		assert_int_equal(d->hist.count,
				 s < VFABD_HISTORY_SAMPLES ? s : VFABD_HISTORY_SAMPLES);
		check_window(d, s);
	}
	free_daemon(d);
}

static int setup(void **state)
{
	(void)state;
	return fx_start("history");
}

static int teardown(void **state)
{
	(void)state;
	fx_cleanup();
	return 0;
}

static void test_live(void **state)
{
	struct vfab_region *r = fx_region();
	struct vjson *root = NULL;
	const struct vjson *times, *l;
	uint64_t n = 0, mark = 0;
	size_t len = 0;
	char *body;

	(void)state;
	assert_non_null(r);
	/* Samples come once a second: wait for the first two, traffic booked between them. */
	for (int i = 0; i < 100 && n < 3; i++) {
		body = fx_fetch("HISTORY", &len);
		assert_non_null(body);
		vjson_free(root);
		root = parse_checked(body, len, r); /* r's topology is vfabd's, copied once */
		free(body);
		n = u(root, "samples");
		if (n >= 1 && !mark) {
			mark = n;
			atomic_fetch_add(&vfab_own(r)->clk[0].bytes, 123456789);
		}
		if (n < 3)
			fx_sleep_ms(100);
	}
	assert_true(n >= 3);
	times = vjson_get(root, "unix_ms");
	for (uint64_t k = 1; k < n; k++) {
		uint64_t dt = at(times, k) - at(times, k - 1);

		/* A second apart, give or take the loop's jitter (never half a tick early). */
		assert_true(at(times, k) > at(times, k - 1));
		assert_true(dt >= 750);
	}
	l = vjson_get(root, "links")->child;
	assert_int_equal(u(l, "index"), 0);
	/* The bytes booked after sample `mark` show from a later sample on. */
	assert_true(at(vjson_get(l, "bytes"), n - 1) >= 123456789);
	assert_true(at(vjson_get(l, "bytes"), 0) < 123456789);
	vjson_free(root);
	vfab_region_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_no_samples),
	    cmocka_unit_test(test_wrap),
	    cmocka_unit_test_setup_teardown(test_live, setup, teardown),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(fx_cleanup);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
