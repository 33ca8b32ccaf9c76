/* SPDX-License-Identifier: MIT */
/*
 * psn_check [-d DEV] [-g GID_INDEX]: RC connections whose two ends disagree
 * fail the way hardware makes them fail. Two contexts of one device in one
 * process (no network exchange needed: both ends are known here):
 *  - matching PSNs and QPNs: RDMA WRITEs complete and the bytes arrive;
 *  - the requester's sq_psn ahead of the responder's rq_psn: the responder
 *    sees a PSN sequence error and never acknowledges the request, so the
 *    requester's ACK timer runs out retry_cnt + 1 times and the WR completes
 *    with IBV_WC_RETRY_EXC_ERR (12), nothing written;
 *  - a dest QPN that no QP has: no answer at all, the same error;
 *  - the requester's sq_psn BEHIND the responder's rq_psn: every request is
 *    a duplicate (IBA 9.9.3.1). A WRITE and a SEND are acknowledged but not
 *    executed: they complete with success at once, yet no byte arrives, no
 *    receive completes and the posted receive stays posted (it is flushed
 *    when the responder's QP is moved to ERR); a READ is executed again and
 *    returns the bytes; a FETCH_ADD, which a responder answers only from the
 *    original's saved result, gets no answer: IBV_WC_RETRY_EXC_ERR, the
 *    target unchanged. The port's hw_counters/duplicate_request (refreshed
 *    by vfabd every 250 ms) grows by at least the WRITE, SEND and READ.
 * The time to that error is what timeout and retry_cnt imply: (retry_cnt + 1)
 * tries of 4.096 us * 2^timeout each; IB lets an HCA's timer run up to four
 * times the nominal value, plus a margin for scheduling here.
 *
 * One "ok NAME" / "FAIL NAME: why" line per check. Exit: 0 all ok, 1 a check
 * failed, 2 set-up failure.
 */
#include <errno.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BUF 4096
#define PSN_BASE 0x1000u
#define SCHED_MARGIN_MS 100.0
#define RECV_WR_ID 0x5ec
#define ACCESS                                                                                     \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |               \
	 IBV_ACCESS_REMOTE_ATOMIC)

struct end {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char *buf;
	union ibv_gid gid;
};

/* What one connection of the pair is set up with (requester a -> responder b). */
struct params {
	uint32_t a_sq_psn, b_rq_psn;
	uint32_t dest_qpn; /* 0: b's real QPN */
	uint8_t timeout, retry_cnt;
};

static struct ibv_device *dev;
static int gid_index = 3;
static int failures;

static void die(const char *what)
{
	fprintf(stderr, "psn_check: %s: %s\n", what, strerror(errno));
	exit(2);
}

