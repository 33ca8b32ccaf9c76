/*
 * ucx_sockaddr: a UCX client and server that connect through UCP's sockaddr
 * API (ucp_listener on the server, ucp_ep_create with a socket address on the
 * client) and exchange verified messages for a given time.
 *
 *   ucx_sockaddr server PORT SECONDS
 *   ucx_sockaddr client HOST PORT SECONDS
 *
 * The client runs for SECONDS; the server fails when its client has not ended
 * within SECONDS (plus two stall periods).
 *
 * The client sends tagged messages of several sizes (eager and rendezvous
 * alike), the server checks each and answers with the bitwise complement, the
 * client checks the answer. A connection that UCX drops (an endpoint error,
 * e.g. a keepalive timeout) or a message that does not complete within
 * STALL_S seconds fails the run: long-lived connections are what this judges
 * (UCX's UD keepalive lane killed them after ~50 s once). The last message
 * carries MSG_LAST; the client then closes its endpoint first, the server
 * once it sees that close (or STALL_S later), and both print a key=value
 * summary. Exit status: 0 ok, 1 failure, 2 usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <ucp/api/ucp.h>

/* A message that does not complete within this long is a stall. */
#define STALL_S 10.0
/* How long the server waits for its client to connect. */
#define ACCEPT_S 30.0
/* Progress lines, so that a stall shows where it happened. */
#define REPORT_EVERY_S 10.0
#define MSG_LAST 1u
#define MAX_MSG_BYTES (1u << 20)

/* The header that starts every message; the payload follows. */
struct msg_hdr {
	uint64_t seq;
	uint32_t len; /* whole message, header included */
	uint32_t flags;
};

/* Sizes the client cycles through: eager short, eager, and rendezvous. */
static const uint32_t msg_sizes[] = {16, 256, 4096, 65536, MAX_MSG_BYTES};
#define N_SIZES (sizeof(msg_sizes) / sizeof(msg_sizes[0]))

struct xfer {
	bool done;
	ucs_status_t status;
	size_t length;
};

