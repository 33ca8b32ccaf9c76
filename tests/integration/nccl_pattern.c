/* SPDX-License-Identifier: MIT */
/*
 * nccl_pattern: does with a vfab HCA exactly what NCCL's IB transport
 * (net_ib) does with a ConnectX, through the public libibverbs API only:
 * ibv_fork_init first, NCCL's GID auto-selection, the DMA-BUF and ECE
 * probes, ibv_reg_mr_iova2 with relaxed ordering on posix_memalign'd,
 * /dev/shm and pinned memory, RC QPs with NCCL's sizes and attributes, a
 * CTS FIFO written by the receiver (~100k 64-byte entries, 1 in 256
 * signaled), chains of unsignaled WRITEs ended by a signaled
 * WRITE_WITH_IMM, receives with num_sge 0, GDR-style flush READs on a QP
 * connected to itself, a thread blocked in ibv_get_async_event throughout,
 * and the teardown while the peer is still up and after it is gone. The
 * traffic is described in nccl_pattern_flow.c.
 *
 * Usage, inside nodes:
 *   nccl_pattern [-d DEV] [-g GIDX] [-n ROUNDS] --server [-p PORT]    (node1)
 *   nccl_pattern [-d DEV] [-g GIDX] [-n ROUNDS] --client HOST [-p PORT] (node0)
 *   nccl_pattern [-d DEV] [-g GIDX] [-n ROUNDS]     both in one node: the
 *       sender is a child process, connected over a socketpair
 * The server is the receiver, the client the sender; they exchange their
 * connection details over TCP port PORT (default 18590) as NCCL's bootstrap
 * would. GIDX, when given, must be what the auto-selection picks.
 * --bench SIZE (both sides): rounds of SIZE bytes (at most 4 MiB) as NCCL's
 * proxy moves its steps (nccl_pattern.h NP_BENCH_*); the receiver prints
 * bench_gbit_per_s=, the shaping benchmark's NCCL row.
 * Prints one "ok"/"FAIL" line per check; exits 0 when all pass (in the
 * one-node form: in both processes), 1 otherwise.
 */
#include "nccl_pattern.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures;

bool np_check(const struct np_side *s, bool ok, const char *name, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("ok   [%s] %s\n", s->role, name);
		return true;
	}
	failures++;
	printf("FAIL [%s] %s: ", s->role, name);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return false;
}

double np_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int np_send_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int np_recv_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = recv(fd, p, len, 0);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One byte each way: both sides reached the same point. */
static bool barrier(struct np_side *s, int fd, char what, const char *name)
{
	char got = 0;

	return np_check(s, !np_send_all(fd, &what, 1) && !np_recv_all(fd, &got, 1) && got == what,
			name, "the peer answered '%c'", got ? got : '?');
}

static int listen_accept(int port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	int one = 1, ls, fd;

	ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (ls < 0)
		return -1;
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		close(ls);
		return -1;
	}
	fd = accept(ls, NULL, NULL);
	close(ls);
	return fd;
}

/* The server may not listen yet: try for a while, as NCCL's bootstrap does. */
static int connect_to(const char *host, int port)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	char service[16];
	double end = np_now_ms() + 20000;
	int fd;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai))
		return -1;
	do {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && !connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (fd >= 0)
			close(fd);
		fd = -1;
		usleep(50000);
	} while (np_now_ms() < end);
	freeaddrinfo(ai);
	return fd;
}

/* Set-up common to both roles, up to RTS on both sides. */
static int set_up(struct np_side *s, struct ibv_device *dev, int want_gid, int fd, bool receiver)
{
	struct np_info mine;

	if (np_open(s, dev, want_gid) || np_register(s, receiver) || np_create_qps(s, receiver))
		return -1;
	np_async_start(s);
	np_local_info(s, &mine);
	if (!np_check(s,
		      !np_send_all(fd, &mine, sizeof(mine)) &&
			  !np_recv_all(fd, &s->peer, sizeof(s->peer)),
		      "connection details exchanged out of band", "%s", strerror(errno)))
		return -1;
	if (np_connect(s))
		return -1;
	return barrier(s, fd, 'R', "both sides in RTS") ? 0 : -1;
}

static uint32_t bench_size;

static int sender_main(struct ibv_device *dev, int want_gid, int fd, uint32_t rounds)
{
	struct np_side s = {.role = "sender", .bench_size = bench_size};

	if (set_up(&s, dev, want_gid, fd, false) || np_run_sender(&s, rounds))
		return 1;
	if (!barrier(&s, fd, 'D', "the receiver saw every round"))
		return 1;
	np_teardown(&s, "still up");
	np_send_all(fd, "C", 1);
	close(fd);
	return failures ? 1 : 0;
}