static bool check(bool ok, const char *name, const char *why)
{
	if (ok)
		printf("ok %s\n", name);
	else
		printf("FAIL %s: %s\n", name, why);
	failures += !ok;
	return ok;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void end_open(struct end *e)
{
	struct ibv_qp_init_attr qa = {
	    .qp_type = IBV_QPT_RC,
	    .sq_sig_all = 1,
	    .cap = {.max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1}};

	memset(e, 0, sizeof(*e));
	e->ctx = ibv_open_device(dev);
	if (!e->ctx)
		die("ibv_open_device");
	if (ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		die("ibv_query_gid");
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = e->pd ? ibv_create_cq(e->ctx, 16, NULL, NULL, 0) : NULL;
	e->buf = calloc(1, BUF);
	if (!e->cq || !e->buf)
		die("PD/CQ/buffer");
	e->mr = ibv_reg_mr(e->pd, e->buf, BUF, ACCESS);
	if (!e->mr)
		die("ibv_reg_mr");
	qa.send_cq = qa.recv_cq = e->cq;
	e->qp = ibv_create_qp(e->pd, &qa);
	if (!e->qp)
		die("ibv_create_qp");
}

static void end_close(struct end *e)
{
	ibv_destroy_qp(e->qp);
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);
	free(e->buf);
}

/* INIT -> RTR (towards peer_gid/dest_qpn, expecting rq_psn) -> RTS (sending from sq_psn). */
static int connect_qp(struct end *e, const union ibv_gid *peer_gid, uint32_t dest_qpn,
		      uint32_t rq_psn, uint32_t sq_psn, uint8_t timeout, uint8_t retry_cnt)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_INIT, .port_num = 1, .qp_access_flags = ACCESS};

	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *peer_gid;
	a.ah_attr.grh.sgid_index = (uint8_t)gid_index;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	if (ibv_modify_qp(e->qp, &a,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			      IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return -1;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = timeout;
	a.retry_cnt = retry_cnt;
	a.rnr_retry = 0;
	a.max_rd_atomic = 1;
	return ibv_modify_qp(e->qp, &a,
			     IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				 IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

/* Posts wr on a's QP and waits up to wait_ms for its completion. */
static int post_wait(struct end *a, struct ibv_send_wr *wr, struct ibv_wc *wc, double *elapsed_ms,
		     int wait_ms)
{
	struct ibv_send_wr *bad;
	double t0 = now_ms();
	int n;

	if (ibv_post_send(a->qp, wr, &bad))
		return -1;
	do {
		n = ibv_poll_cq(a->cq, 1, wc);
		*elapsed_ms = now_ms() - t0;
	} while (n == 0 && *elapsed_ms < wait_ms);
	return n == 1 ? 0 : -1;
}

/* One signaled RDMA WRITE of len bytes from a's buffer to b's; its completion. */
static int write_once(struct end *a, struct end *b, uint32_t len, struct ibv_wc *wc,
		      double *elapsed_ms, int wait_ms)
{
	struct ibv_sge sge = {.addr = (uintptr_t)a->buf, .length = len, .lkey = a->mr->lkey};
	struct ibv_send_wr wr = {
	    .wr_id = 7,
	    .sg_list = &sge,
	    .num_sge = 1,
	    .opcode = IBV_WR_RDMA_WRITE,
	    .send_flags = IBV_SEND_SIGNALED,
	    .wr.rdma = {.remote_addr = (uintptr_t)b->buf, .rkey = b->mr->rkey}};

	return post_wait(a, &wr, wc, elapsed_ms, wait_ms);
}

/*
 * Connects a fresh pair with p, writes once; checks the status, the time
 * it took (for an error: the retry window) and whether b's buffer changed.
 */
static void run_case(const char *name, const struct params *p, enum ibv_wc_status want)
{
	double nominal = (p->retry_cnt + 1) * 4.096e-3 * (double)(1u << p->timeout);
	struct end a, b;
	struct ibv_wc wc;
	double ms = 0;
	char why[256], check_name[160];
	bool arrived;

	end_open(&a);
	end_open(&b);
	if (connect_qp(&a, &b.gid, p->dest_qpn ? p->dest_qpn : b.qp->qp_num, PSN_BASE, p->a_sq_psn,
		       p->timeout, p->retry_cnt) ||
	    connect_qp(&b, &a.gid, a.qp->qp_num, p->b_rq_psn, PSN_BASE, p->timeout, p->retry_cnt))
		die("connecting the QPs");
	memset(a.buf, 0x5a, BUF);
	if (write_once(&a, &b, 256, &wc, &ms, (int)(4 * nominal + 2000))) {
		snprintf(why, sizeof(why), "no completion within %.0f ms", 4 * nominal + 2000);
		check(false, name, why);
		goto out;
	}
	arrived = b.buf[0] == 0x5a && b.buf[255] == 0x5a;
	snprintf(why, sizeof(why), "status %s (%d), expected %s (%d), after %.1f ms",
		 ibv_wc_status_str(wc.status), wc.status, ibv_wc_status_str(want), want, ms);
	check(wc.status == want, name, why);
	snprintf(check_name, sizeof(check_name), "%s: data %s", name,
		 want == IBV_WC_SUCCESS ? "arrived" : "not written");
	check(arrived == (want == IBV_WC_SUCCESS), check_name,
	      arrived ? "the responder's buffer changed" : "the responder's buffer is unchanged");
	if (want != IBV_WC_SUCCESS) {
		double lo = 0.9 * nominal, hi = 4 * nominal + SCHED_MARGIN_MS;

		snprintf(
		    check_name, sizeof(check_name),
		    "%s: after %.1f ms, nominal (retry_cnt %u + 1) x 4.096 us x 2^%u = %.1f ms",
		    name, ms, p->retry_cnt, p->timeout, nominal);
		snprintf(why, sizeof(why), "took %.1f ms, expected %.1f..%.1f ms", ms, lo, hi);
		check(ms >= lo && ms <= hi, check_name, why);
	} else if (wc.status == IBV_WC_SUCCESS) {
		/* The connection goes on: the next WRITE carries the next PSN. */
		snprintf(check_name, sizeof(check_name), "%s: a second WRITE", name);
		check(!write_once(&a, &b, 64, &wc, &ms, 2000) && wc.status == IBV_WC_SUCCESS,
		      check_name, "did not complete successfully");
	}
out:
	end_close(&a);
	end_close(&b);
}

/* The port's hw_counters/duplicate_request as the node's sysfs shows it; -1 unreadable. */
static long long duplicate_requests(void)
{
	char path[256];
	long long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/class/infiniband/%s/ports/1/hw_counters/duplicate_request",
		 ibv_get_device_name(dev));
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

/* Any completion on e's CQ within ms milliseconds? */
static bool completes_within(struct end *e, double ms, struct ibv_wc *wc)
{
	double t0 = now_ms();

	do {
		if (ibv_poll_cq(e->cq, 1, wc) == 1)
			return true;
	} while (now_ms() - t0 < ms);
	return false;
}

/* a's WR on the duplicate path: success, and long before a retry could have happened. */
static void check_acked(const char *name, const char *op, int rc, const struct ibv_wc *wc,
			double ms, double nominal)
{
	char check_name[160], why[160];

	snprintf(check_name, sizeof(check_name), "%s: duplicate %s completes with success", name,
		 op);
	if (rc)
		snprintf(why, sizeof(why), "no completion");
	else
		snprintf(why, sizeof(why),
			 "status %s (%d) after %.1f ms, expected success within %.1f ms",
			 ibv_wc_status_str(wc->status), wc->status, ms, nominal / 2);
	check(!rc && wc->status == IBV_WC_SUCCESS && ms < nominal / 2, check_name, why);
}

/*
 * The requester's sq_psn behind the responder's rq_psn: a WRITE, a SEND, a
 * READ and a FETCH_ADD on one connection, all in the duplicate region.
 */
static void behind_case(const char *name, uint32_t a_sq_psn, uint32_t b_rq_psn)
{
	const uint8_t timeout = 14, retry_cnt = 2;
	double nominal = (retry_cnt + 1) * 4.096e-3 * (double)(1u << timeout);
	struct ibv_sge sge = {.lkey = 0};
	struct ibv_send_wr wr = {.sg_list = &sge, .num_sge = 1, .send_flags = IBV_SEND_SIGNALED};
	struct ibv_sge rsge;
	struct ibv_recv_wr rwr = {.wr_id = RECV_WR_ID, .sg_list = &rsge, .num_sge = 1}, *rbad;
	char check_name[160], why[160];
	long long before, after = -1;
	uint64_t target = 41, seen;
	struct end a, b;
	struct ibv_wc wc;
	double ms = 0, t0;
	int rc;

	end_open(&a);
	end_open(&b);
	if (connect_qp(&a, &b.gid, b.qp->qp_num, PSN_BASE, a_sq_psn, timeout, retry_cnt) ||
	    connect_qp(&b, &a.gid, a.qp->qp_num, b_rq_psn, PSN_BASE, timeout, retry_cnt))
		die("connecting the QPs");
	memset(a.buf, 0x5a, BUF);
	memset(b.buf + 1024, 0xc3, 256);
	memcpy(b.buf + 3072, &target, sizeof(target));
	rsge = (struct ibv_sge){(uintptr_t)(b.buf + 2048), 256, b.mr->lkey};
	if (ibv_post_recv(b.qp, &rwr, &rbad))
		die("ibv_post_recv");
	/* Whatever the port counted before has reached sysfs after one refresh. */
	usleep(300 * 1000);
	before = duplicate_requests();
	sge.lkey = a.mr->lkey;

	/* WRITE of 256 bytes to b's buffer [0, 256). */
	sge.addr = (uintptr_t)a.buf;
	sge.length = 256;
	wr.wr_id = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)b.buf;
	wr.wr.rdma.rkey = b.mr->rkey;
	rc = post_wait(&a, &wr, &wc, &ms, (int)(4 * nominal + 2000));
	check_acked(name, "WRITE", rc, &wc, ms, nominal);
	snprintf(check_name, sizeof(check_name), "%s: duplicate WRITE not executed", name);
	check(b.buf[0] == 0 && b.buf[255] == 0, check_name, "the responder's buffer changed");

	/* SEND of 64 bytes: b's receive must stay posted. */
	sge.length = 64;
	wr.wr_id = 2;
	wr.opcode = IBV_WR_SEND;
	rc = post_wait(&a, &wr, &wc, &ms, (int)(4 * nominal + 2000));
	check_acked(name, "SEND", rc, &wc, ms, nominal);
	snprintf(check_name, sizeof(check_name), "%s: duplicate SEND delivers nothing", name);
	snprintf(why, sizeof(why), "the receiver got a completion (status %d, byte_len %u)",
		 wc.status, wc.byte_len);
	check(!completes_within(&b, 200, &wc) && b.buf[2048] == 0, check_name, why);

	/* READ of b's [1024, 1280) into a's [1024, 1280). */
	sge.addr = (uintptr_t)(a.buf + 1024);
	sge.length = 256;
	wr.wr_id = 3;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)(b.buf + 1024);
	rc = post_wait(&a, &wr, &wc, &ms, (int)(4 * nominal + 2000));
	check_acked(name, "READ", rc, &wc, ms, nominal);
	snprintf(check_name, sizeof(check_name), "%s: duplicate READ returns the remote bytes",
		 name);
	check((uint8_t)a.buf[1024] == 0xc3 && (uint8_t)a.buf[1279] == 0xc3, check_name,
	      "the local buffer did not receive them");

	/* FETCH_ADD on b's [3072, 3080): no answer without the original's result. */
	sge.addr = (uintptr_t)(a.buf + 3072);
	sge.length = 8;
	wr.wr_id = 4;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)(b.buf + 3072);
	wr.wr.atomic.rkey = b.mr->rkey;
	wr.wr.atomic.compare_add = 1;
	rc = post_wait(&a, &wr, &wc, &ms, (int)(4 * nominal + 2000));
	snprintf(check_name, sizeof(check_name), "%s: duplicate FETCH_ADD ends in RETRY_EXC_ERR",
		 name);
	if (rc)
		snprintf(why, sizeof(why), "no completion");
	else
		snprintf(why, sizeof(why), "status %s (%d) after %.1f ms",
			 ibv_wc_status_str(wc.status), wc.status, ms);
	check(!rc && wc.status == IBV_WC_RETRY_EXC_ERR && ms >= 0.9 * nominal, check_name, why);
	memcpy(&seen, b.buf + 3072, sizeof(seen));
	snprintf(check_name, sizeof(check_name), "%s: duplicate FETCH_ADD not executed", name);
	snprintf(why, sizeof(why), "the target is %llu, was 41", (unsigned long long)seen);
	check(seen == target, check_name, why);

	/* The receive the SEND did not consume is flushed when b's QP breaks. */
	snprintf(check_name, sizeof(check_name), "%s: the receive is still posted", name);
	if (ibv_modify_qp(b.qp, &(struct ibv_qp_attr){.qp_state = IBV_QPS_ERR}, IBV_QP_STATE))
		die("modifying the responder's QP to ERR");
	rc = completes_within(&b, 1000, &wc);
	if (rc)
		snprintf(why, sizeof(why), "wr_id 0x%llx status %s, expected 0x%x WR_FLUSH_ERR",
			 (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status), RECV_WR_ID);
	else
		snprintf(why, sizeof(why), "no flush completion");
	check(rc && wc.wr_id == RECV_WR_ID && wc.status == IBV_WC_WR_FLUSH_ERR, check_name, why);

	/* WRITE, SEND and READ at least (the FETCH_ADD's tries count too). */
	for (t0 = now_ms(); now_ms() - t0 < 2000; usleep(50 * 1000)) {
		after = duplicate_requests();
		if (before >= 0 && after >= before + 3)
			break;
	}
	snprintf(check_name, sizeof(check_name), "%s: hw_counters/duplicate_request grew", name);
	snprintf(why, sizeof(why), "from %lld to %lld, expected +3 or more", before, after);
	check(before >= 0 && after >= before + 3, check_name, why);
	end_close(&a);
	end_close(&b);
}

