/* SPDX-License-Identifier: MIT */
/*
 * cm_deadpeer ADDR PORT: a peer process of the RDMA CM dies while this one
 * waits for it, in each state where a kernel would answer for the dead
 * process at once (docs/DESIGN.md "RDMA CM"). ADDR is an address of the
 * node the program runs in; it listens or connects there with a peer it
 * starts itself (this program again, `cm_deadpeer --peer ROLE ADDR PORT`),
 * which tells it on a pipe where it is and is then killed (SIGKILL: no
 * cleanup, as a crash). Each case uses its own port from PORT on.
 *
 *   established  connected; the peer dies; rdma_disconnect: DISCONNECTED
 *                (its kernel's DREP) within 2 s
 *   dreq_sent    connected; the peer stops, our DREQ goes unanswered
 *                (DREQ_SENT), the peer dies: DISCONNECTED within 2 s
 *   rep_sent     accepted, no RTU (REP_SENT; the peer's CM sent an MRA for
 *                the REP); the peer dies; rdma_disconnect: DISCONNECTED
 *                within 2 s
 *   mra_req      our REQ reached the listener, whose CM sent an MRA (no
 *                REP yet: a try lasts 66 s now); the listener dies:
 *                REJECTED within 2 s
 *   req_held     we hold a request unanswered (our CM sent the MRA); the
 *                requester dies: within 1 s the request is gone (the
 *                kernel's ucma reports nothing before an accept; the
 *                accept fails with EINVAL)
 *
 * One "ok NAME" / "FAIL NAME: why" line per check; exit status 1 on a
 * failure. Without the CM's answers for a dead peer, the DREQ cases would
 * wait out 15 resends (74 s) and the MRA cases the 66 s of a try.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rdma_cma.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MS 2000 /* a dead peer's answer must come within this */
#define STEP_MS 5000   /* any other step of a case */

static int fails;
static pid_t peers[16]; /* killed at the end, whatever became of their case */
static int npeers;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void check(int ok, const char *name, const char *fmt, double ms)
{
	if (ok) {
		printf("ok %s (%.0f ms)\n", name, ms);
	} else {
		printf("FAIL %s: ", name);
		printf(fmt, ms);
		printf("\n");
		fails++;
	}
	fflush(stdout);
}

/* The next event on ch within ms, acked (a copy in *copy); -1 on timeout. */
static int next_event(struct rdma_event_channel *ch, int ms, struct rdma_cm_event *copy)
{
	struct pollfd p = {.fd = ch->fd, .events = POLLIN};
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) != 1 || rdma_get_cm_event(ch, &ev))
		return -1;
	*copy = *ev;
	rdma_ack_cm_event(ev);
	return 0;
}

/* Events until one of type want (others are skipped), within ms. */
static int wait_for(struct rdma_event_channel *ch, enum rdma_cm_event_type want, int ms,
		    struct rdma_cm_event *copy)
{
	double end = now_ms() + ms;

	while (now_ms() < end) {
		if (next_event(ch, (int)(end - now_ms()) + 1, copy))
			return -1;
		if (copy->event == want)
			return 0;
	}
	return -1;
}

static struct sockaddr_in sin_of(const char *addr, int port)
{
	struct sockaddr_in s = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};

	inet_pton(AF_INET, addr, &s.sin_addr);
	return s;
}

static struct rdma_cm_id *listen_on(struct rdma_event_channel *ch, const char *addr, int port)
{
	struct sockaddr_in s = sin_of(addr, port);
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(id, (struct sockaddr *)&s) || rdma_listen(id, 8))
		return NULL;
	return id;
}

/* Resolve and send a REQ (no QP: the consumer answers with rdma_establish). */
static struct rdma_cm_id *connect_to(struct rdma_event_channel *ch, const char *addr, int port)
{
	struct sockaddr_in s = sin_of(addr, port);
	struct rdma_conn_param cp = {
	    .responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .qp_num = 0x4242};
	struct rdma_cm_event ev;
	struct rdma_cm_id *id;

