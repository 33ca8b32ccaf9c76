/* SPDX-License-Identifier: MIT */
/*
 * lossy_verify: does data survive a lossy link intact? ib_write_bw cannot
 * tell (it never looks at the bytes) and ibv_rc_pingpong -c checks a buffer
 * of zeros, so the shaping benchmark runs this between two nodes of a fabric
 * whose links drop message attempts:
 *
 *   lossy_verify [options]                  (server, in the receiving node)
 *   lossy_verify [options] HOST             (client: the server's address)
 *
 * options: --dev HCA (mlx5_0), --gid N (3), --port|-p P (18700), --bytes N
 * (32 MiB), --sends N (2000), --send-size N (4096), --depth N (16),
 * --timeout T (8: 4.096 us * 2^T per retransmission), --seed S.
 * Both sides must get the same --bytes, --sends, --send-size and --seed.
 *
 * The client RDMA-WRITEs a pseudo-random pattern over the server's whole
 * region in messages of mixed sizes, then SENDs numbered patterned messages
 * (the server checks each on arrival, and their order), then RDMA-READs the
 * region back and compares it. After the sends the server checks the region
 * against the pattern and tells the client what it found. Every lost attempt
 * is retransmitted by the provider after the QP's timeout; any completion
 * error, stray byte or out-of-order message counts against the run.
 *
 * Output (client): key=value lines (write_*, send_*, read_*, verdict=ok or
 * verdict=corrupt). Exit 0 when everything arrived intact, 1 when not (or a
 * completion failed), 2 on a set-up error or bad arguments.
 */
#include "bench_util.h"
#include "rc_endpoint.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WC_WAIT_MS 30000
#define RECV_SLOTS 64
#define READ_CHUNK (256u * 1024u)
#define SEND_TAG 0x53454e44ull /* keeps the send pattern apart from the region's */

struct opts {
	const char *host, *dev, *port;
	int gid;
	size_t bytes, sends, send_size;
	uint32_t depth;
	uint8_t timeout;
	uint64_t seed;
};

/* What the server found, sent back to the client. */
struct verdict {
	uint64_t write_bad_bytes;
	uint64_t sends_seen;
	uint64_t send_bad;
	uint64_t send_out_of_order;
	uint64_t recv_errors;
};

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static void fill_region(uint64_t *w, size_t nwords, uint64_t seed)
{
	for (size_t i = 0; i < nwords; i++)
		w[i] = mix(seed + i);
}

/* Bytes of the region that differ from the pattern (counted per 8-byte word). */
static uint64_t region_bad_bytes(const uint64_t *w, size_t nwords, uint64_t seed)
{
	uint64_t bad = 0;

	for (size_t i = 0; i < nwords; i++)
		bad += w[i] != mix(seed + i) ? 8 : 0;
	return bad;
}

/* A send message: its sequence number, then pattern words derived from it. */
static void fill_send(uint64_t *w, size_t nwords, uint64_t seed, uint64_t seq)
{
	w[0] = seq;
	for (size_t i = 1; i < nwords; i++)
		w[i] = mix((seed ^ SEND_TAG) + seq * nwords + i);
}

static bool send_intact(const uint64_t *w, size_t nwords, uint64_t seed)
{
	for (size_t i = 1; i < nwords; i++)
		if (w[i] != mix((seed ^ SEND_TAG) + w[0] * nwords + i))
			return false;
	return true;
}

static int post_wr(struct rc_endpoint *e, enum ibv_wr_opcode op, size_t loff, uint32_t len,
		   uint64_t roff, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf + loff, .length = len, .lkey = e->mr->lkey};
	struct ibv_send_wr wr = {0}, *bad;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = e->peer.addr + roff;
	wr.wr.rdma.rkey = e->peer.rkey;
	return ibv_post_send(e->qp, &wr, &bad) ? -errno : 0;
}

