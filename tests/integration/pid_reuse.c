/* SPDX-License-Identifier: MIT */
/*
 * pid_reuse -d DEV -g GID --stop PID: an RDMA WRITE must never land in a
 * process that merely inherited a dead peer's pid (issue 10, finding 3).
 *
 * A peer B registers a buffer and is connected to this process A; vfabd
 * (PID) is stopped, so nothing frees B's slots when it dies, as when vfabd
 * is dead. A 64 KiB WRITE to B lands (sanity); B is killed and a stand-in C
 * is created with B's pid (clone3 set_tid) and memory mapped at B's buffer
 * address, filled with 0xC3. A then WRITEs there again: the WRITE must
 * complete with an error (nobody answers: RETRY_EXC_ERR) and C's memory
 * must be untouched. Exit 0 pass, 1 fail, 2 set-up failure, 77 when the pid
 * cannot be had again (no CAP_SYS_ADMIN, kernel without set_tid).
 *
 * Before that, with vfabd already stopped (finding 7): a SEND that waits
 * for a receive (RNR, rnr_retry 7 = forever) on a second peer that is then
 * killed must end with RETRY_EXC_ERR, not wait forever.
 *
 * Last, the same for UD: a peer with receives posted on its buffer gets one
 * datagram (sanity), is killed and replaced by a stand-in with its pid; a
 * datagram to its QP, whose receives are still posted, must not land.
 */
#include "verbs_harness.h"

#include <errno.h>
#include <getopt.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define STAND_IN 0xC3

static pid_t vfabd_pid;

static void resume_vfabd(void)
{
	if (vfabd_pid > 0)
		kill(vfabd_pid, SIGCONT);
}

/* B: a plain peer that registers its buffer and waits to be killed. */
static void peer_b(int in, int out)
{
	struct side s;
	struct conn c;
	char line[128];
	unsigned int qpn;
	ssize_t n;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	n = snprintf(line, sizeof(line), "%u %u %lu\n", s.qp->qp_num, s.mr->rkey,
		     (unsigned long)(uintptr_t)s.buf);
	if (write(out, line, (size_t)n) != n)
		_exit(2);
	n = read(in, line, sizeof(line) - 1);
	if (n <= 0)
		_exit(2);
	line[n] = '\0';
	if (sscanf(line, "%u", &qpn) != 1)
		_exit(2);
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	if (rc_connect(s.qp, &c) || write(out, "r", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

#define QKEY 0x11111111

static void ud_up(struct ibv_qp *qp)
{
	struct ibv_qp_attr at = {.qp_state = IBV_QPS_INIT, .port_num = PORT, .qkey = QKEY};

	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY))
		die("UD to INIT");
	at.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE))
		die("UD to RTR");
	at.qp_state = IBV_QPS_RTS;
	if (ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_SQ_PSN))
		die("UD to RTS");
}

/*
 * B for UD: receives posted on its whole buffer; after A's first datagram
 * it says whether that one arrived, then waits to be killed.
 */
static void peer_ud(int in, int out)
{
	struct ibv_wc wc;
	struct side s;
	struct ibv_sge g;
	char line[128];
	ssize_t n;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_UD);
	ud_up(s.qp);
	g = sge_of(&s, 0, BUF);
	for (int i = 0; i < 4; i++)
		if (post_recv(&s, (uint64_t)i, &g, 1))
			_exit(2);
	n = snprintf(line, sizeof(line), "%u %lu\n", s.qp->qp_num, (unsigned long)(uintptr_t)s.buf);
	if (write(out, line, (size_t)n) != n || read(in, line, 1) != 1)
		_exit(2);
	n = !wait_wc(s.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS;
	if (write(out, n ? "y" : "n", 1) != 1)
		_exit(2);
	for (;;)
		pause();
}

