/* SPDX-License-Identifier: MIT */
/*
 * vfabd's event loop: the control socket (one connection per client context,
 * line protocol of docs/DESIGN.md), signals, the tick (live counters, the
 * reaper), the nodes' address notifications (one epoll fd) and the deadlines
 * of timed faults, all on one poll(). The daemon is never on the data path,
 * so one thread is enough. Replies are queued per connection and sent as the
 * peer reads them: a REPORT can be megabytes, and a slow reader must not
 * stall the loop.
 */
#include "vfabd.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX (64u << 20) /* a client that reads nothing loses its connection */

void vfabd_log(const char *fmt, ...)
{
	struct timespec ts;
	struct tm tm;
	char msg[512];
	va_list ap;

	clock_gettime(CLOCK_REALTIME, &ts);
	localtime_r(&ts.tv_sec, &tm);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%02d:%02d:%02d.%03ld vfabd[%d]: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
		ts.tv_nsec / 1000000, (int)getpid(), msg);
}

/* Queues bytes for the peer; a connection past OUT_MAX is shut down. */
static void queue_out(struct vfabd_conn *c, const char *data, size_t n)
{
	size_t pending = c->out_len - c->out_off;
	char *out;

	if (pending + n > OUT_MAX) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	if (c->out_off) { /* compact: what was sent is gone */
		memmove(c->out, c->out + c->out_off, pending);
		c->out_len = pending;
		c->out_off = 0;
	}
	out = realloc(c->out, c->out_len + n);
	if (!out) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	memcpy(out + c->out_len, data, n);
	c->out = out;
	c->out_len += n;
}

/* Sends what the socket takes now; false when the connection is broken. */
static bool flush_out(struct vfabd_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->out_off += (size_t)n;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return true;
}

void vfabd_reply(struct vfabd_conn *c, const char *text)
{
	queue_out(c, text, strlen(text));
	queue_out(c, "\n", 1);
}