static int post_recv_slot(struct rc_endpoint *e, size_t off, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = {.addr = (uintptr_t)e->buf + off, .length = len, .lkey = e->mr->lkey};
	struct ibv_recv_wr wr = {.wr_id = wr_id, .sg_list = &sge, .num_sge = 1}, *bad;

	return ibv_post_recv(e->qp, &wr, &bad) ? -errno : 0;
}

/* Waits for the oldest outstanding send-side WR; false (with a message) on failure. */
static bool reap(struct rc_endpoint *e, const char *phase)
{
	struct ibv_wc wc;
	int rc = rc_poll_one(e->cq, &wc, WC_WAIT_MS);

	if (rc == 1 && wc.status == IBV_WC_SUCCESS)
		return true;
	if (rc == 1)
		fprintf(stderr, "lossy_verify: %s: completion %s (wr %" PRIu64 ")\n", phase,
			ibv_wc_status_str(wc.status), wc.wr_id);
	else
		fprintf(stderr, "lossy_verify: %s: no completion within %d ms\n", phase,
			WC_WAIT_MS);
	return false;
}

/* Message sizes of the write phase: large and small, and not all 4 KiB-aligned. */
static const uint32_t write_sizes[] = {1048576, 65536, 4096, 200008, 8, 524288, 65544, 131072};

static int client_writes(struct rc_endpoint *e, const struct opts *o, double *gbit)
{
	uint32_t inflight = 0;
	uint64_t t0 = bench_now_ns(), n = 0;

	for (size_t off = 0; off < o->bytes; n++) {
		size_t len = write_sizes[n % (sizeof(write_sizes) / sizeof(write_sizes[0]))];

		if (len > o->bytes - off)
			len = o->bytes - off;
		if (inflight == o->depth) {
			if (!reap(e, "write"))
				return 1;
			inflight--;
		}
		if (post_wr(e, IBV_WR_RDMA_WRITE, off, (uint32_t)len, off, n))
			return 2;
		inflight++;
		off += len;
	}
	for (; inflight; inflight--)
		if (!reap(e, "write"))
			return 1;
	*gbit = (double)o->bytes * 8 / (double)(bench_now_ns() - t0);
	printf("write_bytes=%zu\nwrite_msgs=%" PRIu64 "\nwrite_gbit_per_s=%.3f\n", o->bytes, n,
	       *gbit);
	return 0;
}

static int client_sends(struct rc_endpoint *e, const struct opts *o)
{
	size_t stage = 2 * o->bytes, nwords = o->send_size / 8;
	uint32_t inflight = 0;

	for (uint64_t seq = 0; seq < o->sends; seq++) {
		/* A slot is refilled only after the WR that used it completed (RC order). */
		size_t slot = stage + (seq % o->depth) * o->send_size;

		if (inflight == o->depth) {
			if (!reap(e, "send"))
				return 1;
			inflight--;
		}
		fill_send((uint64_t *)(e->buf + slot), nwords, o->seed, seq);
		if (post_wr(e, IBV_WR_SEND, slot, (uint32_t)o->send_size, 0, seq))
			return 2;
		inflight++;
	}
	for (; inflight; inflight--)
		if (!reap(e, "send"))
			return 1;
	printf("send_msgs=%zu\n", o->sends);
	return 0;
}

static int client_reads(struct rc_endpoint *e, const struct opts *o, uint64_t *bad)
{
	uint32_t inflight = 0;

	for (size_t off = 0; off < o->bytes; off += READ_CHUNK) {
		size_t len = o->bytes - off < READ_CHUNK ? o->bytes - off : READ_CHUNK;

		if (inflight == o->depth) {
			if (!reap(e, "read"))
				return 1;
			inflight--;
		}
		if (post_wr(e, IBV_WR_RDMA_READ, o->bytes + off, (uint32_t)len, off, off))
			return 2;
		inflight++;
	}
	for (; inflight; inflight--)
		if (!reap(e, "read"))
			return 1;
	*bad = region_bad_bytes((const uint64_t *)(e->buf + o->bytes), o->bytes / 8, o->seed);
	printf("read_bytes=%zu\nread_bad_bytes=%" PRIu64 "\n", o->bytes, *bad);
	return 0;
}

