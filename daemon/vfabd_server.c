/* SPDX-License-Identifier: MIT */
/*
 * vfabd's event loop: the control socket (one connection per client context,
 * line protocol of docs/DESIGN.md), signals, the tick (live counters, the
 * reaper), the nodes' address notifications (one epoll fd) and the deadlines
 * of timed faults, all on one poll(). The daemon is never on the data path,
 * so one thread is enough. The loop only reads, dispatches each request line
 * to its module and sends the replies they queued (vfabd_conn.c) as the peer
 * reads them: a REPORT can be megabytes, and a slow reader must not stall it.
 *
 * Fairness: every socket is open to every local user, so one client must not
 * starve the others (a HELLO that waits too long fails a verbs open). A
 * connection gets at most VFABD_LINES_PER_TURN requests per turn of the loop,
 * is not read while VFABD_OUT_BACKLOG reply bytes wait for it, and there are
 * at most VFABD_MAX_CONNS connections, VFABD_CONNS_PER_USER of them a user's
 * who is neither root nor vfabd's (the next ones are told so and closed).
 */

#include "vfabd_server.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_addrwatch.h"
#include "vfabd_conn.h"
#include "vfabd_counters.h"
#include "vfabd_countersfs.h"
#include "vfabd_faults.h"
#include "vfabd_history.h"
#include "vfabd_wire.h"
#include "vfabd_log.h"
#include "vfabd_proto.h"
#include "vfabd_reaper.h"
#include "vfabd_seal.h"

#include "base/proc.h"

#define VFABD_LINES_PER_TURN 32
#define VFABD_OUT_BACKLOG (1u << 20)
#define VFABD_MAX_CONNS 4096
#define VFABD_SPARE_FDS 64 /* the run dir, nodes' files, FIFOs vfabd opens */
/* poll()'s fds before the connections: listen, signal, timer, address watch, counters fs */
#define NFIXED 5

static bool pid_has_other_conn(const struct vfabd *d, const struct vfabd_conn *c)
{
	for (size_t i = 0; i < d->srv.nconns; i++)
		if (&d->srv.conns[i] != c && d->srv.conns[i].pid == c->pid && !d->srv.conns[i].bye)
			return true;
	return false;
}

/*
 * A connection closed without BYE frees its process's objects only when
 * the process is gone: a live one may have given up on a slow HELLO, and
 * its objects are in use. The reaper (vfabd_reaper.c) frees them once it
 * exits.
 */
static void drop_conn(struct vfabd *d, size_t i)
{
	struct vfabd_conn *c = &d->srv.conns[i];

	if (c->pid && !c->bye && !pid_has_other_conn(d, c)) {
		if (vfabd_conn_peer_gone(c)) {
			/* vfabd's records (and their slots) first, then what the region alone says.
			 */
			int n = vfabd_seal_reap_owner(d->r, d->k, c->pid, c->peer_start);

			n += vfab_region_reap_owner(d->r, c->pid, c->peer_start);

			vfabd_log("pid %d exited without BYE: reaped %d object(s)", (int)c->pid, n);
		} else {
			vfabd_log("pid %d closed its connection without BYE while it runs: its "
				  "objects stay until it exits",
				  (int)c->pid);
		}
	}
	vfabd_conn_close(c);
	d->srv.conns[i] = d->srv.conns[--d->srv.nconns];
}

static bool backlogged(const struct vfabd_conn *c)
{
	return c->out_len - c->out_off > VFABD_OUT_BACKLOG;
}

/* A whole request line waits in the buffer: served without a poll. */
static bool has_line(const struct vfabd_conn *c)
{
	return memchr(c->buf, '\n', c->len) != NULL;
}

/* One turn: at most VFABD_LINES_PER_TURN requests. False when finished. */
static bool serve_conn(struct vfabd *d, struct vfabd_conn *c)
{
	unsigned lines = 0;

	for (;;) {
		ssize_t n;

		while (lines < VFABD_LINES_PER_TURN && !backlogged(c) && vfabd_proto_take(d, c))
			lines++;
		if (lines == VFABD_LINES_PER_TURN || backlogged(c) || has_line(c))
			return true; /* the rest next turn, after the others */
		if (c->len == sizeof(c->buf) - 1) {
			vfabd_reply_err(c, -E2BIG, "request line too long");
			vfabd_conn_flush(c);
			return false;
		}
		n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, MSG_DONTWAIT);
		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		if (n == 0)
			return false;
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
	}
}

