/* SPDX-License-Identifier: MIT */
/*
 * verbs_errors (see verbs_errors.c): chains of RDMA WRITEs posted with one
 * ibv_post_send to another process, as NCCL posts them. The provider moves
 * such a chain with one copy; whatever it cannot take (a WRITE with
 * immediate without a receive, a bad rkey) must end exactly as a single
 * post would: the WRITEs before it land, it waits or fails, the rest follow
 * or are flushed.
 *
 * The peer (this program with --chain-peer) owns two RC QPs and a buffer and
 * answers one command per line on stdin:
 *   chain      waits for the chain's WRITE_WITH_IMM completion, checks bytes
 *   rnr        the WRITEs before a waiting WRITE_WITH_IMM landed, no CQE yet
 *   recv       posts the receive it waits for; checks its completion
 *   prefix     the WRITEs before a bad rkey landed, those after it did not
 *   batch      posts a receive, says "go", then watches a FIFO of 64-byte
 *              entries that small WRITEs posted one by one fill (the
 *              provider sends such WRITEs together, see vfab_req.c): an entry
 *              whose last word is there is whole (ascending address order),
 *              no entry shows before the one ahead of it (RC order), and all
 *              are there when the closing WRITE_WITH_IMM completes
 *   sends      posts SEND_PART receives on an SRQ, says "go", then takes
 *              the completions of SEND_N small SENDs (posted one by one
 *              while earlier ones are unreaped, then in lists of 8: the
 *              provider sends them together): in posting order, each with
 *              its bytes already there, none past the last receive (RNR)
 *              until the rest is posted
 */
#include "verbs_harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHAIN_OFF 16384 /* 8 x 1 KiB: seven WRITEs and a WRITE_WITH_IMM */
#define RNR_OFF 40960	/* 3 x 512 B, then a zero-length WRITE_WITH_IMM */
#define BAD_OFF 49152	/* 6 x 256 B on the second QP, the 4th with a bad rkey */
#define FIFO_OFF 24576	/* FIFO_N x 64 B entries */
#define FIFO_N 128
#define CHAIN_IMM 0x1234u
#define RNR_IMM 0x5678u
#define FIFO_IMM 0x9abcu
#define SEND_OFF 0     /* peer: SEND_N x 64 B receive slots */
#define SEND_SRC 32768 /* sender: SEND_N x 64 B */
#define SEND_N 96
#define SEND_PART 40 /* receives posted before the SENDs start */

static struct ibv_qp *second_qp(struct side *s, struct ibv_srq *srq)
{
	struct ibv_qp_init_attr a = {
	    .send_cq = s->cq,
	    .recv_cq = s->cq,
	    .srq = srq,
	    .cap = {.max_send_wr = 64,
		    .max_recv_wr = srq ? 0 : 64,
		    .max_send_sge = 4,
		    .max_recv_sge = srq ? 0 : 4,
		    .max_inline_data = 64},
	    .qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(s->pd, &a);

	if (!qp)
		die("ibv_create_qp");
	return qp;
}

static bool filled(const char *p, size_t n, char c)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != c)
			return false;
	return true;
}

static bool recv_imm(struct side *s, uint32_t imm, uint32_t len)
{
	struct ibv_wc wc;

	return !wait_wc(s->cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS &&
	       wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc.wc_flags & IBV_WC_WITH_IMM) &&
	       ntohl(wc.imm_data) == imm && wc.byte_len == len;
}

/* Word k of FIFO entry i; the last word (k 7) says the entry is there. */
static uint64_t fifo_word(int i, int k)
{
	return k == 7 ? (uint64_t)i + 1 : ((uint64_t)i << 8 | (uint64_t)k) + 0x5a5a000000000000ull;
}

static bool fifo_entry_whole(volatile const uint64_t *e, int i)
{
	for (int k = 0; k < 7; k++)
		if (e[k] != fifo_word(i, k))
			return false;
	return true;
}

/* Word k of the 64-byte SEND i. */
static uint64_t send_word(int i, int k)
{
	return ((uint64_t)i << 8 | (uint64_t)k) + 0x3c3c000000000000ull;
}

static int post_slot(struct side *s, struct ibv_srq *srq, int i)
{
	struct ibv_sge sg = sge_of(s, SEND_OFF + (size_t)i * 64, 64);
	struct ibv_recv_wr wr = {.wr_id = (uint64_t)i, .sg_list = &sg, .num_sge = 1}, *bad;

	return ibv_post_srq_recv(srq, &wr, &bad);
}

/*
 * The receive side of a burst of SENDs into an SRQ: completions in posting
 * order, each one's bytes there when it shows, none while no receive is
 * posted.
 */