static int run_client(struct rc_endpoint *e, int fd, const struct opts *o)
{
	struct verdict v;
	uint64_t read_bad = 0;
	double gbit = 0;
	char ready;
	int rc;

	if (bench_read_full(fd, &ready, 1))
		return 2;
	fill_region((uint64_t *)e->buf, o->bytes / 8, o->seed);
	rc = client_writes(e, o, &gbit);
	if (!rc)
		rc = client_sends(e, o);
	if (rc)
		return rc;
	if (bench_read_full(fd, &v, sizeof(v)))
		return 2;
	printf("write_bad_bytes=%" PRIu64 "\nsend_seen=%" PRIu64 "\nsend_bad=%" PRIu64
	       "\nsend_out_of_order=%" PRIu64 "\nrecv_errors=%" PRIu64 "\n",
	       v.write_bad_bytes, v.sends_seen, v.send_bad, v.send_out_of_order, v.recv_errors);
	rc = client_reads(e, o, &read_bad);
	ready = 'Q';
	bench_write_full(fd, &ready, 1);
	if (rc)
		return rc;
	rc = v.write_bad_bytes || v.send_bad || v.send_out_of_order || v.recv_errors ||
	     v.sends_seen != o->sends || read_bad;
	printf("verdict=%s\n", rc ? "corrupt" : "ok");
	return rc;
}

static int run_server(struct rc_endpoint *e, int fd, const struct opts *o)
{
	size_t slots = 2 * o->bytes, nwords = o->send_size / 8;
	struct verdict v = {0};
	char ready = 'R';

	for (uint64_t i = 0; i < RECV_SLOTS; i++)
		if (post_recv_slot(e, slots + i * o->send_size, (uint32_t)o->send_size, i))
			return 2;
	if (bench_write_full(fd, &ready, 1))
		return 2;
	while (v.sends_seen < o->sends) {
		const uint64_t *w;
		struct ibv_wc wc;

		if (rc_poll_one(e->cq, &wc, WC_WAIT_MS) != 1) {
			fprintf(stderr, "lossy_verify: server: no message within %d ms\n",
				WC_WAIT_MS);
			return 1;
		}
		if (wc.status != IBV_WC_SUCCESS || wc.byte_len != o->send_size) {
			fprintf(stderr, "lossy_verify: server: receive %s, %u bytes\n",
				ibv_wc_status_str(wc.status), wc.byte_len);
			v.recv_errors++;
			break; /* the QP is in error: nothing more will arrive */
		}
		w = (const uint64_t *)(e->buf + slots + wc.wr_id * o->send_size);
		v.send_bad += !send_intact(w, nwords, o->seed);
		v.send_out_of_order += w[0] != v.sends_seen;
		v.sends_seen++;
		if (post_recv_slot(e, slots + wc.wr_id * o->send_size, (uint32_t)o->send_size,
				   wc.wr_id))
			return 2;
	}
	/* Every write completed before the first send was posted: the region is final. */
	v.write_bad_bytes = region_bad_bytes((const uint64_t *)e->buf, o->bytes / 8, o->seed);
	if (bench_write_full(fd, &v, sizeof(v)) || bench_read_full(fd, &ready, 1))
		return 2;
	printf("server: write_bad_bytes=%" PRIu64 " sends=%" PRIu64 " bad=%" PRIu64
	       " out_of_order=%" PRIu64 "\n",
	       v.write_bad_bytes, v.sends_seen, v.send_bad, v.send_out_of_order);
	return v.write_bad_bytes || v.send_bad || v.send_out_of_order || v.recv_errors;
}