int main(int argc, char **argv)
{
	const char *devname = NULL;
	struct ibv_device **list;
	int ch, i;

	while ((ch = getopt(argc, argv, "d:g:h")) != -1) {
		switch (ch) {
		case 'd':
			devname = optarg;
			break;
		case 'g':
			gid_index = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-g GID_INDEX (default 3)]\n", argv[0]);
			return ch == 'h' ? 0 : 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	list = ibv_get_device_list(NULL);
	if (!list)
		die("ibv_get_device_list");
	for (i = 0; list[i]; i++)
		if (!devname || !strcmp(ibv_get_device_name(list[i]), devname))
			break;
	dev = list[i];
	if (!dev) {
		fprintf(stderr, "psn_check: device %s not found\n", devname ? devname : "(any)");
		return 2;
	}

	run_case("matched PSNs", &(struct params){PSN_BASE, PSN_BASE, 0, 10, 2}, IBV_WC_SUCCESS);
	run_case("sq_psn ahead of rq_psn (timeout 10, retry_cnt 2)",
		 &(struct params){PSN_BASE + 0x100, PSN_BASE, 0, 10, 2}, IBV_WC_RETRY_EXC_ERR);
	run_case("sq_psn ahead of rq_psn (timeout 14, retry_cnt 1)",
		 &(struct params){PSN_BASE + 0x100, PSN_BASE, 0, 14, 1}, IBV_WC_RETRY_EXC_ERR);
	run_case("wrong dest QPN (timeout 10, retry_cnt 2)",
		 &(struct params){PSN_BASE, PSN_BASE, 0x7ffffe, 10, 2}, IBV_WC_RETRY_EXC_ERR);
	behind_case("sq_psn behind rq_psn", PSN_BASE - 0x100, PSN_BASE);
	behind_case("sq_psn behind rq_psn across the 24-bit wrap", 0xffff80u, 0x40u);
	ibv_free_device_list(list);
	printf("%d check(s) failed\n", failures);
	return failures ? 1 : 0;
}
