/* SPDX-License-Identifier: MIT */
/*
 * vfabd's event loop: the control socket (one connection per client context,
 * line protocol of docs/DESIGN.md), signals and the reaper tick, all on one
 * poll(). The daemon is never on the data path, so one thread is enough.
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

static void reply(struct vfabd_conn *c, const char *text)
{
	char line[VFABD_LINE_MAX * 2];
	int n = snprintf(line, sizeof(line), "%s\n", text);

	/* Replies are short; a client that does not read them loses its connection. */
	if (send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) != n)
		shutdown(c->fd, SHUT_RDWR);
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

static void hello(struct vfabd_conn *c, const char *arg)
{
	char *end;
	long pid;

	if (c->pid) {
		reply(c, "ERR HELLO was already sent on this connection");
		return;
	}
	errno = 0;
	pid = strtol(arg, &end, 10);
	if (end == arg || *end || errno || pid <= 0 || pid > 0x3fffffff) {
		reply(c, "ERR usage: HELLO <pid>");
		return;
	}
	c->pid = (pid_t)pid;
	reply(c, "OK");
}

static void handle_line(struct vfabd *d, struct vfabd_conn *c, char *line)
{
	size_t n = strlen(line);

	if (n && line[n - 1] == '\r')
		line[--n] = '\0';
	if (!strncmp(line, "HELLO ", 6)) {
		hello(c, line + 6);
	} else if (!strcmp(line, "BYE")) {
		c->bye = true;
		reply(c, "OK");
	} else if (!strcmp(line, "STATUS")) {
		status(d, c);
	} else if (!strcmp(line, "SHUTDOWN")) {
		reply(c, "OK");
		vfabd_log("SHUTDOWN requested");
		d->stop = true;
	} else {
		reply(c, "ERR unknown request (HELLO <pid>, BYE, STATUS, SHUTDOWN)");
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
			reply(c, "ERR request line too long");
			return false;
		}
	}
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
		d->conns[d->nconns++] = (struct vfabd_conn){.fd = fd};
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

	if (read(d->timer_fd, &expirations, sizeof(expirations)) == (ssize_t)sizeof(expirations))
		vfabd_reap_dead(d->r);
}

int vfabd_serve(struct vfabd *d)
{
	struct itimerspec its = {
	    .it_interval = {.tv_nsec = VFABD_REAP_INTERVAL_MS * 1000000L},
	    .it_value = {.tv_nsec = VFABD_REAP_INTERVAL_MS * 1000000L},
	};
	struct pollfd *pfds = NULL;
	size_t pcap = 0;
	int rc = 0;

	if (timerfd_settime(d->timer_fd, 0, &its, NULL) < 0)
		return -errno;
	while (!d->stop) {
		size_t i, n = 3 + d->nconns, nc = d->nconns;

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
		for (i = 0; i < nc; i++)
			pfds[3 + i] = (struct pollfd){.fd = d->conns[i].fd, .events = POLLIN};
		if (poll(pfds, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		if (pfds[1].revents)
			on_signal(d);
		if (pfds[2].revents)
			on_tick(d);
		/* Backwards: drop_conn moves the last connection into the hole. */
		for (i = nc; i-- > 0;) {
			if (!pfds[3 + i].revents)
				continue;
			if (!read_conn(d, &d->conns[i]))
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
	for (size_t i = 0; i < d->nconns; i++)
		close(d->conns[i].fd);
	free(d->conns);
	d->conns = NULL;
	d->nconns = d->cap = 0;
}