struct peer {
	ucp_context_h ctx;
	ucp_worker_h worker;
	ucp_ep_h ep;
	ucp_conn_request_h conn_request; /* server: set by the listener */
	bool ep_failed;
	ucs_status_t ep_status;
	const char *role;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void die(const struct peer *p, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "ucx_sockaddr %s: FAIL: ", p ? p->role : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* Payload byte i of message seq, as sent by the client; the server answers
 * with its complement. */
static uint8_t pattern(uint64_t seq, size_t i)
{
	return (uint8_t)(seq * 131u + i * 7u + (i >> 8));
}

static void fill(uint8_t *buf, uint64_t seq, uint32_t len, uint32_t flags, uint8_t xor_mask)
{
	struct msg_hdr h = {.seq = seq, .len = len, .flags = flags};
	size_t i;

	memcpy(buf, &h, sizeof(h));
	for (i = sizeof(h); i < len; i++)
		buf[i] = pattern(seq, i) ^ xor_mask;
}

/* Returns the index of the first wrong byte, or -1 when the message is the
 * expected one. */
static long check(const uint8_t *buf, size_t got, uint64_t seq, uint32_t len, uint8_t xor_mask)
{
	struct msg_hdr h;
	size_t i;

	if (got != len || got < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (h.seq != seq || h.len != len)
		return 0;
	for (i = sizeof(h); i < len; i++)
		if (buf[i] != (uint8_t)(pattern(seq, i) ^ xor_mask))
			return (long)i;
	return -1;
}

static void ep_error_cb(void *arg, ucp_ep_h ep, ucs_status_t status)
{
	struct peer *p = arg;

	(void)ep;
	p->ep_failed = true;
	p->ep_status = status;
}

static void send_done(void *request, ucs_status_t status, void *user_data)
{
	struct xfer *x = user_data;

	(void)request;
	x->status = status;
	x->done = true;
}

static void recv_done(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
		      void *user_data)
{
	struct xfer *x = user_data;

	(void)request;
	x->status = status;
	x->length = info ? info->length : 0;
	x->done = true;
}

/* wait_req: progresses the worker until the operation completes; a request
 * that is not a pointer completed (or failed) at once. */
static void wait_req(struct peer *p, ucs_status_ptr_t req, struct xfer *x, const char *what,
		     uint64_t seq)
{
	double deadline = now_s() + STALL_S;
	unsigned spins = 0;

	if (req == NULL) {
		x->done = true;
		x->status = UCS_OK;
		return;
	}
	if (UCS_PTR_IS_ERR(req))
		die(p, "%s #%" PRIu64 ": %s", what, seq, ucs_status_string(UCS_PTR_STATUS(req)));
	while (!x->done) {
		ucp_worker_progress(p->worker);
		/* One progress call may complete the operation and report the
		 * peer's close after it: what completed counts, not the close. */
		if (x->done)
			break;
		if (p->ep_failed)
			die(p, "%s #%" PRIu64 ": endpoint error: %s", what, seq,
			    ucs_status_string(p->ep_status));
		if (++spins % 1024 == 0 && now_s() > deadline)
			die(p, "%s #%" PRIu64 ": no completion within %.0f s (stall)", what, seq,
			    STALL_S);
	}
	ucp_request_free(req);
	if (x->status != UCS_OK)
		die(p, "%s #%" PRIu64 ": %s", what, seq, ucs_status_string(x->status));
}

static void send_msg(struct peer *p, const void *buf, uint32_t len, uint64_t seq)
{
	struct xfer x = {0};
	ucp_request_param_t prm = {
	    .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
	    .cb.send = send_done,
	    .user_data = &x,
	};

	wait_req(p, ucp_tag_send_nbx(p->ep, buf, len, seq, &prm), &x, "send", seq);
}

static size_t recv_msg(struct peer *p, void *buf, uint64_t seq)
{
	struct xfer x = {0};
	ucp_request_param_t prm = {
	    .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
			    UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
	    .cb.recv = recv_done,
	    .user_data = &x,
	};

	/* Tags are sequence numbers: a message out of order is a failure. No
	 * immediate completion: the length always comes through recv_done. */
	wait_req(p, ucp_tag_recv_nbx(p->worker, buf, MAX_MSG_BYTES, seq, UINT64_MAX, &prm), &x,
		 "receive", seq);
	return x.length;
}

static void conn_handler(ucp_conn_request_h req, void *arg)
{
	struct peer *p = arg;

	if (p->conn_request != NULL) {
		ucp_listener_reject(NULL, req); /* one client at a time */
		return;
	}
	p->conn_request = req;
}

static void peer_init(struct peer *p)
{
	ucp_params_t params = {
	    .field_mask = UCP_PARAM_FIELD_FEATURES,
	    .features = UCP_FEATURE_TAG,
	};
	ucp_worker_params_t wparams = {
	    .field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
	    .thread_mode = UCS_THREAD_MODE_SINGLE,
	};
	ucs_status_t st;

	st = ucp_init(&params, NULL, &p->ctx);
	if (st != UCS_OK)
		die(p, "ucp_init: %s", ucs_status_string(st));
	st = ucp_worker_create(p->ctx, &wparams, &p->worker);
	if (st != UCS_OK)
		die(p, "ucp_worker_create: %s", ucs_status_string(st));
}

static void ep_create(struct peer *p, ucp_ep_params_t *ep_params)
{
	ucs_status_t st;

	ep_params->field_mask |=
	    UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
	ep_params->err_mode = UCP_ERR_HANDLING_MODE_PEER;
	ep_params->err_handler.cb = ep_error_cb;
	ep_params->err_handler.arg = p;
	st = ucp_ep_create(p->worker, ep_params, &p->ep);
	if (st != UCS_OK)
		die(p, "ucp_ep_create: %s", ucs_status_string(st));
}

/* wait_client_close: the server's last answer is sent; the client closes
 * first (its close reaches this endpoint as an error), so that no close of
 * ours can overtake the answer it still waits for. A client that never
 * closes is not waited for beyond STALL_S. */
static void wait_client_close(struct peer *p)
{
	double deadline = now_s() + STALL_S;
	unsigned spins = 0;

	while (!p->ep_failed && (++spins % 1024 || now_s() < deadline))
		ucp_worker_progress(p->worker);
}

/* peer_close: a flushing close; the peer may already have gone (it closes
 * after the last message too), so an error here is not a failure. */
static void peer_close(struct peer *p)
{
	/* An endpoint the peer closed has nothing left to flush. */
	ucp_request_param_t prm = {.op_attr_mask = p->ep_failed ? UCP_OP_ATTR_FIELD_FLAGS : 0,
				   .flags = p->ep_failed ? UCP_EP_CLOSE_FLAG_FORCE : 0};
	ucs_status_ptr_t req = ucp_ep_close_nbx(p->ep, &prm);
	double deadline = now_s() + STALL_S;

	if (UCS_PTR_IS_PTR(req)) {
		while (ucp_request_check_status(req) == UCS_INPROGRESS && now_s() < deadline)
			ucp_worker_progress(p->worker);
		ucp_request_free(req);
	}
	ucp_worker_destroy(p->worker);
	ucp_cleanup(p->ctx);
}

static void report(const struct peer *p, const char *prefix, uint64_t msgs, uint64_t bytes,
		   double t0)
{
	double dt = now_s() - t0;

	printf("%s role=%s messages=%" PRIu64 " bytes=%" PRIu64 " seconds=%.1f mbyte_per_s=%.1f\n",
	       prefix, p->role, msgs, bytes, dt, dt > 0 ? bytes / dt / 1e6 : 0.0);
	fflush(stdout);
}

static int run_server(struct peer *p, const char *port, double seconds)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
	ucp_listener_params_t lp = {
	    .field_mask =
		UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
	    .sockaddr = {.addr = (const struct sockaddr *)&sa, .addrlen = sizeof(sa)},
	    .conn_handler = {.cb = conn_handler, .arg = p},
	};
	ucp_ep_params_t ep_params = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST};
	ucp_listener_h listener;
	uint8_t *in = malloc(MAX_MSG_BYTES), *out = malloc(MAX_MSG_BYTES);
	uint64_t seq, bytes = 0;
	double deadline, t0, next_report;
	ucs_status_t st;

	if (!in || !out)
		die(p, "out of memory");
	sa.sin_port = htons((uint16_t)atoi(port));
	st = ucp_listener_create(p->worker, &lp, &listener);
	if (st != UCS_OK)
		die(p, "ucp_listener_create on port %s: %s", port, ucs_status_string(st));
	printf("listening port=%s\n", port);
	fflush(stdout);

	deadline = now_s() + ACCEPT_S;
	while (p->conn_request == NULL) {
		ucp_worker_progress(p->worker);
		if (now_s() > deadline)
			die(p, "no client connected within %.0f s", ACCEPT_S);
	}
	ep_params.conn_request = p->conn_request;
	ep_create(p, &ep_params);
	printf("connected\n");
	fflush(stdout);

	t0 = next_report = now_s();
	for (seq = 0;; seq++) {
		struct msg_hdr h;
		size_t got = recv_msg(p, in, seq);
		long bad;

		if (got < sizeof(h))
			die(p, "message #%" PRIu64 ": %zu bytes, shorter than its header", seq,
			    got);
		memcpy(&h, in, sizeof(h));
		bad = check(in, got, seq, h.len, 0);
		if (bad >= 0)
			die(p, "message #%" PRIu64 " (%zu bytes): wrong at byte %ld", seq, got,
			    bad);
		fill(out, seq, h.len, h.flags, 0xff);
		send_msg(p, out, h.len, seq);
		bytes += 2 * got;
		if (now_s() >= next_report) {
			report(p, "progress", seq + 1, bytes, t0);
			next_report += REPORT_EVERY_S;
		}
		if (h.flags & MSG_LAST)
			break;
		if (now_s() > t0 + seconds + 2 * STALL_S)
			die(p, "the client did not end within %.0f s", seconds + 2 * STALL_S);
	}
	report(p, "result", seq + 1, bytes, t0);
	wait_client_close(p);
	ucp_listener_destroy(listener); /* before its worker goes */
	peer_close(p);
	free(in);
	free(out);
	return 0;
}

static int run_client(struct peer *p, const char *host, const char *port, double seconds)
{
	struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
	ucp_ep_params_t ep_params = {
	    .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
	    .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
	};
	uint8_t *in = malloc(MAX_MSG_BYTES), *out = malloc(MAX_MSG_BYTES);
	uint64_t seq, bytes = 0;
	double t0, end, next_report;
	int rc;

	if (!in || !out)
		die(p, "out of memory");
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc != 0)
		die(p, "%s: %s", host, gai_strerror(rc));
	ep_params.sockaddr.addr = ai->ai_addr;
	ep_params.sockaddr.addrlen = ai->ai_addrlen;
	ep_create(p, &ep_params);
	freeaddrinfo(ai);

