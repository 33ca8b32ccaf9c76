/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors: every error counter vfab keeps counts its event, read from
 * the port's hw_counters/ as tools read it (both QPs of a pair are on the
 * same port, so the requester's and the responder's counters add up there).
 * Each scenario provokes one event and compares every counter's change with
 * what a ConnectX counts for it, the others included (they must not move).
 */
#include "verbs_harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const names[] = {
    "out_of_buffer",
    "req_cqe_error",
    "req_cqe_flush_error",
    "req_remote_access_errors",
    "req_remote_invalid_request",
    "req_transport_retries_exceeded",
    "req_rnr_retries_exceeded",
    "resp_cqe_error",
    "resp_cqe_flush_error",
    "resp_local_length_error",
    "resp_remote_access_errors",
    "rnr_nak_retry_err",
};
#define NC (sizeof(names) / sizeof(names[0]))

struct snap {
	long long v[NC];
};

static long long read_counter(const char *name)
{
	char path[512], text[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%d/hw_counters/%s",
		 ibv_get_device_name(dev), PORT, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (!fgets(text, sizeof(text), f))
		text[0] = '\0';
	fclose(f);
	return text[0] ? atoll(text) : -1;
}

static void take(struct snap *s)
{
	for (size_t i = 0; i < NC; i++)
		s->v[i] = read_counter(names[i]);
}

/*
 * The baseline, once the events of the tests before have reached the files
 * (a daemon that refreshes them on a tick writes them up to a tick late):
 * two reads 300 ms apart that agree.
 */
static void settle(struct snap *s)
{
	struct snap again;

	take(s);
	for (int i = 0; i < 10; i++) {
		usleep(300000);
		take(&again);
		if (!memcmp(&again, s, sizeof(again)))
			return;
		*s = again;
	}
}

/*
 * want[] is "name=delta,...": those change by exactly that much, the others
 * not at all. Counters a daemon refreshes on a tick may lag: re-read for up
 * to 2 s until they match.
 */
static void expect(const struct snap *before, const char *what, const char *want)
{
	long long d[NC] = {0};
	char buf[256], *tok, *save = NULL, got[512];
	struct snap now;
	bool ok = false;
	size_t n;

	snprintf(buf, sizeof(buf), "%s", want);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		for (size_t i = 0; eq && i < NC; i++)
			if (!strncmp(tok, names[i], (size_t)(eq - tok)) &&
			    strlen(names[i]) == (size_t)(eq - tok))
				d[i] = atoll(eq + 1);
	}
	for (int tries = 0; tries < 40 && !ok; tries++) {
		if (tries)
			usleep(50000);
		take(&now);
		ok = true;
		for (size_t i = 0; i < NC; i++)
			ok = ok && now.v[i] >= 0 && now.v[i] - before->v[i] == d[i];
	}
	n = 0;
	got[0] = '\0';
	for (size_t i = 0; i < NC && n < sizeof(got); i++)
		if (now.v[i] != before->v[i])
			n += (size_t)snprintf(got + n, sizeof(got) - n, " %s+%lld", names[i],
					      now.v[i] - before->v[i]);
	check(ok, what, "want %s; changed:%s", want, n ? got : " none");
}

void test_error_counters(void)
{
	struct side a, b;
	struct conn c;
	struct ibv_sge g, r;
	struct snap s;
	struct ibv_qp_attr err = {.qp_state = IBV_QPS_ERR};

	settle(&s);
	pair_open(&a, &b, ALL, NULL);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, (uintptr_t)b.buf, b.mr->rkey ^ 0x100, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "counters: WRITE with a bad rkey", IBV_WC_REM_ACCESS_ERR, 1000);
	pair_close(&a, &b);
	expect(&s, "counters: a bad rkey",
	       "req_cqe_error=1,req_remote_access_errors=1,resp_remote_access_errors=1");

	settle(&s);
	pair_open(&a, &b, ALL, NULL);
	r = sge_of(&b, 0, 16);
	post_recv(&b, 1, &r, 1);
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "counters: SEND into a too small receive", IBV_WC_REM_INV_REQ_ERR, 1000);
	expect_wc(b.cq, "counters: the too small receive", IBV_WC_LOC_LEN_ERR, 1000);
	pair_close(&a, &b);
	expect(&s, "counters: a too long SEND",
	       "req_cqe_error=1,req_remote_invalid_request=1,resp_cqe_error=1,"
	       "resp_local_length_error=1");

	/* RNR: the first attempt and one retry find no receive WQE. */
	settle(&s);
	side_open(&b, ALL);
	qp_open(&b, IBV_QPT_RC);
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(b.qp);
	c.rnr_retry = 1;
	c.min_rnr_timer = 1;
	if (rc_connect(a.qp, &c))
		die("connect");
	c = conn_to(a.qp);
	c.min_rnr_timer = 1;
	if (rc_connect(b.qp, &c))
		die("connect");
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "counters: SEND with no receive", IBV_WC_RNR_RETRY_EXC_ERR, 2000);
	pair_close(&a, &b);
	expect(&s, "counters: RNR retries exceeded",
	       "out_of_buffer=2,rnr_nak_retry_err=1,req_cqe_error=1,req_rnr_retries_exceeded=1");

	/* Flushes: two receives and one send of QPs moved to ERR. */
	settle(&s);
	pair_open(&a, &b, ALL, NULL);
	r = sge_of(&b, 0, 64);
	post_recv(&b, 2, &r, 1);
	post_recv(&b, 3, &r, 1);
	if (ibv_modify_qp(b.qp, &err, IBV_QP_STATE) || ibv_modify_qp(a.qp, &err, IBV_QP_STATE))
		die("modify to ERR");
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "counters: a send on an ERR QP", IBV_WC_WR_FLUSH_ERR, 1000);
	expect_wc(b.cq, "counters: receive 1 of an ERR QP", IBV_WC_WR_FLUSH_ERR, 1000);
	expect_wc(b.cq, "counters: receive 2 of an ERR QP", IBV_WC_WR_FLUSH_ERR, 1000);
	pair_close(&a, &b);
	expect(&s, "counters: flushes", "req_cqe_flush_error=1,resp_cqe_flush_error=2");

	/* Transport retries: a QPN nothing answers, timeout 8 (1 ms), one retry. */
	settle(&s);
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = 0x7fffff;
	c.timeout = 8;
	c.retry_cnt = 1;
	if (rc_connect(a.qp, &c))
		die("connect");
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, 0x1000, 0x1234, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "counters: WRITE nobody answers", IBV_WC_RETRY_EXC_ERR, 5000);
	side_close(&a);
	expect(&s, "counters: transport retries exceeded",
	       "req_cqe_error=1,req_transport_retries_exceeded=1");
}