static size_t multiple_of_8(const char *opt, const char *val)
{
	size_t n = bench_parse_ulong(opt, val);

	if (n % 8) {
		fprintf(stderr, "lossy_verify: %s must be a multiple of 8\n", opt);
		exit(2);
	}
	return n;
}

static void parse(int argc, char **argv, struct opts *o)
{
	unsigned long depth = 16, timeout = 8;

	*o = (struct opts){.dev = "mlx5_0",
			   .port = "18700",
			   .gid = 3,
			   .bytes = 32u << 20,
			   .sends = 2000,
			   .send_size = 4096,
			   .seed = 1};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-') {
			o->host = a;
			continue;
		}
		if (!v) {
			fprintf(stderr, "lossy_verify: %s needs a value (see the source header)\n",
				a);
			exit(2);
		}
		i++;
		if (!strcmp(a, "--dev"))
			o->dev = v;
		else if (!strcmp(a, "--port") || !strcmp(a, "-p"))
			o->port = v;
		else if (!strcmp(a, "--gid"))
			o->gid = (int)bench_parse_ulong(a, v);
		else if (!strcmp(a, "--bytes"))
			o->bytes = multiple_of_8(a, v);
		else if (!strcmp(a, "--sends"))
			o->sends = bench_parse_ulong(a, v);
		else if (!strcmp(a, "--send-size"))
			o->send_size = multiple_of_8(a, v);
		else if (!strcmp(a, "--depth"))
			depth = bench_parse_ulong(a, v);
		else if (!strcmp(a, "--timeout"))
			timeout = bench_parse_ulong(a, v);
		else if (!strcmp(a, "--seed"))
			o->seed = bench_parse_ulong(a, v);
		else {
			fprintf(stderr, "lossy_verify: unknown option %s\n", a);
			exit(2);
		}
	}
	if (depth > RECV_SLOTS || timeout > 31) {
		fprintf(stderr, "lossy_verify: --depth at most %d, --timeout at most 31\n",
			RECV_SLOTS);
		exit(2);
	}
	o->depth = (uint32_t)depth;
	o->timeout = (uint8_t)timeout;
}

int main(int argc, char **argv)
{
	struct rc_opts ro;
	struct rc_endpoint e;
	struct opts o;
	int fd, lfd = -1, rc;

	parse(argc, argv, &o);
	/* A peer that gave up closes its socket: report that, do not die of it. */
	signal(SIGPIPE, SIG_IGN);
	ro = (struct rc_opts){.dev = o.dev,
			      .gid_index = o.gid,
			      .timeout = o.timeout,
			      .retry_cnt = 7,
			      .cq_depth = 2 * RECV_SLOTS,
			      .max_wr = RECV_SLOTS,
			      /* region, read-back copy (client), send staging or receive slots */
			      .buf_len = 2 * o.bytes + RECV_SLOTS * o.send_size};
	rc = rc_open(&e, &ro);
	if (rc) {
		fprintf(stderr, "lossy_verify: cannot set up %s: %s\n", o.dev, strerror(-rc));
		rc_close(&e);
		return 2;
	}
	if (o.host) {
		fd = tcp_connect_to(o.host, o.port, 10);
	} else {
		lfd = tcp_listen_on(o.port);
		fd = lfd < 0 ? lfd : tcp_accept_one(lfd);
	}
	rc = fd < 0 ? fd : rc_exchange(&e, fd);
	if (!rc && e.peer.len < 2 * o.bytes)
		rc = -EMSGSIZE; /* the two sides were given different sizes */
	if (!rc)
		rc = rc_connect(&e, &ro);
	if (rc) {
		fprintf(stderr, "lossy_verify: connection: %s\n", strerror(-rc));
		rc = 2;
	} else {
		rc = o.host ? run_client(&e, fd, &o) : run_server(&e, fd, &o);
	}
	if (fd >= 0)
		close(fd);
	if (lfd >= 0)
		close(lfd);
	rc_close(&e);
	return rc;
}
