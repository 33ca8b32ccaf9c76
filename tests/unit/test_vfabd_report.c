/* SPDX-License-Identifier: MIT */
/*
 * REPORT against its documented schema: the field tables of
 * docs/REPORT_SCHEMA.md are read at run time, and a live report (after link,
 * shape and spike requests, with a QP in the region) must have exactly the
 * documented fields with the documented types in every object, plus the
 * values those requests imply.
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

#include "base/proc.h"
#include "daemon/vfabd_json.h"
#include "tests/unit/report_schema.h"
#include "tests/unit/vfabd_fixture.h"

static void check_array(const struct vjson *root, const char *key, const char *sect)
{
	const struct vjson *a = vjson_get(root, key);

	assert_non_null(a);
	assert_int_equal(a->type, VJSON_ARR);
	for (const struct vjson *e = a->child; e; e = e->next)
		schema_check_object(e, sect);
}

static int setup(void **state)
{
	(void)state;
	return fx_start("report");
}

static int teardown(void **state)
{
	(void)state;
	fx_cleanup();
	return 0;
}

static const struct vjson *find(const struct vjson *arr, const char *key, const char *value)
{
	for (const struct vjson *e = arr ? arr->child : NULL; e; e = e->next) {
		const struct vjson *v = vjson_get(e, key);

		if (v && v->type == VJSON_STR && !strcmp(v->str, value))
			return e;
	}
	return NULL;
}

static uint64_t u(const struct vjson *o, const char *key)
{
	const struct vjson *v = vjson_get(o, key);

	assert_non_null(v);
	assert_true(v->is_uint);
	return v->u;
}

static void test_report_schema(void **state)
{
	struct vfab_region *r = fx_region();
	struct vfab_owner me = {.pid = getpid(), .ctx_id = 1};
	const struct vjson *faults, *e, *ports, *p, *qps, *q, *links, *l;
	char reply[512], err[128], line[256], comm[32] = "";
	struct vjson *root;
	size_t len = 0;
	char *body;
	int pd, cq, qp, fd;

	(void)state;
	assert_non_null(r);
	assert_true(fx_request("LINK node1/mlx5_0 down", reply, sizeof(reply)) > 0);
	assert_true(fx_request("SHAPE node0/mlx5_0 bw=50 lat=2", reply, sizeof(reply)) > 0);
	assert_true(fx_request("FAULT spike node0/loopback lat=10 for=60", reply, sizeof(reply)) >
		    0);
	atomic_fetch_add(&vfab_cnt(r, 0, 1)->xmit_data_words, 1000);
	/* A QP of ours on node1, entered in vfabd's table as the provider does. */
	me.hca = 1;
	pd = vfab_pd_alloc(r, &me, 1);
	cq = vfab_cq_alloc(r, &me, 8);
	qp = vfab_qp_alloc(r, &me, 8, 1);
	assert_true(pd >= 0 && cq >= 0 && qp >= 0);
	r->qps[qp].hca = 1;
	r->qps[qp].port = 1;
	r->qps[qp].qp_type = 2;		       /* IBV_QPT_RC */
	atomic_store(&r->qps[qp].qp_state, 3); /* IBV_QPS_RTS */
	fd = vfab_ctl_connect(fx_rundir);
	assert_true(fd >= 0);
	snprintf(line, sizeof(line), "HELLO %d", (int)getpid());
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	snprintf(line, sizeof(line), "SEAL pd %d ctx=1 hca=1", pd);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	snprintf(line, sizeof(line), "SEAL cq %d ctx=1 hca=1 cookie=1 chan=0 async=0 stamp=0", cq);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");
	snprintf(line, sizeof(line),
		 "SEAL qp %d ctx=1 hca=1 qpn=%u type=2 pd=%d scq=%d rcq=%d srq=-1 cookie=2 async=0 "
		 "xrcd=0",
		 qp, r->qps[qp].qpn, pd, cq, cq);
	assert_true(vfab_ctl_request(fd, line, reply, sizeof(reply)) > 0);
	assert_string_equal(reply, "OK");

	body = fx_report(&len);
	assert_non_null(body);
	assert_true(len > 2 && body[len - 1] == '\n');
	root = vjson_parse(body, len, err, sizeof(err));
	if (!root)
		fail_msg("REPORT is not JSON: %s", err);

	/* Structure: every object against its table. */
	schema_check_object(root, "report");
	check_array(root, "links", "links[]");
	check_array(root, "ports", "ports[]");
	check_array(root, "qps", "qps[]");
	check_array(root, "faults", "faults[]");
	ports = vjson_get(root, "ports");
	for (p = ports->child; p; p = p->next)
		schema_check_object(vjson_get(p, "counters"), "ports[].counters");
	schema_check_object(vjson_get(root, "wire"), "wire");
	schema_check_object(vjson_get(vjson_get(root, "wire"), "dropped"), "wire.dropped");
	/* One host: no wire, nothing counted. */
	assert_int_equal(u(vjson_get(root, "wire"), "open"), 0);
	assert_int_equal(u(vjson_get(root, "wire"), "sent"), 0);

	/* Values the requests above imply. */
	assert_string_equal(vjson_get(root, "schema")->str, "vfab-report/1");
	assert_string_equal(vjson_get(root, "fabric")->str, fx_fabric);
	assert_int_equal(u(root, "vfabd_pid"), fx_daemon);
	links = vjson_get(root, "links");
	assert_int_equal(links->n, r->nlinks);
	l = find(links, "name", "node0/mlx5_0/1/up");
	assert_non_null(l);
	assert_string_equal(vjson_get(l, "kind")->str, "node_up");
	assert_int_equal(u(l, "rate_bps"), 50000000000ull);
	assert_int_equal(u(l, "latency_ns"), 2000);
	l = find(links, "name", "node0/loopback");
	assert_int_equal(u(l, "latency_ns"), 10000);
	assert_int_equal(u(l, "spike_ns"), 10000);
	assert_int_equal(ports->n, 2);
	p = find(ports, "node", "node1");
	assert_string_equal(vjson_get(p, "state")->str, "DOWN");
	assert_int_equal(u(p, "state_num"), 1);
	assert_int_equal(u(vjson_get(p, "counters"), "link_downed"), 1);
	p = find(ports, "node", "node0");
	assert_string_equal(vjson_get(p, "rate")->str, "50 Gb/sec (1X HDR)");
	assert_int_equal(u(vjson_get(p, "counters"), "port_xmit_data"), 1000);
	qps = vjson_get(root, "qps");
	assert_int_equal(qps->n, 1);
	q = qps->child;
	assert_int_equal(u(q, "qpn"), r->qps[qp].qpn);
	assert_string_equal(vjson_get(q, "node")->str, "node1");
	assert_string_equal(vjson_get(q, "type")->str, "RC");
	assert_string_equal(vjson_get(q, "state")->str, "RTS");
	assert_int_equal(u(q, "pid"), getpid());
	assert_int_equal(u(q, "recv_posted"), 0);
	vfab_pid_comm(getpid(), comm, sizeof(comm));
	assert_string_equal(vjson_get(q, "comm")->str, comm);
	/* node1's port was taken down above: that is what stands in its way. */
	assert_string_equal(vjson_get(q, "waits")->str, "its port is down");
	faults = vjson_get(root, "faults");
	assert_int_equal(faults->n, 3);
	e = faults->child;
	assert_string_equal(vjson_get(e, "kind")->str, "link");
	assert_string_equal(vjson_get(e, "target")->str, "node1/mlx5_0");
	assert_string_equal(vjson_get(e, "params")->str, "down");
	e = e->next;
	assert_string_equal(vjson_get(e, "kind")->str, "shape");
	assert_string_equal(vjson_get(e, "params")->str, "bw=50 lat=2");
	e = e->next;
	assert_string_equal(vjson_get(e, "kind")->str, "spike");
	assert_string_equal(vjson_get(e, "params")->str, "lat=10 for=60");
	assert_int_equal(vjson_get(root, "paused")->n, 0);

	vjson_free(root);
	close(fd);
	free(body);
	vfab_qp_free(r, qp);
	vfab_region_close(r);
}