/* child: the sender's pid in the one-node form (0 when it runs elsewhere). */
static int receiver_main(struct ibv_device *dev, int want_gid, int fd, uint32_t rounds, pid_t child)
{
	struct np_side s = {.role = "receiver", .bench_size = bench_size};
	int status = 0;
	char c;

	if (set_up(&s, dev, want_gid, fd, true) || np_run_receiver(&s, rounds))
		return 1;
	if (!barrier(&s, fd, 'D', "the sender finished every round"))
		return 1;
	/* The sender tears down while we are up, then closes and is gone. */
	np_check(&s, !np_recv_all(fd, &c, 1) && c == 'C' && np_recv_all(fd, &c, 1) == -1,
		 "the sender closed its device and left", "no close from the sender");
	close(fd);
	if (child) {
		pid_t got = waitpid(child, &status, 0);

		np_check(&s, got == child && WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "the sender process exited 0", "%s",
			 got != child	     ? strerror(errno)
			 : WIFEXITED(status) ? (WEXITSTATUS(status) ? "exit status 1" : "")
					     : "killed");
	}
	np_teardown(&s, "gone");
	return failures ? 1 : 0;
}

static struct ibv_device *find_device(const char *want)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	for (int i = 0; list && list[i]; i++)
		if (!want || !strcmp(ibv_get_device_name(list[i]), want))
			return list[i]; /* the list stays allocated for the run */
	return NULL;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {{"server", no_argument, NULL, 'S'},
						 {"client", required_argument, NULL, 'C'},
						 {"bench", required_argument, NULL, 'B'},
						 {0}};
	const char *want = NULL, *host = NULL;
	int opt, want_gid = -1, port = 18590, sv[2];
	bool server = false;
	uint32_t rounds = 100000;
	struct ibv_device *dev;
	pid_t pid;

	while ((opt = getopt_long(argc, argv, "d:g:n:p:", longopts, NULL)) != -1) {
		if (opt == 'd')
			want = optarg;
		else if (opt == 'g')
			want_gid = atoi(optarg);
		else if (opt == 'n')
			rounds = (uint32_t)strtoul(optarg, NULL, 10);
		else if (opt == 'p')
			port = atoi(optarg);
		else if (opt == 'S')
			server = true;
		else if (opt == 'C')
			host = optarg;
		else if (opt == 'B' && (bench_size = (uint32_t)strtoul(optarg, NULL, 0)) > 0 &&
			 bench_size <= NP_BENCH_MAX)
			continue;
		else
			return fprintf(stderr,
				       "usage: %s [-d DEV] [-g GIDX] [-n ROUNDS] "
				       "[--server | --client HOST] [-p PORT] [--bench SIZE]\n",
				       argv[0]),
			       2;
	}
	/* Whole lines even when both processes share one output file. */
	setvbuf(stdout, NULL, _IOLBF, 0);
	/*
	 * NCCL's first verbs call: from now on libibverbs marks every MR
	 * MADV_DONTFORK, which the registrations below must survive.
	 */
	np_check(&(struct np_side){.role = "process"}, ibv_fork_init() == 0, "ibv_fork_init",
		 "failed");
	dev = find_device(want);
	if (!dev)
		return fprintf(stderr, "nccl_pattern: no RDMA device %s\n", want ? want : ""), 1;
	printf("# %s, %u rounds\n", ibv_get_device_name(dev), rounds);
	if (server) {
		int fd = listen_accept(port);

		if (fd < 0)
			return perror("nccl_pattern: listen"), 1;
		return receiver_main(dev, want_gid, fd, rounds, 0);
	}
	if (host) {
		int fd = connect_to(host, port);

		if (fd < 0)
			return fprintf(stderr, "nccl_pattern: cannot reach %s:%d\n", host, port), 1;
		return sender_main(dev, want_gid, fd, rounds);
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return perror("nccl_pattern: socketpair"), 1;
	pid = fork();
	if (pid < 0)
		return perror("nccl_pattern: fork"), 1;
	if (pid == 0) {
		close(sv[0]);
		_exit(sender_main(dev, want_gid, sv[1], rounds));
	}
	close(sv[1]);
	return receiver_main(dev, want_gid, sv[0], rounds, pid);
}
