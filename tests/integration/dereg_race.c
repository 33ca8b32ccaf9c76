/* SPDX-License-Identifier: MIT */
/*
 * dereg_race -d DEV -g GID [-n RUNS] [-s]: nothing lands in a buffer after
 * ibv_dereg_mr returned (issue 10, finding 6). Process A streams 1 MiB RDMA
 * WRITEs of 'A' into process B's registered buffer; B deregisters it at a
 * random moment, at once fills the buffer with 'B', and once A's WRITEs have
 * all completed (the later ones with REM_ACCESS_ERR) checks that every byte
 * is still 'B'. As on an HCA, deregistration must wait for copies already
 * past the remote check. Both QPs are reset and reconnected between runs.
 * With -s A streams 1 MiB SENDs instead, into receives B posted on the
 * buffer (the receive side's check, not the R_Key's, is passed).
 * Exit 0 pass, 1 a write landed late, 2 set-up failure.
 */
#include "verbs_harness.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG (1u << 20)
/* Receives B posts on its buffer per run (-s); A keeps at most 4 SENDs out. */
#define RECVS 16

static bool sends;

static void put(int fd, const char *s)
{
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		die("pipe write");
}

/* One line (without its newline) from a pipe, a byte at a time. */
static void get(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n + 1 < len && read(fd, buf + n, 1) == 1 && buf[n] != '\n')
		n++;
	buf[n] = '\0';
}

static int reconnect(struct ibv_qp *qp, uint32_t dest)
{
	struct ibv_qp_attr a = {.qp_state = IBV_QPS_RESET};
	struct conn c = conn_to(NULL);

	c.dest_qpn = dest;
	c.timeout = 10;
	c.retry_cnt = 1;
	c.rnr_retry = 1; /* -s: A may use up B's receives before B deregisters */
	return ibv_modify_qp(qp, &a, IBV_QP_STATE) || rc_connect(qp, &c);
}

static void spin_us(long us)
{
	double end = now_ms() + (double)us / 1000.0;

	while (now_ms() < end)
		;
}

/* B: registers, deregisters under fire, checks. */
static int side_b(int in, int out, int runs)
{
	struct side s;
	char line[128], *buf = NULL;
	unsigned int qpn;
	int late = 0;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	if (posix_memalign((void **)&buf, 4096, MSG))
		die("memalign");
	snprintf(line, sizeof(line), "%u\n", s.qp->qp_num);
	put(out, line);
	get(in, line, sizeof(line));
	qpn = (unsigned int)strtoul(line, NULL, 10);
	if (reconnect(s.qp, qpn))
		die("B connect");
	srand(12345);
	for (int run = 0; run < runs; run++) {
		struct ibv_mr *mr;

		memset(buf, 0, MSG);
		mr = ibv_reg_mr(s.pd, buf, MSG, RW);
		if (!mr)
			die("reg");
		for (int i = 0; sends && i < RECVS; i++) {
			struct ibv_sge g = {
			    .addr = (uintptr_t)buf, .length = MSG, .lkey = mr->lkey};

			if (post_recv(&s, (uint64_t)i, &g, 1))
				die("B post_recv");
		}
		snprintf(line, sizeof(line), "%u %lu\n", mr->rkey, (unsigned long)(uintptr_t)buf);
		put(out, line);
		get(in, line, sizeof(line)); /* "streaming" */
		spin_us(rand() % 400);
		if (ibv_dereg_mr(mr))
			die("dereg");
		memset(buf, 'B', MSG);
		put(out, "d\n");
		get(in, line, sizeof(line)); /* "w": every WRITE completed */
		for (size_t i = 0; i < MSG; i++)
			if (buf[i] != 'B') {
				late++;
				break;
			}
		if (reconnect(s.qp, qpn))
			die("B reconnect");
		for (struct ibv_wc wc; ibv_poll_cq(s.cq, 1, &wc) > 0;)
			; /* the receives' completions and flushes */
		put(out, "r\n");
	}
	printf("%s %d of %d runs: a %s landed after ibv_dereg_mr returned\n", late ? "FAIL" : "ok",
	       late, runs, sends ? "SEND" : "WRITE");
	fflush(stdout);
	return late ? 1 : 0;
}

/* A: streams WRITEs until B says it deregistered, then drains. */
static void side_a(int in, int out, int runs)
{
	struct ibv_sge g;
	struct side s;
	struct ibv_mr *mr;
	char line[128], *buf = NULL;
	unsigned int qpn, rkey;
	unsigned long addr;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	if (posix_memalign((void **)&buf, 4096, MSG))
		die("memalign");
	memset(buf, 'A', MSG);
	mr = ibv_reg_mr(s.pd, buf, MSG, RW);
	if (!mr)
		die("A reg");
	g = (struct ibv_sge){.addr = (uintptr_t)buf, .length = MSG, .lkey = mr->lkey};
	get(in, line, sizeof(line));
	qpn = (unsigned int)strtoul(line, NULL, 10);
	snprintf(line, sizeof(line), "%u\n", s.qp->qp_num);
	put(out, line);
	if (reconnect(s.qp, qpn))
		die("A connect");
	for (int run = 0; run < runs; run++) {
		int posted = 0, done = 0;
		struct ibv_wc wc;
		bool stop = false;

		get(in, line, sizeof(line));
		if (sscanf(line, "%u %lu", &rkey, &addr) != 2)
			die("B's key");
		put(out, "s\n");
		/* Non-blocking look at the pipe: stop posting once B deregistered. */
		while (!stop) {
			struct timespec zero = {0};
			fd_set fds;

			while (ibv_poll_cq(s.cq, 1, &wc) > 0)
				done++;
			if (posted - done < 4 && post(&s, sends ? IBV_WR_SEND : IBV_WR_RDMA_WRITE,
						      &g, 1, addr, rkey, IBV_SEND_SIGNALED) == 0)
				posted++;
			FD_ZERO(&fds);
			FD_SET(in, &fds);
			stop = pselect(in + 1, &fds, NULL, NULL, &zero, NULL) > 0;
		}
		get(in, line, sizeof(line)); /* "d" */
		while (done < posted)
			if (wait_wc(s.cq, &wc, 5000) == 0)
				done++;
			else
				die("a WRITE never completed");
		put(out, "w\n");
		get(in, line, sizeof(line)); /* "r" */
		if (reconnect(s.qp, qpn))
			die("A reconnect");
	}
}

int main(int argc, char **argv)
{
	int to_b[2], to_a[2], opt, runs = 200, status;
	struct ibv_device **list;
	struct ibv_context *ctx;
	const char *want = NULL;
	pid_t b;

	while ((opt = getopt(argc, argv, "d:g:n:s")) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 'n')
			runs = atoi(optarg);
		else if (opt == 's')
			sends = true;
		else
			return fprintf(stderr, "usage: %s -d DEV -g GID [-n RUNS] [-s]\n", argv[0]),
			       2;
	}
	list = ibv_get_device_list(NULL);
	for (int i = 0; list && list[i]; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want)) {
			dev = list[i];
			break;
		}
	if (!dev)
		die("device not found");
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_gid(ctx, PORT, gid_index, &gid))
		die("device or GID");
	ibv_close_device(ctx);
	if (pipe(to_b) || pipe(to_a))
		die("pipe");
	fflush(stdout);
	b = fork();
	if (b == 0)
		_exit(side_b(to_b[0], to_a[1], runs));
	side_a(to_a[0], to_b[1], runs);
	waitpid(b, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 2;
}