/* The reader refuses what is not JSON (the test above must be able to fail). */
static void test_reader_refuses(void **state)
{
	static const char *const bad[] = {
	    "",	  "{",	 "{\"a\":}",	"[1,]", "{\"a\" 1}",
	    "01", "\"x", "{\"a\":1} x", "nul",	"[\"\\q\"]",
	};
	char err[128];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct vjson *v = vjson_parse(bad[i], strlen(bad[i]), err, sizeof(err));

		if (v)
			fail_msg("'%s' parsed", bad[i]);
		assert_true(err[0] != '\0');
	}
	const char *good = "{\"a\":[1,2.5,\"\\u00e9\"],\"b\":18446744073709551615}";
	struct vjson *v = vjson_parse(good, strlen(good), err, sizeof(err));

	assert_non_null(v);
	assert_int_equal(vjson_get(v, "a")->n, 3);
	assert_string_equal(vjson_get(v, "a")->child->next->next->str, "\xc3\xa9");
	assert_true(vjson_get(v, "b")->is_uint);
	assert_true(vjson_get(v, "b")->u == UINT64_MAX);
	vjson_free(v);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_report_schema, setup, teardown),
	    cmocka_unit_test(test_reader_refuses),
	};

	if (!getenv("VFABD")) {
		fprintf(stderr, "VFABD (path of the vfabd binary) is not set\n");
		return 1;
	}
	atexit(fx_cleanup);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