static bool sends_watch(struct side *s, struct ibv_srq *srq, uint32_t qpn)
{
	struct ibv_wc wc;
	bool ok = true;

	for (int i = 0; i < SEND_PART; i++)
		ok &= !post_slot(s, srq, i);
	puts("go");
	fflush(stdout);
	for (int i = 0; i < SEND_N && ok; i++) {
		const uint64_t *slot = (const uint64_t *)(s->buf + SEND_OFF + (size_t)i * 64);

		if (i == SEND_PART) {
			/* The rest waits for receives (RNR), then follows them. */
			if (!wait_wc(s->cq, &wc, 20)) {
				fprintf(stderr, "send %d completed without a receive\n", i);
				return false;
			}
			for (int j = SEND_PART; j < SEND_N; j++)
				ok &= !post_slot(s, srq, j);
		}
		if (wait_wc(s->cq, &wc, 5000) || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != 64 || wc.qp_num != qpn ||
		    wc.wr_id != (uint64_t)i) {
			fprintf(stderr, "send %d: no or wrong receive completion (wr_id %llu)\n", i,
				(unsigned long long)wc.wr_id);
			return false;
		}
		for (int k = 0; k < 8; k++)
			ok &= slot[k] == send_word(i, k);
		if (!ok)
			fprintf(stderr, "send %d: completion before its bytes\n", i);
	}
	return ok;
}

/* Watches the FIFO as NCCL's sender watches its CTS FIFO. */
static bool fifo_watch(struct side *s)
{
	volatile const uint64_t *f = (volatile const uint64_t *)(s->buf + FIFO_OFF);
	double end = now_ms() + 10000;
	bool ok = true;

	for (int i = 0; i < FIFO_N && ok; i++) {
		while (__atomic_load_n(&f[i * 8 + 7], __ATOMIC_ACQUIRE) != fifo_word(i, 7)) {
			/* The one behind it first, then this one: behind must not be ahead. */
			if (i + 1 < FIFO_N &&
			    __atomic_load_n(&f[(i + 1) * 8 + 7], __ATOMIC_ACQUIRE) ==
				fifo_word(i + 1, 7) &&
			    __atomic_load_n(&f[i * 8 + 7], __ATOMIC_ACQUIRE) != fifo_word(i, 7)) {
				fprintf(stderr, "fifo entry %d landed before entry %d\n", i + 1, i);
				return false;
			}
			if (now_ms() > end) {
				fprintf(stderr, "fifo entry %d never landed\n", i);
				return false;
			}
			sched_yield(); /* one core per node: let the sender run */
		}
		ok = fifo_entry_whole(f + i * 8, i);
		if (!ok)
			fprintf(stderr, "fifo entry %d: last word before the rest\n", i);
	}
	return ok;
}

int chain_peer_main(void)
{
	struct ibv_recv_wr rwr = {.wr_id = 1}, *rbad;
	struct ibv_srq_init_attr sa = {.attr = {.max_wr = 128, .max_sge = 1}};
	struct side s;
	struct ibv_qp *qp2, *qp3;
	struct ibv_srq *srq;
	unsigned int qpn, qpn2, qpn3;
	char line[128];
	struct conn c;
	struct ibv_wc wc;

	side_open(&s, ALL);
	qp_open(&s, IBV_QPT_RC);
	qp2 = second_qp(&s, NULL);
	srq = ibv_create_srq(s.pd, &sa);
	if (!srq)
		die("ibv_create_srq");
	qp3 = second_qp(&s, srq);
	printf("%u %u %u %u %lu\n", s.qp->qp_num, qp2->qp_num, qp3->qp_num, s.mr->rkey,
	       (unsigned long)(uintptr_t)s.buf);
	fflush(stdout);
	if (!fgets(line, sizeof(line), stdin) || sscanf(line, "%u %u %u", &qpn, &qpn2, &qpn3) != 3)
		return 2;
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	if (rc_connect(s.qp, &c))
		return 2;
	c.dest_qpn = qpn2;
	if (rc_connect(qp2, &c))
		return 2;
	c.dest_qpn = qpn3;
	if (rc_connect(qp3, &c))
		return 2;
	/* One receive, for the first chain: the second one finds none. */
	ibv_post_recv(s.qp, &rwr, &rbad);
	puts("ready");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		bool ok = false;

		if (!strncmp(line, "chain", 5)) {
			ok = recv_imm(&s, CHAIN_IMM, 1024);
			for (int j = 0; j < 8; j++)
				ok &= filled(s.buf + CHAIN_OFF + j * 1024, 1024, (char)('a' + j));
		} else if (!strncmp(line, "rnr", 3)) {
			ok =
			    filled(s.buf + RNR_OFF, 3 * 512, 'r') && ibv_poll_cq(s.cq, 1, &wc) == 0;
		} else if (!strncmp(line, "recv", 4)) {
			ok = !ibv_post_recv(s.qp, &rwr, &rbad) && recv_imm(&s, RNR_IMM, 0);
		} else if (!strncmp(line, "batch", 5)) {
			ok = !ibv_post_recv(s.qp, &rwr, &rbad);
			puts("go");
			fflush(stdout);
			ok &= fifo_watch(&s) && recv_imm(&s, FIFO_IMM, 0);
			for (int i = 0; i < FIFO_N; i++)
				ok &= fifo_entry_whole((uint64_t *)(s.buf + FIFO_OFF) + i * 8, i);
		} else if (!strncmp(line, "sends", 5)) {
			ok = sends_watch(&s, srq, qp3->qp_num);
		} else if (!strncmp(line, "prefix", 6)) {
			ok = filled(s.buf + BAD_OFF, 3 * 256, 'x') &&
			     filled(s.buf + BAD_OFF + 3 * 256, 3 * 256, 0) &&
			     qp_state(qp2) == IBV_QPS_ERR;
		}
		puts(ok ? "ok" : "bad");
		fflush(stdout);
	}
	ibv_destroy_qp(qp3);
	ibv_destroy_srq(srq);
	ibv_destroy_qp(qp2);
	side_close(&s);
	return 0;
}