/*
 * Who is on the other end, as the kernel says (never as the client says):
 * its pid, uid, and a pidfd that names that very process (SO_PEERPIDFD; on
 * older kernels pidfd_open of the pid, which the connect() just proved
 * alive). False when the kernel tells nothing.
 */
static bool peer_identify(struct vfabd_conn *c)
{
	struct vfab_proc_peer p;

	if (vfab_proc_peer(c->fd, &p))
		return false;
	c->peer_pid = p.pid;
	c->peer_uid = p.uid;
	c->peer_gid = p.gid;
	c->peer_start = p.start;
	c->pidfd = p.pidfd;
	c->privileged = vfabd_uid_privileged(p.uid);
	return true;
}

/* Whether c's user, with c, holds more connections than its quota. */
static bool over_quota(const struct vfabd *d, const struct vfabd_conn *c)
{
	size_t n = 1;

	for (size_t i = 0; !c->privileged && i < d->srv.nconns; i++)
		n += d->srv.conns[i].peer_uid == c->peer_uid;
	return !c->privileged && n > VFABD_CONNS_PER_USER;
}

/* Past a limit: the client reads why, then the socket closes. */
static void refuse_conn(int fd, const char *whose, size_t limit)
{
	char msg[112];
	int n = snprintf(msg, sizeof(msg),
			 "ERR EMFILE vfabd has too many connections%s (limit %zu)\n", whose, limit);

	/* Best effort: a client that cannot take it sees the close. */
	if (send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		n = 0;
	close(fd);
}

static void accept_conns(struct vfabd *d)
{
	for (;;) {
		int fd = accept4(d->srv.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct vfabd_conn c = {.hca = -1, .pidfd = -1};

		if (fd < 0) {
			/* Out of fds: stop listening until the next tick rather than spin. */
			if (errno == EMFILE || errno == ENFILE) {
				vfabd_log("accept: %s: not accepting until the next tick",
					  strerror(errno));
				d->srv.accept_paused = true;
			}
			return; /* EAGAIN, or a transient error: poll tells us again */
		}
		if (d->srv.nconns >= d->srv.max_conns) {
			refuse_conn(fd, "", d->srv.max_conns);
			continue;
		}
		c.fd = fd;
		if (!peer_identify(&c)) {
			close(fd);
			continue;
		}
		if (over_quota(d, &c)) {
			if (c.pidfd >= 0)
				close(c.pidfd);
			refuse_conn(fd, " of this user", VFABD_CONNS_PER_USER);
			continue;
		}
		if (d->srv.nconns == d->srv.cap) {
			size_t cap = d->srv.cap ? 2 * d->srv.cap : 16;
			struct vfabd_conn *nc = realloc(d->srv.conns, cap * sizeof(*nc));

			if (!nc) {
				vfabd_conn_close(&c);
				return;
			}
			d->srv.conns = nc;
			d->srv.cap = cap;
		}
		d->srv.conns[d->srv.nconns++] = c;
	}
}

static void on_signal(struct vfabd *d)
{
	struct signalfd_siginfo si;

	if (read(d->srv.signal_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		vfabd_log("signal %u: shutting down", si.ssi_signo);
		d->srv.stop = true;
	}
}

static void on_tick(struct vfabd *d)
{
	uint64_t expirations;

	if (read(d->srv.timer_fd, &expirations, sizeof(expirations)) !=
	    (ssize_t)sizeof(expirations))
		return;
	d->srv.accept_paused = false;
	/* With the counters file system every read computes its value: nothing to refresh. */
	if (!vfabd_countersfs_on(d))
		vfabd_counters_tick(d);
	vfabd_addrwatch_tick(d);
	vfabd_history_tick(d); /* a sample on every 4th tick (once a second) */
	if (++d->srv.ticks % VFABD_REAP_TICKS == 0) {
		static uid_t busy[VFABD_MAX_CONNS];
		size_t n = 0;

		vfabd_reap_dead(d->r, d->k);
		for (size_t i = 0; i < d->srv.nconns && n < VFABD_MAX_CONNS; i++)
			if (d->srv.conns[i].pid && !d->srv.conns[i].bye)
				busy[n++] = d->srv.conns[i].peer_uid;
		vfabd_reap_shards(d->r, d->k, busy, n);
	}
}

/*
 * As many connections as fds allow, up to VFABD_MAX_CONNS. Each takes a
 * socket and a pidfd, and so does each of the wire's (vfabd_wire.h), which
 * gets the same share. The soft fd limit is raised towards the hard one,
 * and VFABD_SPARE_FDS stay for vfabd's own files, so that running out of
 * fds (accept spinning on EMFILE) does not happen before the limit's clear
 * refusal does.
 */
static size_t conn_limit(void)
{
	struct rlimit rl;
	rlim_t want = 2 * (VFABD_MAX_CONNS + VFABD_WIRE_MAX_CONNS) + VFABD_SPARE_FDS + 16;
	size_t n;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return 256;
	if (rl.rlim_cur < want) {
		rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
		if (setrlimit(RLIMIT_NOFILE, &rl) < 0 && getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return 256;
	}
	if (rl.rlim_cur < 2 * VFABD_SPARE_FDS)
		return VFABD_SPARE_FDS / 2;
	n = (size_t)(rl.rlim_cur - VFABD_SPARE_FDS - 16) / 4; /* the loop's own fds, the log */
	return n < VFABD_MAX_CONNS ? n : VFABD_MAX_CONNS;
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

	if (timerfd_settime(d->srv.timer_fd, 0, &its, NULL) < 0)
		return -errno;
	d->srv.max_conns = conn_limit();
	while (!d->srv.stop) {
		size_t i, n = NFIXED + d->srv.nconns, nc = d->srv.nconns;
		int timeout = vfabd_faults_due(d), wire = vfabd_ipwire_due(d);

		if (n > pcap) {
			struct pollfd *np = realloc(pfds, n * 2 * sizeof(*np));

			if (!np) {
				rc = -ENOMEM;
				break;
			}
			pfds = np;
			pcap = n * 2;
		}
		pfds[0] = (struct pollfd){.fd = d->srv.accept_paused ? -1 : d->srv.listen_fd,
					  .events = POLLIN};
		pfds[1] = (struct pollfd){.fd = d->srv.signal_fd, .events = POLLIN};
		pfds[2] = (struct pollfd){.fd = d->srv.timer_fd, .events = POLLIN};
		pfds[3] = (struct pollfd){.fd = vfabd_addrwatch_fd(d), .events = POLLIN};
		pfds[4] = (struct pollfd){.fd = vfabd_countersfs_fd(d), .events = POLLIN};
		for (i = 0; i < nc; i++) {
			struct vfabd_conn *c = &d->srv.conns[i];

			pfds[NFIXED + i] = (struct pollfd){.fd = c->fd,
							   .events = (backlogged(c) ? 0 : POLLIN) |
								     (c->out_len ? POLLOUT : 0)};
			if (has_line(c) && !backlogged(c))
				timeout = 0; /* requests left from the last turn */
		}
		if (wire >= 0 && (timeout < 0 || wire < timeout))
			timeout = wire;
		if (poll(pfds, n, timeout) < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		vfabd_ipwire_run(d);
		if (pfds[1].revents)
			on_signal(d);
		if (pfds[2].revents)
			on_tick(d);
		if (pfds[3].revents)
			vfabd_addrwatch_run(d);
		if (pfds[4].revents)
			vfabd_countersfs_run(d);
		/* Backwards: drop_conn moves the last connection into the hole. */
		for (i = nc; i-- > 0;) {
			struct vfabd_conn *c = &d->srv.conns[i];
			bool ok = true;

			if ((pfds[NFIXED + i].revents & (POLLIN | POLLHUP | POLLERR)) ||
			    (has_line(c) && !backlogged(c)))
				ok = serve_conn(d, c);
			/* Replies are sent even for a request that came with the peer's close. */
			if (!vfabd_conn_flush(c) || !ok)
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
	for (size_t i = 0; i < d->srv.nconns; i++) {
		vfabd_conn_flush(&d->srv.conns[i]); /* SHUTDOWN's OK, best effort */
		vfabd_conn_close(&d->srv.conns[i]);
	}
	free(d->srv.conns);
	d->srv.conns = NULL;
	d->srv.nconns = d->srv.cap = 0;
}