	if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    rdma_resolve_addr(id, NULL, (struct sockaddr *)&s, 2000) ||
	    wait_for(ch, RDMA_CM_EVENT_ADDR_RESOLVED, STEP_MS, &ev) ||
	    rdma_resolve_route(id, 2000) ||
	    wait_for(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, STEP_MS, &ev) || rdma_connect(id, &cp))
		return NULL;
	return id;
}

static void tell(const char *what)
{
	printf("%s\n", what);
	fflush(stdout);
}

/* The peer's part: reach the state ROLE names, say so, and wait to be killed. */
static int peer(const char *role, const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event ev;
	struct rdma_cm_id *id;

	if (!ch)
		return 1;
	if (!strcmp(role, "listener")) { /* holds the first request, answers nothing */
		if (!listen_on(ch, addr, port))
			return 1;
		tell("listening");
		if (wait_for(ch, RDMA_CM_EVENT_CONNECT_REQUEST, STEP_MS * 2, &ev))
			return 1;
		tell("request");
	} else {
		id = connect_to(ch, addr, port);
		if (!id)
			return 1;
		if (!strcmp(role, "requester")) {
			tell("connecting");
		} else {
			if (wait_for(ch, RDMA_CM_EVENT_CONNECT_RESPONSE, STEP_MS, &ev))
				return 1;
			if (!strcmp(role, "responded")) {
				tell("response"); /* and no RTU */
			} else {
				if (rdma_establish(id))
					return 1;
				tell("established");
			}
		}
	}
	for (;;)
		pause();
}

struct child {
	pid_t pid;
	FILE *out; /* what it tells */
};

static int start_peer(struct child *c, const char *role, const char *addr, int port)
{
	char portbuf[16];
	int fds[2];

	if (pipe(fds))
		return -1;
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	c->pid = fork();
	if (c->pid < 0)
		return -1;
	if (c->pid == 0) {
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		/* exec: a forked child would share this process's CM, which stays here */
		execl("/proc/self/exe", "cm_deadpeer", "--peer", role, addr, portbuf, (char *)NULL);
		_exit(127);
	}
	if (npeers < (int)(sizeof(peers) / sizeof(peers[0])))
		peers[npeers++] = c->pid;
	close(fds[1]);
	c->out = fdopen(fds[0], "r");
	return c->out ? 0 : -1;
}

/* Until the peer says what (or fails). */
static int heard(struct child *c, const char *what)
{
	char line[64];

	while (fgets(line, sizeof(line), c->out))
		if (!strncmp(line, what, strlen(what)))
			return 0;
	return -1;
}

/* The peer's state letter in /proc (R, S, T, ...), 0 when unreadable. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	return p && p[1] == ' ' ? p[2] : 0;
}

static void kill_peer(struct child *c, int sig)
{
	kill(c->pid, sig);
	/* kill() returns before the peer stops: its CM must not answer after this. */
	for (int i = 0; sig == SIGSTOP && i < 1000 && proc_state(c->pid) != 'T'; i++)
		usleep(1000);
	if (sig == SIGKILL) {
		waitpid(c->pid, NULL, 0);
		fclose(c->out);
	}
}

/* As the server of a peer in role: our ID of its connection, once at `state`. */
static struct rdma_cm_id *serve_peer(struct rdma_event_channel *ch, struct child *c,
				     const char *role, const char *state, const char *addr,
				     int port, int accept)
{
	struct rdma_conn_param cp = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4343};
	struct rdma_cm_event ev;
	struct rdma_cm_id *l = listen_on(ch, addr, port), *id;

	if (!l || start_peer(c, role, addr, port) ||
	    wait_for(ch, RDMA_CM_EVENT_CONNECT_REQUEST, STEP_MS, &ev))
		return NULL;
	id = ev.id;
	if (accept && rdma_accept(id, &cp))
		return NULL;
	return heard(c, state) ? NULL : id;
}

/* rdma_disconnect to a peer that is gone (DREQ_SENT or not): DISCONNECTED within 2 s. */
static void disconnect_dead(struct rdma_event_channel *ch, struct rdma_cm_id *id, const char *name,
			    int do_disconnect, double t0)
{
	struct rdma_cm_event ev;

	if (do_disconnect && rdma_disconnect(id)) {
		check(0, name, "rdma_disconnect failed", 0);
		return;
	}
	if (wait_for(ch, RDMA_CM_EVENT_DISCONNECTED, ANSWER_MS, &ev)) {
		check(0, name, "no DISCONNECTED within %.0f ms of the peer's death", now_ms() - t0);
		return;
	}
	check(1, name, "", now_ms() - t0);
}