/* n WRs, linked, WRITEs of len bytes from off to raddr + i * len. */
static void chain_of(struct ibv_send_wr *wr, struct ibv_sge *sg, int n, struct side *a, size_t off,
		     uint32_t len, uint64_t raddr, uint32_t rkey)
{
	for (int i = 0; i < n; i++) {
		sg[i] = sge_of(a, off + (size_t)i * len, len);
		memset(&wr[i], 0, sizeof(wr[i]));
		wr[i].wr_id = 100 + (uint64_t)i;
		wr[i].opcode = IBV_WR_RDMA_WRITE;
		wr[i].sg_list = &sg[i];
		wr[i].num_sge = 1;
		wr[i].wr.rdma.remote_addr = raddr + (uint64_t)i * len;
		wr[i].wr.rdma.rkey = rkey;
		wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
	}
}

static bool ask(FILE *out, FILE *in, const char *cmd)
{
	char line[64];

	fprintf(out, "%s\n", cmd);
	fflush(out);
	return fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2);
}

/*
 * FIFO_N WRITEs of one entry each, one ibv_post_send apiece while earlier
 * ones are not reaped (every 16th signaled, the CQ polled between posts, as
 * NCCL's proxy does), then a zero-length WRITE_WITH_IMM.
 */
static bool post_fifo(struct side *a, FILE *out, FILE *in, uint64_t addr, uint32_t rkey)
{
	struct ibv_send_wr wr, *bad;
	struct ibv_sge sg;
	struct ibv_wc wc;
	char line[64];
	int rc, reaped = 0, wanted = FIFO_N / 16 + 1;

	for (int i = 0; i < FIFO_N; i++)
		for (int k = 0; k < 8; k++)
			((uint64_t *)(a->buf + FIFO_OFF))[i * 8 + k] = fifo_word(i, k);
	fprintf(out, "batch\n");
	fflush(out);
	if (!fgets(line, sizeof(line), in) || strncmp(line, "go", 2))
		return false;
	for (int i = 0; i <= FIFO_N; i++) {
		sg = sge_of(a, FIFO_OFF + (size_t)i * 64, 64);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 300 + (uint64_t)i;
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.sg_list = &sg;
		wr.num_sge = 1;
		wr.wr.rdma.remote_addr = addr + FIFO_OFF + (uint64_t)i * 64;
		wr.wr.rdma.rkey = rkey;
		/* Every other one inline, as NCCL posts its FIFO entries. */
		wr.send_flags =
		    (i % 16 == 15 ? IBV_SEND_SIGNALED : 0) | (i % 2 ? IBV_SEND_INLINE : 0);
		if (i == FIFO_N) {
			wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.num_sge = 0;
			wr.imm_data = htonl(FIFO_IMM);
			wr.send_flags = IBV_SEND_SIGNALED;
		}
		while ((rc = ibv_post_send(a->qp, &wr, &bad)) == ENOMEM)
			reaped += ibv_poll_cq(a->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
		if (rc)
			return false;
		reaped += ibv_poll_cq(a->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
	}
	while (reaped < wanted && !wait_wc(a->cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS)
		reaped++;
	return reaped == wanted && wc.wr_id == 300 + FIFO_N;
}

/*
 * SEND_N SENDs of 64 bytes: the first half one ibv_post_send apiece while
 * earlier ones are not reaped (every other one inline, every 16th
 * signaled, the CQ polled between posts), the rest in lists of 8.
 */
static bool post_sends(struct side *a, struct ibv_qp *qp, FILE *in)
{
	struct ibv_send_wr wr[8], *bad;
	struct ibv_sge sg[8];
	struct ibv_wc wc;
	char line[64];
	int rc, reaped = 0, wanted = SEND_N / 16, i = 0;

	for (int j = 0; j < SEND_N; j++)
		for (int k = 0; k < 8; k++)
			((uint64_t *)(a->buf + SEND_SRC))[j * 8 + k] = send_word(j, k);
	if (!fgets(line, sizeof(line), in) || strncmp(line, "go", 2))
		return false;
	while (i < SEND_N) {
		int n = i < SEND_N / 2 ? 1 : 8;

		for (int j = 0; j < n; j++, i++) {
			sg[j] = sge_of(a, SEND_SRC + (size_t)i * 64, 64);
			memset(&wr[j], 0, sizeof(wr[j]));
			wr[j].wr_id = 400 + (uint64_t)i;
			wr[j].opcode = IBV_WR_SEND;
			wr[j].sg_list = &sg[j];
			wr[j].num_sge = 1;
			wr[j].send_flags =
			    (i % 16 == 15 ? IBV_SEND_SIGNALED : 0) | (i % 2 ? IBV_SEND_INLINE : 0);
			wr[j].next = j + 1 < n ? &wr[j + 1] : NULL;
		}
		while ((rc = ibv_post_send(qp, wr, &bad)) == ENOMEM)
			reaped += ibv_poll_cq(a->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
		if (rc)
			return false;
		reaped += ibv_poll_cq(a->cq, 1, &wc) == 1 && wc.status == IBV_WC_SUCCESS;
	}
	while (reaped < wanted && !wait_wc(a->cq, &wc, 5000) && wc.status == IBV_WC_SUCCESS)
		reaped++;
	return reaped == wanted && wc.wr_id == 400 + SEND_N - 1;
}

static pid_t start_peer(const char *self, FILE **in, FILE **out)
{
	int to_peer[2], from_peer[2];
	char gidx[16];
	pid_t pid;

	/* Close-on-exec: the peer must see its stdin end when we close ours. */
	if (pipe2(to_peer, O_CLOEXEC) || pipe2(from_peer, O_CLOEXEC))
		die("pipe");
	snprintf(gidx, sizeof(gidx), "%d", gid_index);
	pid = fork();
	if (pid == 0) {
		dup2(to_peer[0], 0);
		dup2(from_peer[1], 1);
		execl(self, self, "--chain-peer", "-d", ibv_get_device_name(dev), "-g", gidx,
		      (char *)NULL);
		_exit(127);
	}
	close(to_peer[0]);
	close(from_peer[1]);
	*out = fdopen(to_peer[1], "w");
	*in = fdopen(from_peer[0], "r");
	return pid;
}

void test_chains(const char *self)
{
	struct ibv_send_wr wr[8], *bad = NULL;
	unsigned int qpn, qpn2, qpn3, rkey;
	struct ibv_sge sg[8];
	struct ibv_qp *qp2, *qp3;
	unsigned long addr;
	struct ibv_wc wc;
	char line[128];
	struct side a;
	struct conn c;
	FILE *in, *out;
	pid_t pid;
	int status, rc;

	pid = start_peer(self, &in, &out);
	if (!fgets(line, sizeof(line), in) ||
	    sscanf(line, "%u %u %u %u %lu", &qpn, &qpn2, &qpn3, &rkey, &addr) != 5)
		die("chain peer start");
	side_open(&a, ALL);
	qp_open(&a, IBV_QPT_RC);
	qp2 = second_qp(&a, NULL);
	qp3 = second_qp(&a, NULL);
	c = conn_to(NULL);
	c.dest_qpn = qpn;
	if (rc_connect(a.qp, &c))
		die("connect to chain peer");
	c.dest_qpn = qpn2;
	if (rc_connect(qp2, &c))
		die("connect to chain peer");
	c.dest_qpn = qpn3;
	if (rc_connect(qp3, &c))
		die("connect to chain peer");
	fprintf(out, "%u %u %u\n", a.qp->qp_num, qp2->qp_num, qp3->qp_num);
	fflush(out);
	if (!fgets(line, sizeof(line), in))
		die("chain peer ready");

	/* Seven unsignaled WRITEs and a signaled WRITE_WITH_IMM carrying data. */
	for (int j = 0; j < 8; j++)
		memset(a.buf + j * 1024, 'a' + j, 1024);
	chain_of(wr, sg, 8, &a, 0, 1024, addr + CHAIN_OFF, rkey);
	wr[7].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[7].imm_data = htonl(CHAIN_IMM);
	wr[7].send_flags = IBV_SEND_SIGNALED;
	rc = ibv_post_send(a.qp, wr, &bad);
	check(rc == 0 && !wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_SUCCESS &&
		  wc.wr_id == 107 && ibv_poll_cq(a.cq, 1, &wc) == 0,
	      "chain of 8 WRITEs: one completion, for the signaled last", "rc %d", rc);
	check(ask(out, in, "chain"), "chain bytes and WRITE_WITH_IMM completion in the peer",
	      "peer disagrees");

	/* The peer has no receive left: the WRITEs land, the immediate waits. */
	memset(a.buf + 8192, 'r', 3 * 512);
	chain_of(wr, sg, 4, &a, 8192, 512, addr + RNR_OFF, rkey);
	wr[3].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr[3].num_sge = 0; /* zero-length, as NCCL ends a multi-receive */
	wr[3].imm_data = htonl(RNR_IMM);
	wr[3].send_flags = IBV_SEND_SIGNALED;
	rc = ibv_post_send(a.qp, wr, &bad);
	check(rc == 0 && wait_wc(a.cq, &wc, 50) == -1,
	      "zero-length WRITE_WITH_IMM without a receive waits (RNR)", "rc %d", rc);
	check(ask(out, in, "rnr"), "the WRITEs before it landed, no receive CQE yet",
	      "peer disagrees");
	check(ask(out, in, "recv"), "a receive posted later gets the immediate",
	      "peer saw no completion");
	check(!wait_wc(a.cq, &wc, 2000) && wc.status == IBV_WC_SUCCESS && wc.wr_id == 103,
	      "the waiting WRITE_WITH_IMM completes after the receive", "no or wrong completion");

	/* A bad rkey in the middle: the prefix lands, the rest is flushed. */
	memset(a.buf + 12288, 'x', 6 * 256);
	chain_of(wr, sg, 6, &a, 12288, 256, addr + BAD_OFF, rkey);
	wr[3].wr.rdma.rkey = rkey ^ 0x100;
	for (int j = 0; j < 6; j++) {
		sg[j].addr = (uintptr_t)a.buf + 12288; /* all 'x' */
		wr[j].wr_id = 200 + (uint64_t)j;
	}
	rc = ibv_post_send(qp2, wr, &bad);
	{
		bool ok = rc == 0 && !wait_wc(a.cq, &wc, 1000) &&
			  wc.status == IBV_WC_REM_ACCESS_ERR && wc.wr_id == 203;

		for (int j = 4; ok && j < 6; j++)
			ok = !wait_wc(a.cq, &wc, 1000) && wc.status == IBV_WC_WR_FLUSH_ERR &&
			     wc.wr_id == 200 + (uint64_t)j;
		check(ok, "bad rkey in a chain: REM_ACCESS_ERR for it, FLUSH_ERR after",
		      "rc %d, last completion %s wr_id %llu", rc, ibv_wc_status_str(wc.status),
		      (unsigned long long)wc.wr_id);
	}
	check(ask(out, in, "prefix"), "only the WRITEs before the bad rkey landed",
	      "peer disagrees");

	check(post_fifo(&a, out, in, addr, rkey),
	      "small WRITEs posted one by one, then a WRITE_WITH_IMM: all complete in order",
	      "a completion is missing or wrong");
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "FIFO entries whole, in order, all there at the immediate", "peer disagrees");

	fprintf(out, "sends\n");
	fflush(out);
	check(post_sends(&a, qp3, in),
	      "small SENDs to an SRQ, one by one then in lists, past an RNR wait: all complete",
	      "a completion is missing or wrong");
	check(fgets(line, sizeof(line), in) && !strncmp(line, "ok", 2),
	      "receive completions in order, each after its bytes, none without a receive",
	      "peer disagrees");

	fclose(out);
	waitpid(pid, &status, 0);
	fclose(in);
	check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "chain peer exits cleanly",
	      "status %d", status);
	ibv_destroy_qp(qp3);
	ibv_destroy_qp(qp2);
	side_close(&a);
}