/* C, right after clone3: only async-signal-safe calls (A has threads). */
static void stand_in(uintptr_t addr, int in, int out)
{
	unsigned char *p = mmap((void *)addr, BUF, PROT_READ | PROT_WRITE,
				MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char c;

	if (p == MAP_FAILED)
		_exit(2);
	memset(p, STAND_IN, BUF);
	if (write(out, "r", 1) != 1 || read(in, &c, 1) != 1)
		_exit(2);
	for (size_t i = 0; i < BUF; i++)
		if (p[i] != STAND_IN)
			_exit(1);
	_exit(0);
}

static pid_t clone_with_pid(pid_t want)
{
	pid_t tid = want;
	struct clone_args args = {
	    .exit_signal = SIGCHLD,
	    .set_tid = (uint64_t)(uintptr_t)&tid,
	    .set_tid_size = 1,
	};

	return (pid_t)syscall(SYS_clone3, &args, sizeof(args));
}

/*
 * With vfabd stopped (so nothing frees the peer's slots, as with vfabd
 * dead), kills peer b and starts a stand-in that takes its pid and maps
 * memory at addr; returns once the stand-in runs. -1: the pid could not be
 * taken again (the caller skips).
 */
static pid_t replace_peer(pid_t b, uintptr_t addr, const int to_c[2], const int from_c[2])
{
	pid_t cpid;
	int status;
	char ch;

	if (vfabd_pid > 0 && kill(vfabd_pid, SIGSTOP))
		die("stop vfabd");
	kill(b, SIGKILL);
	waitpid(b, &status, 0);
	cpid = clone_with_pid(b);
	if (cpid == 0)
		stand_in(addr, to_c[0], from_c[1]);
	if (cpid < 0) {
		printf("SKIP: cannot create a process with pid %d again: %s\n", (int)b,
		       strerror(errno));
		return -1;
	}
	if (read(from_c[0], &ch, 1) != 1)
		die("stand-in start");
	return cpid;
}

/* Starts a peer (peer_b), connects qp to it; its pid, rkey and buffer address. */
static pid_t start_peer(struct ibv_qp *qp, const struct conn *base, unsigned int *rkey,
			unsigned long *addr)
{
	int to_b[2], from_b[2];
	unsigned int qpn;
	char line[128], ch;
	struct conn c = *base;
	ssize_t n;
	pid_t b;

	if (pipe(to_b) || pipe(from_b))
		die("pipe");
	b = fork();
	if (b == 0)
		peer_b(to_b[0], from_b[1]);
	n = read(from_b[0], line, sizeof(line) - 1);
	if (n <= 0)
		die("peer start");
	line[n] = '\0';
	if (sscanf(line, "%u %u %lu", &qpn, rkey, addr) != 3)
		die("peer info");
	c.dest_qpn = qpn;
	if (rc_connect(qp, &c))
		die("connect");
	n = snprintf(line, sizeof(line), "%u\n", qp->qp_num);
	if (write(to_b[1], line, (size_t)n) != n || read(from_b[0], &ch, 1) != 1)
		die("peer ready");
	close(to_b[0]);
	close(to_b[1]);
	close(from_b[0]);
	close(from_b[1]);
	return b;
}

static void ud_send(struct side *a, struct ibv_ah *ah, unsigned int qpn, const char *what)
{
	struct ibv_sge g = sge_of(a, 0, 1024);
	struct ibv_send_wr wr = {.sg_list = &g,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND,
				 .send_flags = IBV_SEND_SIGNALED},
			   *bad;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	if (ibv_post_send(a->qp, &wr, &bad))
		die("UD post");
	expect_wc(a->cq, what, IBV_WC_SUCCESS, 2000);
}

/* A datagram to a dead UD peer whose pid was reused, vfabd stopped. 77: skip. */
static int ud_pid_reuse(void)
{
	struct ibv_ah_attr ah_attr = {.is_global = 1, .port_num = PORT};
	int to_b[2], from_b[2], to_c[2], from_c[2], status;
	unsigned int qpn;
	unsigned long addr;
	struct ibv_ah *ah;
	char line[128], ch;
	struct side a;
	pid_t b, cpid;
	ssize_t n;

	if (pipe(to_b) || pipe(from_b) || pipe(to_c) || pipe(from_c))
		die("pipe");
	b = fork();
	if (b == 0)
		peer_ud(to_b[0], from_b[1]);
	n = read(from_b[0], line, sizeof(line) - 1);
	if (n <= 0)
		die("UD peer start");
	line[n] = '\0';
	if (sscanf(line, "%u %lu", &qpn, &addr) != 2)
		die("UD peer info");
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_UD);
	ud_up(a.qp);
	ah_attr.grh.dgid = gid;
	ah_attr.grh.sgid_index = (uint8_t)gid_index;
	ah_attr.grh.hop_limit = 1;
	ah = ibv_create_ah(a.pd, &ah_attr);
	if (!ah)
		die("ibv_create_ah");
	memset(a.buf, 'U', 1024);
	ud_send(&a, ah, qpn, "UD datagram to the live peer sent");
	if (write(to_b[1], "c", 1) != 1 || read(from_b[0], &ch, 1) != 1)
		die("UD peer answer");
	check(ch == 'y', "UD datagram to the live peer arrives", "it did not");

	cpid = replace_peer(b, addr, to_c, from_c);
	if (cpid < 0)
		return 77;
	printf("# UD peer %d killed; stand-in %d maps %#lx\n", (int)b, (int)cpid, addr);
	ud_send(&a, ah, qpn, "UD datagram to the dead peer sent");
	if (write(to_c[1], "c", 1) != 1)
		die("stand-in check");
	waitpid(cpid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "a UD datagram does not land in the stand-in with the dead peer's pid",
	      "stand-in exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	resume_vfabd();
	ibv_destroy_ah(ah);
	side_close(&a);
	return 0;
}

/* A SEND waiting on a dead peer's receive queue, vfabd stopped. */
static void dead_rnr_peer(void)
{
	struct conn c = conn_to(NULL);
	unsigned int rkey;
	unsigned long addr;
	struct ibv_wc wc = {0};
	struct ibv_sge g;
	struct side a;
	int status;
	pid_t b;

	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c.timeout = 10; /* 4.2 ms */
	c.retry_cnt = 2;
	c.rnr_retry = 7; /* forever */
	b = start_peer(a.qp, &c, &rkey, &addr);
	if (vfabd_pid > 0 && kill(vfabd_pid, SIGSTOP))
		die("stop vfabd");
	g = sge_of(&a, 0, 64);
	post(&a, IBV_WR_SEND, &g, 1, 0, 0, IBV_SEND_SIGNALED);
	check(wait_wc(a.cq, &wc, 200) != 0, "a SEND without a receive waits (RNR)",
	      "completed at once: %s", ibv_wc_status_str(wc.status));
	kill(b, SIGKILL);
	waitpid(b, &status, 0);
	wc.status = IBV_WC_SUCCESS;
	check(!wait_wc(a.cq, &wc, 5000) && wc.status == IBV_WC_RETRY_EXC_ERR,
	      "a SEND waiting on a dead peer's RQ (vfabd stopped) -> RETRY_EXC_ERR", "%s",
	      wc.status == IBV_WC_SUCCESS ? "no completion" : ibv_wc_status_str(wc.status));
	resume_vfabd();
	side_close(&a);
}

int main(int argc, char **argv)
{
	int to_b[2], from_b[2], to_c[2], from_c[2], opt, status;
	unsigned int qpn, rkey;
	unsigned long addr;
	struct ibv_device **list;
	struct ibv_context *ctx;
	const char *want = NULL;
	char line[128], ch;
	struct side a;
	struct conn c;
	struct ibv_sge g;
	struct ibv_wc wc;
	pid_t b, cpid;
	ssize_t n;

	while ((opt = getopt(argc, argv, "d:g:s:")) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			gid_index = atoi(optarg);
		else if (opt == 's')
			vfabd_pid = atoi(optarg);
		else
			return fprintf(stderr, "usage: %s -d DEV -g GID -s VFABD_PID\n", argv[0]),
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

	atexit(resume_vfabd);
	dead_rnr_peer();
	if (pipe(to_b) || pipe(from_b) || pipe(to_c) || pipe(from_c))
		die("pipe");
	b = fork();
	if (b == 0)
		peer_b(to_b[0], from_b[1]);
	n = read(from_b[0], line, sizeof(line) - 1);
	if (n <= 0)
		die("peer start");
	line[n] = '\0';
	if (sscanf(line, "%u %u %lu", &qpn, &rkey, &addr) != 3)
		die("peer info");
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	c.timeout = 10; /* 4.2 ms */
	c.retry_cnt = 2;
	if (rc_connect(a.qp, &c))
		die("connect");
	n = snprintf(line, sizeof(line), "%u\n", a.qp->qp_num);
	if (write(to_b[1], line, (size_t)n) != n || read(from_b[0], &ch, 1) != 1)
		die("peer ready");

	memset(a.buf, 'W', BUF);
	g = sge_of(&a, 0, BUF);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	if (!expect_wc(a.cq, "64 KiB WRITE to the peer", IBV_WC_SUCCESS, 2000))
		return 1;

	cpid = replace_peer(b, addr, to_c, from_c);
	if (cpid < 0)
		return 77;
	printf("# peer %d killed; stand-in %d maps %#lx\n", (int)b, (int)cpid, addr);

	memset(a.buf, 'X', BUF);
	post(&a, IBV_WR_RDMA_WRITE, &g, 1, addr, rkey, IBV_SEND_SIGNALED);
	check(!wait_wc(a.cq, &wc, 5000) && wc.status != IBV_WC_SUCCESS,
	      "WRITE to a dead peer whose pid was reused completes with an error", "status %s",
	      ibv_wc_status_str(wc.status));
	if (write(to_c[1], "c", 1) != 1)
		die("stand-in check");
	waitpid(cpid, &status, 0);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the stand-in process is untouched",
	      "stand-in exit %d", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	resume_vfabd();
	side_close(&a);
	if (ud_pid_reuse() == 77)
		return 77;
	return failures ? 1 : 0;
}
