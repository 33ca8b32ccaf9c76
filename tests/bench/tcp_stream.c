/* SPDX-License-Identifier: MIT */
/*
 * tcp_stream: the TCP reference of the benchmark. Run between two vfab nodes
 * (server in one, client in the other through `vfab exec`), it measures what
 * an application gets without RDMA over the same virtual wire (veth + bridge):
 *
 *   tcp_stream [--port P]                                           (server)
 *   tcp_stream [--port P] [--size BYTES] [--seconds S] [--iters N] HOST (client)
 *
 * As with perftest and the ibv_*_pingpong examples, the same command line plus
 * the server's address makes the client.
 * The client opens one connection per measurement and names it by its first
 * byte: 'S' streams --size-byte writes (default 1 MiB) for --seconds
 * (default 2) and waits for the server's byte count, so the time covers
 * delivery, not just buffering; 'P' runs --iters (default 20000) 8-byte
 * ping-pongs with TCP_NODELAY; 'Q' tells the server to exit. The client
 * connects with retries for 10 s, so it may be started right after the
 * server. It prints key=value lines (bw_*, lat_*: half of each round trip).
 * Exit status 0 on success, 1 on a failed system call, 2 on bad arguments.
 */
#include "bench_util.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define DEFAULT_PORT "18600"
#define CONNECT_RETRY_NS 10000000000ull
#define WARMUP_ITERS 1000

struct opts {
	const char *host;
	const char *port;
	size_t size;
	double seconds;
	size_t iters;
};

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* Stream: count bytes until EOF, then report the count to the client. */
static int serve_stream(int fd)
{
	size_t cap = 1 << 20;
	char *buf = malloc(cap);
	uint64_t total = 0;
	ssize_t r;

	if (!buf)
		return -ENOMEM;
	while ((r = read(fd, buf, cap)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			free(buf);
			return -errno;
		}
		total += (uint64_t)r;
	}
	free(buf);
	return bench_write_full(fd, &total, sizeof(total));
}

static int serve_pingpong(int fd)
{
	uint64_t v;
	int ret;

	set_nodelay(fd);
	while (!(ret = bench_read_full(fd, &v, sizeof(v))))
		if ((ret = bench_write_full(fd, &v, sizeof(v))))
			return ret;
	return ret == -EPIPE ? 0 : ret; /* EOF ends the session */
}

static int run_server(const struct opts *o)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	int one = 1, lfd, ret = 0;

	sa.sin_port = htons((uint16_t)atoi(o->port));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4))
		return -errno;
	for (;;) {
		char mode = 0;
		int fd = accept(lfd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			ret = -errno;
			break;
		}
		ret = bench_read_full(fd, &mode, 1);
		if (!ret && mode == 'S')
			ret = serve_stream(fd);
		else if (!ret && mode == 'P')
			ret = serve_pingpong(fd);
		close(fd);
		if (ret || mode == 'Q')
			break;
	}
	close(lfd);
	return ret;
}

static int connect_with_retry(const struct opts *o, char mode)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	uint64_t deadline = bench_now_ns() + CONNECT_RETRY_NS;
	int fd, ret;

	ret = getaddrinfo(o->host, o->port, &hints, &ai);
	if (ret) {
		fprintf(stderr, "tcp_stream: %s: %s\n", o->host, gai_strerror(ret));
		return -EHOSTUNREACH;
	}
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			ret = -errno;
			break;
		}
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen)) {
			ret = bench_write_full(fd, &mode, 1);
			break;
		}
		ret = -errno;
		close(fd);
		fd = -1;
		/* The server may not listen yet: it is started just before us. */
		if (ret != -ECONNREFUSED || bench_now_ns() > deadline)
			break;
		usleep(50000);
	}
	freeaddrinfo(ai);
	if (ret && fd >= 0)
		close(fd);
	return ret ? ret : fd;
}

