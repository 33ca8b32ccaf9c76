/* SPDX-License-Identifier: MIT */
/* verbs_errors: moving bytes to another process, then killing it (see verbs_errors.c). */
#include "verbs_harness.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int peer_main(void)
{
	struct side s;
	struct conn c;
	unsigned int qpn;
	char line[128];
	struct ibv_wc wc;
	struct ibv_sge r;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	for (int i = 0; i < 4096; i++)
		s.buf[32768 + i] = (char)(255 - i);
	printf("%u %u %lu\n", s.qp->qp_num, s.mr->rkey, (unsigned long)(uintptr_t)s.buf);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || sscanf(line, "%u", &qpn) != 1)
		return 2;
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	if (rc_connect(s.qp, &c))
		return 2;
	r = sge_of(&s, 4096, 4096);
	post_recv(&s, 1, &r, 1);
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		bool ok = false;

		if (!strncmp(line, "check-write", 11))
			ok = s.buf[0] == 'W' && s.buf[2047] == 'W' && s.buf[2048] == 0;
		else if (!strncmp(line, "check-send", 10))
			ok = !wait_wc(s.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
			     wc.byte_len == 3000 && s.buf[4096] == 'S' && s.buf[4096 + 2999] == 'S';
		puts(ok ? "ok" : "bad");
		fflush(stdout);
	}
	return 0;
}

void test_cross_process(const char *self)
{
	int to_peer[2], from_peer[2], status;
	unsigned int qpn, rkey;
	unsigned long addr;
	char line[128], gidx[16];
	struct side a;
	struct conn c;
	struct ibv_sge g;
	struct ibv_wc wc;
	FILE *in, *out;
	pid_t pid;
	double t0;

	if (pipe(to_peer) || pipe(from_peer))
		die("pipe");
	snprintf(gidx, sizeof(gidx), "%d", gid_index);
	pid = fork();
	if (pid == 0) {
		dup2(to_peer[0], 0);
		dup2(from_peer[1], 1);
		execl(self, self, "--peer", "-d", ibv_get_device_name(dev), "-g", gidx,
		      (char *)NULL);
		_exit(127);
	}
	close(to_peer[0]);
	close(from_peer[1]);
	out = fdopen(to_peer[1], "w");
	in = fdopen(from_peer[0], "r");
	if (!fgets(line, sizeof(line), in) || sscanf(line, "%u %u %lu", &qpn, &rkey, &addr) != 3)
		die("peer start");
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	c.timeout = 10; /* 4.2 ms */
	c.retry_cnt = 2;
	if (rc_connect(a.qp, &c))
		die("connect to peer");
	fprintf(out, "%u\n", a.qp->qp_num);
	fflush(out);
	if (!fgets(line, sizeof(line), in))
		die("peer ready");

	memset(a.buf, 'W', 2048);
	g = sge_of(&a, 0, 2048);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE to another process completes", IBV_WC_SUCCESS, 1000);
	fputs("check-write\n", out);
	fflush(out);
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "WRITE bytes arrive in the other process", "peer says %s", line);

	memset(a.buf, 'S', 3000);
	g = sge_of(&a, 0, 3000);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "SEND to another process completes", IBV_WC_SUCCESS, 1000);
	fputs("check-send\n", out);
	fflush(out);
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "SEND bytes and completion arrive in the other process", "peer says %s", line);

	g = sge_of(&a, 8192, 4096);
	post(&a, IBV_WR_RDMA_READ, &g, 1, addr + 32768, rkey, IBV_SEND_SIGNALED);
	check(!wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  (unsigned char)a.buf[8192] == 255 && (unsigned char)a.buf[8192 + 4095] == 0,
	      "READ from another process", "wrong READ completion or data");

	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	g = sge_of(&a, 0, 64);
	t0 = now_ms();
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	expect_wc(a.cq, "WRITE to a killed peer -> RETRY_EXC_ERR", IBV_WC_RETRY_EXC_ERR, 5000);
	check(now_ms() - t0 < 1000, "the survivor is not held up", "took %.1f ms", now_ms() - t0);
	fclose(in);
	fclose(out);
	side_close(&a);
}