	t0 = next_report = now_s();
	end = t0 + seconds;
	for (seq = 0;; seq++) {
		uint32_t len = msg_sizes[seq % N_SIZES];
		bool last = now_s() >= end;
		size_t got;
		long bad;

		fill(out, seq, len, last ? MSG_LAST : 0, 0);
		send_msg(p, out, len, seq);
		got = recv_msg(p, in, seq);
		bad = check(in, got, seq, len, 0xff);
		if (bad >= 0)
			die(p, "answer #%" PRIu64 " (%zu of %u bytes): wrong at byte %ld", seq, got,
			    len, bad);
		bytes += 2 * got;
		if (now_s() >= next_report) {
			report(p, "progress", seq + 1, bytes, t0);
			next_report += REPORT_EVERY_S;
		}
		if (last)
			break;
	}
	report(p, "result", seq + 1, bytes, t0);
	peer_close(p);
	free(in);
	free(out);
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: ucx_sockaddr server PORT SECONDS\n"
			"       ucx_sockaddr client HOST PORT SECONDS\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct peer p = {0};
	double seconds;

	if (argc == 4 && strcmp(argv[1], "server") == 0) {
		seconds = atof(argv[3]);
		if (seconds <= 0)
			return usage();
		p.role = "server";
		peer_init(&p);
		return run_server(&p, argv[2], seconds);
	}
	if (argc == 5 && strcmp(argv[1], "client") == 0) {
		seconds = atof(argv[4]);
		if (seconds <= 0)
			return usage();
		p.role = "client";
		peer_init(&p);
		return run_client(&p, argv[2], argv[3], seconds);
	}
	return usage();
}