void vfabd_replyf(struct vfabd_conn *c, const char *fmt, ...)
{
	char line[VFABD_LINE_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vfabd_reply(c, line);
}

void vfabd_reply_err(struct vfabd_conn *c, int rc, const char *fmt, ...)
{
	const char *name = strerrorname_np(-rc);
	char msg[VFABD_LINE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	vfabd_replyf(c, "ERR %s %s", name ? name : "EIO", msg);
}

void vfabd_reply_body(struct vfabd_conn *c, char *body, size_t n)
{
	char head[32];

	snprintf(head, sizeof(head), "OK %zu\n", n);
	queue_out(c, head, strlen(head));
	queue_out(c, body, n);
	free(body);
}

static void reply(struct vfabd_conn *c, const char *text)
{
	vfabd_reply(c, text);
}

#define COUNT_USED(tbl, max, out)                                                                  \
	do {                                                                                       \
		(out) = 0;                                                                         \
		for (size_t i_ = 0; i_ < (max); i_++)                                              \
			(out) += atomic_load_explicit(&(tbl)[i_].state, memory_order_relaxed) ==   \
				 VFAB_SLOT_USED;                                                   \
	} while (0)

static void status(struct vfabd *d, struct vfabd_conn *c)
{
	struct vfab_region *r = d->r;
	unsigned qps, mrs, cqs, pds, srqs, clients = 0;
	char line[VFABD_LINE_MAX * 2];

	COUNT_USED(r->qps, VFAB_MAX_QPS, qps);
	COUNT_USED(r->mrs, VFAB_MAX_MRS, mrs);
	COUNT_USED(r->cqs, VFAB_MAX_CQS, cqs);
	COUNT_USED(r->pds, VFAB_MAX_PDS, pds);
	COUNT_USED(r->srqs, VFAB_MAX_SRQS, srqs);
	for (size_t i = 0; i < d->nconns; i++)
		clients += d->conns[i].pid && !d->conns[i].bye;
	/* The fabric name is restricted to [A-Za-z0-9_-]: no JSON escaping needed. */
	snprintf(line, sizeof(line),
		 "{\"fabric\":\"%s\",\"nodes\":%u,\"hcas\":%u,\"qps\":%u,\"mrs\":%u,\"cqs\":%u,"
		 "\"clients\":%u,\"pds\":%u,\"srqs\":%u,\"pid\":%d,\"ready\":%u}",
		 d->fabric, r->nnodes, r->nhcas, qps, mrs, cqs, clients, pds, srqs, (int)getpid(),
		 atomic_load(&r->ready));
	reply(c, line);
}

static void hello(struct vfabd *d, struct vfabd_conn *c, char *arg)
{
	char *end, *opts = strchr(arg, ' ');
	long pid;
	int rc;

	if (c->pid) {
		vfabd_reply_err(c, -EALREADY, "HELLO was already sent on this connection");
		return;
	}
	if (opts)
		*opts++ = '\0';
	errno = 0;
	pid = strtol(arg, &end, 10);
	if (end == arg || *end || errno || pid <= 0 || pid > 0x3fffffff) {
		vfabd_reply_err(c, -EINVAL, "usage: HELLO <pid> [hca=<idx> async=<fifo path>]");
		return;
	}
	rc = opts ? vfabd_hello_parse_opts(d->r, c, opts) : 0;
	if (rc) {
		vfabd_reply_err(c, rc,
				"usage: HELLO <pid> [hca=<idx> async=<rundir>/fifo/<name>]: %s",
				rc == -ENOENT  ? "no such HCA"
				: rc == -EPERM ? "the FIFO must be in the run dir's fifo/"
					       : "bad options");
		return;
	}
	c->pid = (pid_t)pid;
	reply(c, "OK");
}

/* Requests that change the fabric or signal processes need a trusted peer. */
static bool allowed(struct vfabd_conn *c, const char *what)
{
	if (c->privileged)
		return true;
	vfabd_reply_err(c, -EPERM, "%s needs root or vfabd's own user", what);
	return false;
}

static void handle_line(struct vfabd *d, struct vfabd_conn *c, char *line)
{
	size_t n = strlen(line);

	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (!strncmp(line, "HELLO ", 6)) {
		hello(d, c, line + 6);
	} else if (!strcmp(line, "BYE")) {
		c->bye = true;
		reply(c, "OK");
	} else if (!strcmp(line, "STATUS")) {
		status(d, c);
	} else if (!strcmp(line, "REPORT")) {
		vfabd_req_report(d, c);
	} else if (!strncmp(line, "LINK ", 5)) {
		if (allowed(c, "LINK"))
			vfabd_req_link(d, c, line + 5);
	} else if (!strncmp(line, "SHAPE ", 6)) {
		if (allowed(c, "SHAPE"))
			vfabd_req_shape(d, c, line + 6);
	} else if (!strncmp(line, "FAULT ", 6)) {
		if (allowed(c, "FAULT"))
			vfabd_req_fault(d, c, line + 6);
	} else if (!strcmp(line, "SHUTDOWN")) {
		if (!allowed(c, "SHUTDOWN"))
			return;
		reply(c, "OK");
		vfabd_log("SHUTDOWN requested");
		d->stop = true;
	} else {
		vfabd_reply_err(c, -EINVAL,
				"unknown request (HELLO, BYE, STATUS, REPORT, LINK, SHAPE, FAULT, "
				"SHUTDOWN)");
	}
}

static bool pid_has_other_conn(const struct vfabd *d, const struct vfabd_conn *c)
{
	for (size_t i = 0; i < d->nconns; i++)
		if (&d->conns[i] != c && d->conns[i].pid == c->pid && !d->conns[i].bye)
			return true;
	return false;
}

static void drop_conn(struct vfabd *d, size_t i)
{
	struct vfabd_conn *c = &d->conns[i];

	if (c->pid && !c->bye && !pid_has_other_conn(d, c)) {
		int n = vfab_region_reap_pid(d->r, c->pid);

		vfabd_log("pid %d closed its connection without BYE: reaped %d object(s)",
			  (int)c->pid, n);
	}
	close(c->fd);
	free(c->async);
	free(c->out);
	d->conns[i] = d->conns[--d->nconns];
}

/* Returns false when the connection is finished. */
static bool read_conn(struct vfabd *d, struct vfabd_conn *c)
{
	for (;;) {
		ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
		char *nl;

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false;
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		while ((nl = memchr(c->buf, '\n', c->len))) {
			size_t used = (size_t)(nl - c->buf) + 1;

			*nl = '\0';
			handle_line(d, c, c->buf);
			memmove(c->buf, c->buf + used, c->len - used);
			c->len -= used;
			c->buf[c->len] = '\0';
		}
		if (c->len == sizeof(c->buf) - 1) {
			vfabd_reply_err(c, -E2BIG, "request line too long");
			flush_out(c);
			return false;
		}
	}
}

static bool peer_privileged(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

static void accept_conns(struct vfabd *d)
{
	for (;;) {
		int fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return; /* EAGAIN, or a transient error: poll tells us again */
		if (d->nconns == d->cap) {
			size_t cap = d->cap ? 2 * d->cap : 16;
			struct vfabd_conn *nc = realloc(d->conns, cap * sizeof(*nc));

			if (!nc) {
				close(fd);
				return;
			}
			d->conns = nc;
			d->cap = cap;
		}
		d->conns[d->nconns++] =
		    (struct vfabd_conn){.fd = fd, .hca = -1, .privileged = peer_privileged(fd)};
	}
}

static void on_signal(struct vfabd *d)
{
	struct signalfd_siginfo si;

	if (read(d->signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		vfabd_log("signal %u: shutting down", si.ssi_signo);
		d->stop = true;
	}
}

static void on_tick(struct vfabd *d)
{
	uint64_t expirations;

	if (read(d->timer_fd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
		return;
	vfabd_counters_tick(d);
	vfabd_addrwatch_tick(d);
	if (++d->ticks % VFABD_REAP_TICKS == 0)
		vfabd_reap_dead(d->r);
}

int vfabd_serve(struct vfabd *d)
{
	struct itimerspec its = {
	    .it_interval = {.tv_nsec = VFABD_TICK_MS * 1000000L},
	    .it_value = {.tv_nsec = VFABD_TICK_MS * 1000000L},
	};
	struct pollfd *pfds = NULL;
	size_t pcap = 0;
	int rc = 0;

	if (timerfd_settime(d->timer_fd, 0, &its, NULL) < 0)
		return -errno;
	while (!d->stop) {
		size_t i, n = 4 + d->nconns, nc = d->nconns;

		if (n > pcap) {
			struct pollfd *np = realloc(pfds, n * 2 * sizeof(*np));

			if (!np) {
				rc = -ENOMEM;
				break;
			}
			pfds = np;
			pcap = n * 2;
		}
		pfds[0] = (struct pollfd){.fd = d->listen_fd, .events = POLLIN};
		pfds[1] = (struct pollfd){.fd = d->signal_fd, .events = POLLIN};
		pfds[2] = (struct pollfd){.fd = d->timer_fd, .events = POLLIN};
		pfds[3] = (struct pollfd){.fd = vfabd_addrwatch_fd(d), .events = POLLIN};
		for (i = 0; i < nc; i++) {
			struct vfabd_conn *c = &d->conns[i];

			pfds[4 + i] = (struct pollfd){
			    .fd = c->fd, .events = POLLIN | (c->out_len ? POLLOUT : 0)};
		}
		if (poll(pfds, n, vfabd_faults_due(d)) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (pfds[1].revents)
			on_signal(d);
		if (pfds[2].revents)
			on_tick(d);
		if (pfds[3].revents)
			vfabd_addrwatch_run(d);
		/* Backwards: drop_conn moves the last connection into the hole. */
		for (i = nc; i-- > 0;) {
			struct vfabd_conn *c = &d->conns[i];
			bool ok = true;

			if (pfds[4 + i].revents & (POLLIN | POLLHUP | POLLERR))
				ok = read_conn(d, c);
			/* Replies are sent even for a request that came with the peer's close. */
			if (!flush_out(c) || !ok)
				drop_conn(d, i);
		}
		if (pfds[0].revents)
			accept_conns(d);
	}
	free(pfds);
	return rc;
}

void vfabd_close_all(struct vfabd *d)
{
	for (size_t i = 0; i < d->nconns; i++) {
		flush_out(&d->conns[i]); /* SHUTDOWN's OK, best effort */
		close(d->conns[i].fd);
		free(d->conns[i].async);
		free(d->conns[i].out);
	}
	free(d->conns);
	d->conns = NULL;
	d->nconns = d->cap = 0;
}