static int client_stream(const struct opts *o)
{
	uint64_t start, end, deadline, sent = 0, received;
	char *buf = malloc(o->size);
	int fd, ret = 0;

	if (!buf)
		return -ENOMEM;
	memset(buf, 0x5a, o->size);
	fd = connect_with_retry(o, 'S');
	if (fd < 0) {
		free(buf);
		return fd;
	}
	start = bench_now_ns();
	deadline = start + (uint64_t)(o->seconds * 1e9);
	while (!ret && bench_now_ns() < deadline) {
		ret = bench_write_full(fd, buf, o->size);
		sent += o->size;
	}
	if (!ret && shutdown(fd, SHUT_WR))
		ret = -errno;
	if (!ret)
		ret = bench_read_full(fd, &received, sizeof(received));
	end = bench_now_ns();
	close(fd);
	free(buf);
	if (!ret && received != sent)
		ret = -EIO;
	if (ret)
		return ret;
	printf("bw_size_bytes=%zu\n", o->size);
	printf("bw_bytes=%llu\n", (unsigned long long)received);
	printf("bw_gbyte_per_s=%.3f\n", (double)received / (double)(end - start));
	printf("bw_gbit_per_s=%.3f\n", (double)received * 8 / (double)(end - start));
	return 0;
}

static int client_pingpong(const struct opts *o)
{
	uint64_t *rtt = calloc(o->iters, sizeof(*rtt));
	int fd, ret = 0;

	if (!rtt)
		return -ENOMEM;
	fd = connect_with_retry(o, 'P');
	if (fd < 0) {
		free(rtt);
		return fd;
	}
	set_nodelay(fd);
	for (uint64_t i = 0; !ret && i < WARMUP_ITERS + o->iters; i++) {
		uint64_t v = i, start = bench_now_ns();

		ret = bench_write_full(fd, &v, sizeof(v));
		if (!ret)
			ret = bench_read_full(fd, &v, sizeof(v));
		if (!ret && v != i)
			ret = -EIO;
		if (!ret && i >= WARMUP_ITERS)
			rtt[i - WARMUP_ITERS] = bench_now_ns() - start;
	}
	close(fd);
	if (!ret) {
		printf("lat_size_bytes=8\n");
		bench_print_latency(rtt, o->iters);
	}
	free(rtt);
	return ret;
}

static int run_client(const struct opts *o)
{
	int ret = client_stream(o), fd;

	if (!ret)
		ret = client_pingpong(o);
	/* Always release the server, even after a failed measurement. */
	fd = connect_with_retry(o, 'Q');
	if (fd >= 0)
		close(fd);
	return ret;
}

static void usage(int status)
{
	fprintf(stderr, "usage: tcp_stream [--port P]  (server)\n"
			"       tcp_stream [--port P] [--size BYTES] [--seconds S] [--iters N] HOST"
			"  (client)\n");
	exit(status);
}

int main(int argc, char **argv)
{
	struct opts o = {.port = DEFAULT_PORT, .size = 1 << 20, .seconds = 2.0, .iters = 20000};
	int ret;

	for (int i = 1; i < argc; i++) {
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--help"))
			usage(0);
		else if (!strcmp(argv[i], "--port") && val)
			o.port = val;
		else if (!strcmp(argv[i], "--size"))
			o.size = bench_parse_ulong(argv[i], val);
		else if (!strcmp(argv[i], "--seconds"))
			o.seconds = bench_parse_seconds(argv[i], val);
		else if (!strcmp(argv[i], "--iters"))
			o.iters = bench_parse_ulong(argv[i], val);
		else if (argv[i][0] != '-' && !o.host) {
			o.host = argv[i];
			continue;
		} else
			usage(2);
		i++;
	}
	if (bench_parse_ulong("--port", o.port) > 65535)
		usage(2);
	/* A vanished peer must be an error message, not a silent death. */
	signal(SIGPIPE, SIG_IGN);
	ret = o.host ? run_client(&o) : run_server(&o);
	if (ret)
		fprintf(stderr, "tcp_stream %s: %s\n", o.host ? "client" : "server",
			strerror(-ret));
	return ret ? 1 : 0;
}