static void case_established(const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct child c;
	struct rdma_cm_id *id = serve_peer(ch, &c, "established", "established", addr, port, 1);
	double t0;

	if (!id) {
		check(0, "established", "the peer did not connect", 0);
		return;
	}
	kill_peer(&c, SIGKILL);
	t0 = now_ms();
	disconnect_dead(ch, id, "established", 1, t0);
}

static void case_dreq_sent(const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct child c;
	struct rdma_cm_id *id = serve_peer(ch, &c, "established", "established", addr, port, 1);
	double t0;

	if (!id) {
		check(0, "dreq_sent", "the peer did not connect", 0);
		return;
	}
	kill_peer(&c, SIGSTOP); /* alive, but its CM answers nothing */
	if (rdma_disconnect(id)) {
		check(0, "dreq_sent", "rdma_disconnect failed", 0);
		return;
	}
	usleep(200000);
	kill_peer(&c, SIGKILL);
	t0 = now_ms();
	disconnect_dead(ch, id, "dreq_sent", 0, t0);
}

static void case_rep_sent(const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct child c;
	struct rdma_cm_id *id = serve_peer(ch, &c, "responded", "response", addr, port, 1);
	double t0;

	if (!id) {
		check(0, "rep_sent", "the peer got no CONNECT_RESPONSE", 0);
		return;
	}
	kill_peer(&c, SIGKILL);
	t0 = now_ms();
	disconnect_dead(ch, id, "rep_sent", 1, t0);
}

static void case_mra_req(const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_event ev;
	struct child c;
	double t0;

	if (start_peer(&c, "listener", addr, port) || heard(&c, "listening") ||
	    !connect_to(ch, addr, port) || heard(&c, "request")) {
		check(0, "mra_req", "the listener got no request", 0);
		return;
	}
	kill_peer(&c, SIGKILL);
	t0 = now_ms();
	if (wait_for(ch, RDMA_CM_EVENT_REJECTED, ANSWER_MS, &ev)) {
		check(0, "mra_req", "no REJECTED within %.0f ms of the listener's death",
		      now_ms() - t0);
		return;
	}
	check(ev.status == 28, "mra_req", "REJECTED with status other than 28", now_ms() - t0);
}

static void case_req_held(const char *addr, int port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = {
	    .responder_resources = 1, .initiator_depth = 1, .qp_num = 0x4444};
	struct child c;
	struct rdma_cm_id *id = serve_peer(ch, &c, "requester", "connecting", addr, port, 0);
	double t0;
	int ret;

	if (!id) {
		check(0, "req_held", "no request came", 0);
		return;
	}
	kill_peer(&c, SIGKILL);
	t0 = now_ms();
	/*
	 * The requester's kernel would have rejected (REJ "timeout"); the
	 * kernel's ucma reports nothing on a request not yet accepted, and
	 * the accept fails.
	 */
	usleep(ANSWER_MS * 1000 / 2);
	ret = rdma_accept(id, &cp);
	check(ret && errno == EINVAL, "req_held",
	      "rdma_accept of a dead requester's request did not fail with EINVAL (%.0f ms)",
	      now_ms() - t0);
}

int main(int argc, char **argv)
{
	int port;

	if (argc == 5 && !strcmp(argv[1], "--peer"))
		return peer(argv[2], argv[3], atoi(argv[4]));
	if (argc != 3 || (port = atoi(argv[2])) <= 0) {
		fprintf(stderr, "usage: cm_deadpeer IPV4_ADDR PORT\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN);
	case_established(argv[1], port);
	case_dreq_sent(argv[1], port + 1);
	case_rep_sent(argv[1], port + 2);
	case_mra_req(argv[1], port + 3);
	case_req_held(argv[1], port + 4);
	for (int i = 0; i < npeers; i++)
		if (kill(peers[i], SIGKILL) == 0)
			waitpid(peers[i], NULL, 0);
	return fails ? 1 : 0;
}
