/* SPDX-License-Identifier: MIT */
/*
 * The RoCE wire's connections and bindings (see vfabd_wire.h).
 *
 * One connection per QP. Who is on the other end comes from the kernel
 * (SO_PEERCRED, the process's start time, a pidfd), as for SEAL
 * (vfabd_seal.c): a BIND names a QP, and is granted only when the object
 * table says that very process owns it. A binding lives as long as its
 * connection; an endpoint (vfabd_wire_ep.h) is opened for a port at its
 * first binding and stays until vfabd stops.
 *
 * Nothing a client does may stop the thread: every socket is non-blocking,
 * the tables are bounded, a message that is not a whole, known one closes
 * its connection, and a client that does not read its RX messages loses
 * them (counted), as a NIC drops what its full buffers cannot take.
 */

#include "vfabd_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "vfabd.h"
#include "vfabd_conn.h"
#include "vfabd_gsi.h"
#include "vfabd_log.h"
#include "vfabd_wire_ep.h"
#include "vfabd_wirepkt.h"

#include "base/fsutil.h"
#include "base/paths.h"
#include "base/proc.h"
#include "netns/netns_file.h"

#define MAX_CONNS VFABD_WIRE_MAX_CONNS
#define BUCKETS 8192		  /* of the (hca, qpn) hash: a power of two */
#define CONN_SOCKBUF (4 << 20)	  /* RX messages queued to a client before they drop */
#define TX_BATCH VFABD_WIRE_BATCH /* messages read from one connection per recvmmsg */
#define RX_TURNS 32		  /* recvmmsg of a port per wakeup: 1024 frames */
#define TX_MSG_MAX (sizeof(struct vfab_wire_msg) + VFAB_WIRE_MAX_PAYLOAD + 1)

/* What an epoll event names: kind << 48 | generation << 32 | index. */
enum ev_kind { EV_STOP = 1, EV_LISTEN, EV_CONN, EV_PKT, EV_NL };

struct wconn {
	int fd; /* -1: free */
	int pidfd;
	uint16_t gen;	       /* bumped at close: stale events of the slot are ignored */
	struct vfab_owner who; /* pid and start time, from the kernel */
	uid_t uid;	       /* from the kernel too */
	bool bound;
	bool gsi; /* sent CM MADs: has IDs in the GSI table */
	struct vfabd_wire_bind b;
	int32_t next; /* hash chain */
};

struct vfabd_wire {
	struct vfabd *d;
	int listen_fd, stop_fd, epfd;
	bool accept_paused; /* out of fds: listen_fd is out of the epoll set until a close */
	pthread_t thread;
	bool started;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct vfabd_wire_ep *ep[VFAB_MAX_HCAS][VFAB_MAX_PORTS];
	int32_t bucket[BUCKETS];
	struct wconn conns[MAX_CONNS];
	_Atomic uint64_t binds, refused, sent, received, delivered;
	_Atomic uint64_t dropped[VFABD_WIRE_DROP_REASONS];
	struct vfabd_gsi gsi;
	/* What a connection sent: one byte more than the largest message reads as malformed. */
	struct {
		_Alignas(struct vfab_wire_msg) uint8_t b[TX_MSG_MAX];
	} msg[TX_BATCH];
	struct vfabd_wire_out out; /* empty but inside conn_read and gsi_rx */
	struct vfabd_wire_in in;
	/* Deliveries of one rx() batch to one connection, for one sendmmsg. */
	struct wconn *to;
	uint32_t nto;
	struct vfab_wire_msg to_msg[VFABD_WIRE_BATCH];
	struct iovec to_iov[VFABD_WIRE_BATCH][2];
	struct mmsghdr to_mh[VFABD_WIRE_BATCH];
};

static void count(_Atomic uint64_t *c)
{
	atomic_fetch_add_explicit(c, 1, memory_order_relaxed);
}

static void count_n(_Atomic uint64_t *c, uint64_t n)
{
	atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Sends the frames queued in w->out and counts what left and what the kernel refused. */
static void out_flush(struct vfabd_wire *w)
{
	vfabd_wire_out_flush(&w->out);
	count_n(&w->sent, w->out.sent);
	count_n(&w->dropped[VFABD_WIRE_DROP_SEND], w->out.refused);
	w->out.sent = w->out.refused = 0;
}

static uint64_t ev_data(enum ev_kind kind, uint16_t gen, uint32_t idx)
{
	return (uint64_t)kind << 48 | (uint64_t)gen << 32 | idx;
}

static int32_t *chain(struct vfabd_wire *w, uint32_t hca, uint32_t qpn)
{
	return &w->bucket[(hca * 0x9e3779b1u ^ qpn) & (BUCKETS - 1)];
}

static struct wconn *find(struct vfabd_wire *w, uint32_t hca, uint32_t qpn)
{
	for (int32_t i = *chain(w, hca, qpn); i >= 0; i = w->conns[i].next)
		if (w->conns[i].b.hca == hca && w->conns[i].b.qpn == qpn)
			return &w->conns[i];
	return NULL;
}

static void unhash(struct vfabd_wire *w, struct wconn *c)
{
	int32_t *p = chain(w, c->b.hca, c->b.qpn), me = (int32_t)(c - w->conns);

	while (*p >= 0 && *p != me)
		p = &w->conns[*p].next;
	if (*p == me)
		*p = c->next;
}

static void conn_close(struct vfabd_wire *w, struct wconn *c)
{
	if (c->bound)
		unhash(w, c);
	if (c->gsi)
		vfabd_gsi_forget(&w->gsi, (int32_t)(c - w->conns));
	close(c->fd); /* leaves the epoll set with it */
	if (c->pidfd >= 0)
		close(c->pidfd);
	c->fd = c->pidfd = -1;
	c->bound = c->gsi = false;
	c->gen++;
	if (w->accept_paused) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u64 = ev_data(EV_LISTEN, 0, 0)};

		w->accept_paused = epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &ev) != 0;
	}
}

/* Whether the bound QP is still sealed by the process that bound it. */
static bool still_owned(const struct vfabd_wire *w, const struct wconn *c)
{
	const struct vfab_qp_slot *q = vfab_kqp(w->d->k, c->b.hca, c->b.qpn);

	return q && vfab_owner_same(&q->owner, &c->who);
}

/* Whether the peer has exited since it connected (its pidfd is readable then). */
static bool peer_gone(const struct wconn *c)
{
	struct pollfd p = {.fd = c->pidfd, .events = POLLIN};

	return c->pidfd >= 0 && poll(&p, 1, 0) == 1;
}

/* The port's endpoint, opened inside its node's namespace at the first binding. */
static int endpoint(struct vfabd_wire *w, uint32_t hca, uint32_t port)
{
	const struct vfab_region *t = w->d->t;
	const struct vfab_hca *h = &t->hcas[hca];
	const struct vfab_port *p = &h->ports[port - 1];
	uint32_t idx = hca * VFAB_MAX_PORTS + port - 1;
	struct epoll_event pkt = {.events = EPOLLIN, .data.u64 = ev_data(EV_PKT, 0, idx)};
	struct epoll_event nl = {.events = EPOLLIN, .data.u64 = ev_data(EV_NL, 0, idx)};
	struct vfabd_wire_ep *ep;
	int nsfd, rc;

	if (w->ep[hca][port - 1])
		return 0;
	if (h->node >= t->nnodes || h->node >= VFAB_MAX_NODES)
		return -ENOENT;
	nsfd = vfab_netns_open(w->d->fabric, t->nodes[h->node].id);
	if (nsfd < 0)
		return nsfd;
	ep = malloc(sizeof(*ep));
	rc = ep ? vfabd_wire_ep_open(ep, nsfd, p->netdev, p->vlan) : -ENOMEM;
	close(nsfd);
	if (!rc && (epoll_ctl(w->epfd, EPOLL_CTL_ADD, ep->pkt_fd, &pkt) ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, ep->nl_ev_fd, &nl))) {
		rc = -errno;
		vfabd_wire_ep_close(ep);
	}
	if (rc) {
		vfabd_log("wire: %s/%s port %u: no endpoint on %s: %s", t->nodes[h->node].id,
			  h->name, port, p->netdev, strerror(-rc));
		free(ep);
		return rc;
	}
	w->ep[hca][port - 1] = ep;
	vfabd_log("wire: %s/%s port %u: RoCE v2 endpoint on %s, %zu address(es)",
		  t->nodes[h->node].id, h->name, port, p->netdev, ep->naddrs);
	return 0;
}

/* Whether c may bind m's QP: 0 or the -errno BIND answers. */
static int bind_check(struct vfabd_wire *w, struct wconn *c, const struct vfab_wire_msg *m)
{
	const struct vfab_region *t = w->d->t;
	const struct vfab_hca *h = &t->hcas[m->hca < VFAB_MAX_HCAS ? m->hca : 0];
	struct vfab_qp_slot q;
	struct wconn *other;

	/* Names and counts from vfabd's own topology: the region's any user may write. */
	if (m->hca >= t->nhcas || m->hca >= VFAB_MAX_HCAS || !h->in_use || !m->port ||
	    m->port > h->nports || m->port > VFAB_MAX_PORTS || !h->ports[m->port - 1].netdev[0])
		return -ENOENT;
	/* A shared HCA's netdev is the host's PF, in no node's namespace. */
	if (h->shared)
		return -EOPNOTSUPP;
	if (!vfab_kqp_copy(w->d->k, m->hca, m->qpn, &q))
		return -ENOENT;
	if (!c->who.start_ticks || !vfab_owner_same(&q.owner, &c->who) || peer_gone(c))
		return -EPERM;
	other = find(w, m->hca, m->qpn);
	if (other && still_owned(w, other))
		return -EBUSY;
	/* A binding whose QP was destroyed and its QPN reused (4 generation bits) is stale. */
	if (other)
		conn_close(w, other);
	return endpoint(w, m->hca, m->port);
}

/* Answers the first message; false when the connection was closed. */
static bool bind_conn(struct vfabd_wire *w, struct wconn *c, const struct vfab_wire_msg *m)
{
	const struct vfab_region *t = w->d->t;
	struct vfab_wire_msg r = {
	    .type = VFAB_WIRE_BIND, .hca = m->hca, .port = m->port, .qpn = m->qpn};
	int32_t *head;

	r.err = m->type == VFAB_WIRE_BIND && !m->paylen ? bind_check(w, c, m) : -EINVAL;
	if (send(c->fd, &r, sizeof(r), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(r) && !r.err)
		r.err = -EIO;
	if (r.err) {
		count(&w->refused);
		conn_close(w, c);
		return false;
	}
	c->b = (struct vfabd_wire_bind){m->hca, m->port, m->qpn};
	c->bound = true;
	head = chain(w, m->hca, m->qpn);
	c->next = *head;
	*head = (int32_t)(c - w->conns);
	count(&w->binds);
	vfabd_log("wire: %s/%s port %u: QP 0x%06x bound for pid %d",
		  t->nodes[t->hcas[m->hca].node].id, t->hcas[m->hca].name, m->port, m->qpn,
		  (int)c->who.pid);
	return true;
}

static void tx(struct vfabd_wire *w, struct wconn *c, struct vfab_wire_msg *m)
{
	struct vfabd_wire_ep *ep = w->ep[c->b.hca][c->b.port - 1];
	enum vfabd_wire_drop why =
	    vfabd_wire_tx_check(m, &c->b, (const uint8_t(*)[16])ep->addrs, ep->naddrs);

	if (why == VFABD_WIRE_PASS && !still_owned(w, c))
		why = VFABD_WIRE_DROP_UNSEALED;
	/* To QP1: a CM MAD, sent from QP1 (vfabd_gsi.h). */
	if (why == VFABD_WIRE_PASS && (m->bth.dqpn & 0xffffff) == VFAB_CM_MAD_QPN) {
		why = vfabd_gsi_tx(&w->gsi, (int32_t)(c - w->conns), c->uid, m,
				   (const uint8_t *)m + sizeof(*m));
		c->gsi = true;
	}
	if (why == VFABD_WIRE_PASS)
		why = vfabd_wire_ep_queue(&w->out, ep, m, (const uint8_t *)m + sizeof(*m));
	if (why != VFABD_WIRE_PASS)
		count(&w->dropped[why]); /* what is queued counts when it leaves */
}

/* What a connection sent: a BIND first, then TX messages, read and sent in batches. */
static void conn_read(struct vfabd_wire *w, struct wconn *c)
{
	struct mmsghdr mh[TX_BATCH];
	struct iovec iov[TX_BATCH];
	int n;

	for (int i = 0; i < TX_BATCH; i++) {
		iov[i] = (struct iovec){w->msg[i].b, TX_MSG_MAX};
		mh[i].msg_hdr = (struct msghdr){.msg_iov = &iov[i], .msg_iovlen = 1};
	}
	n = recvmmsg(c->fd, mh, c->bound ? TX_BATCH : 1, MSG_DONTWAIT, NULL);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	for (int i = 0; i < (n > 0 ? n : 1); i++) {
		struct vfab_wire_msg *m = (void *)w->msg[i].b;

		if (n <= 0 || !vfab_wire_msg_ok(m, mh[i].msg_len) ||
		    (c->bound && m->type != VFAB_WIRE_TX)) {
			out_flush(w);
			conn_close(w, c); /* hung up, broken or malformed: the binding goes */
			return;
		}
		if (!c->bound) {
			bind_conn(w, c, m);
			return;
		}
		tx(w, c, m);
	}
	out_flush(w);
}

/* Who connected, as the kernel says; false when it says nothing. */
static bool identify(struct wconn *c)
{
	struct vfab_proc_peer p;

	if (vfab_proc_peer(c->fd, &p))
		return false;
	c->pidfd = p.pidfd;
	c->who = (struct vfab_owner){.pid = p.pid, .start_ticks = p.start};
	c->uid = p.uid;
	return true;
}

/* Whether c's user, with c, holds more connections than its quota. */
static bool over_quota(const struct vfabd_wire *w, const struct wconn *c)
{
	size_t n = 0;

	if (vfabd_uid_privileged(c->uid))
		return false;
	for (size_t i = 0; i < MAX_CONNS; i++)
		n += w->conns[i].fd >= 0 && w->conns[i].uid == c->uid;
	return n > VFABD_CONNS_PER_USER;
}

static void set_bufs(int fd)
{
	int size = CONN_SOCKBUF;

	/* vfabd runs as root: past net.core.[rw]mem_max (the plain option is capped there). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)))
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static void accept_conns(struct vfabd_wire *w)
{
	for (;;) {
		int fd = accept4(w->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct epoll_event ev = {.events = EPOLLIN};
		struct wconn *c = NULL;

		if (fd < 0) {
			/* Out of fds: listen again once a connection closes, rather than spin. */
			if ((errno == EMFILE || errno == ENFILE) &&
			    !epoll_ctl(w->epfd, EPOLL_CTL_DEL, w->listen_fd, NULL))
				w->accept_paused = true;
			return; /* EAGAIN */
		}
		for (size_t i = 0; i < MAX_CONNS && !c; i++)
			if (w->conns[i].fd < 0)
				c = &w->conns[i];
		if (c) {
			c->fd = fd;
			c->pidfd = -1;
		}
		ev.data.u64 = c ? ev_data(EV_CONN, c->gen, (uint32_t)(c - w->conns)) : 0;
		if (!c || !identify(c) || over_quota(w, c) ||
		    epoll_ctl(w->epfd, EPOLL_CTL_ADD, fd, &ev)) {
			count(&w->refused);
			if (c)
				conn_close(w, c);
			else
				close(fd);
			continue;
		}
		set_bufs(fd);
	}
}

/*
 * The connection a CM MAD for QP1 goes to (vfabd_gsi.h); NULL when none,
 * counted unless UNBOUND, which the caller counts. What ib_cm answers for
 * nobody (a REQ nobody listens for, a DREQ of a gone process) is answered
 * here.
 */
static struct wconn *gsi_rx(struct vfabd_wire *w, uint32_t hca, uint32_t port,
			    const struct roce_pkt_view *v)
{
	struct vfabd_wire_ep *ep = w->ep[hca][port - 1];
	struct vfabd_gsi_to to;
	struct wconn *c = NULL;
	bool answer;
	enum vfabd_wire_drop why = vfabd_gsi_rx(&w->gsi, v, &to, &answer);

	if (why == VFABD_WIRE_PASS && to.listener) {
		c = find(w, hca, to.qpn);
		if (c && !vfab_owner_same(&c->who, &to.owner))
			c = NULL;
	} else if (why == VFABD_WIRE_PASS) {
		c = &w->conns[to.conn];
		if (c->fd < 0 || !c->bound || c->b.hca != hca)
			c = NULL;
	} else if (why != VFABD_WIRE_DROP_UNBOUND) {
		count(&w->dropped[why]);
		return NULL;
	}
	if (answer) {
		struct vfab_wire_msg m;
		uint8_t mad[VFAB_CM_MAD_BYTES];

		if (!vfabd_gsi_answer(v, hca, port, &m, mad) &&
		    vfabd_wire_ep_queue(&w->out, ep, &m, mad) == VFABD_WIRE_PASS)
			out_flush(w);
	}
	return c;
}

/* Hands the deliveries gathered for w->to to its process; a full socket drops them. */
static void deliver(struct vfabd_wire *w)
{
	for (uint32_t i = 0; i < w->nto;) {
		int k = sendmmsg(w->to->fd, w->to_mh + i, w->nto - i, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k <= 0) {
			count(&w->dropped[VFABD_WIRE_DROP_FULL]);
			i++;
		} else {
			count_n(&w->delivered, (uint64_t)k);
			i += (uint32_t)k;
		}
	}
	w->nto = 0;
	w->to = NULL;
}

/* Frame v for connection c, delivered with the others of the batch that are c's. */
static void gather(struct vfabd_wire *w, struct wconn *c, const struct roce_pkt_view *v)
{
	uint32_t i;

	if (w->to != c)
		deliver(w);
	w->to = c;
	i = w->nto++;
	vfabd_wire_rx_msg(v, &c->b, &w->to_msg[i]);
	w->to_iov[i][0] = (struct iovec){&w->to_msg[i], sizeof(w->to_msg[i])};
	w->to_iov[i][1] = (struct iovec){(void *)v->payload, v->paylen};
	w->to_mh[i].msg_hdr =
	    (struct msghdr){.msg_iov = w->to_iov[i], .msg_iovlen = v->paylen ? 2 : 1};
}

/* Frames of a port to the processes bound to their destination QP. */
static void rx(struct vfabd_wire *w, uint32_t idx)
{
	uint32_t hca = idx / VFAB_MAX_PORTS, port = idx % VFAB_MAX_PORTS + 1;
	struct vfabd_wire_ep *ep = w->ep[hca][port - 1];

	for (int turn = 0; turn < RX_TURNS; turn++) {
		int n = vfabd_wire_ep_recv(ep, &w->in);

		if (n == -EAGAIN)
			return;
		for (int i = 0; i < n; i++) {
			struct roce_pkt_view v;
			struct wconn *c;

			if (!w->in.len[i])
				continue; /* one this host sent */
			count(&w->received);
			if (roce_pkt_parse(w->in.frame[i], w->in.len[i], &v)) {
				count(&w->dropped[VFABD_WIRE_DROP_PARSE]);
				continue;
			}
			c = (v.bth.dqpn & 0xffffff) == VFAB_CM_MAD_QPN
				? gsi_rx(w, hca, port, &v)
				: find(w, hca, v.bth.dqpn & 0xffffff);
			if (!c || c->b.port != port) {
				count(&w->dropped[VFABD_WIRE_DROP_UNBOUND]);
				continue;
			}
			if (!still_owned(w, c)) {
				count(&w->dropped[VFABD_WIRE_DROP_UNSEALED]);
				continue;
			}
			gather(w, c, &v);
		}
		deliver(w);
		/* n < 0 but EAGAIN: an error the socket reported once (ENETDOWN); read on. */
	}
}

static void *run(void *arg)
{
	struct vfabd_wire *w = arg;
	struct epoll_event evs[64];

	for (;;) {
		int n = epoll_wait(w->epfd, evs, 64, -1);

		if (n < 0 && errno != EINTR) {
			vfabd_log("wire: epoll: %s; the RoCE wire stops", strerror(errno));
			return NULL;
		}
		for (int i = 0; i < n; i++) {
			uint64_t u = evs[i].data.u64;
			uint32_t idx = (uint32_t)u;
			struct wconn *c = &w->conns[idx < MAX_CONNS ? idx : 0];

			switch ((enum ev_kind)(u >> 48)) {
			case EV_STOP:
				return NULL;
			case EV_LISTEN:
				accept_conns(w);
				break;
			case EV_CONN:
				/* A slot closed and reused within this batch: not its event. */
				if (c->fd >= 0 && c->gen == (uint16_t)(u >> 32))
					conn_read(w, c);
				break;
			case EV_PKT:
				rx(w, idx);
				break;
			case EV_NL:
				vfabd_wire_ep_follow(
				    w->ep[idx / VFAB_MAX_PORTS][idx % VFAB_MAX_PORTS]);
				break;
			}
		}
	}
}

/* <rundir>/wire.sock, as vfabd.sock: every local user of the fabric may connect. */
static int listen_socket(struct vfabd_wire *w)
{
	int rc = vfab_wire_sock_path(w->path, sizeof(w->path), w->d->rundir);

	return rc ? rc : vfab_unix_listen(w->path, SOCK_SEQPACKET);
}

static int start(struct vfabd_wire *w)
{
	struct epoll_event stop = {.events = EPOLLIN, .data.u64 = ev_data(EV_STOP, 0, 0)};
	struct epoll_event lis = {.events = EPOLLIN, .data.u64 = ev_data(EV_LISTEN, 0, 0)};
	sigset_t all, old;
	int rc;

	w->listen_fd = listen_socket(w);
	if (w->listen_fd < 0)
		return w->listen_fd;
	w->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	w->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (w->stop_fd < 0 || w->epfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->stop_fd, &stop) ||
	    epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->listen_fd, &lis))
		return -errno;
	/* Signals stay the main loop's (its signalfd). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = -pthread_create(&w->thread, NULL, run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	w->started = !rc;
	return rc;
}

int vfabd_wire_init(struct vfabd *d)
{
	struct vfabd_wire *w = calloc(1, sizeof(*w));
	int rc;

	if (!w)
		return -ENOMEM;
	w->d = d;
	w->listen_fd = w->stop_fd = w->epfd = -1;
	vfabd_gsi_init(&w->gsi, d->rundir);
	vfabd_wire_out_init(&w->out);
	for (size_t i = 0; i < MAX_CONNS; i++)
		w->conns[i].fd = w->conns[i].pidfd = -1;
	for (size_t i = 0; i < BUCKETS; i++)
		w->bucket[i] = -1;
	d->wire = w;
	rc = start(w);
	if (rc)
		vfabd_wire_free(d);
	return rc;
}

void vfabd_wire_counts(const struct vfabd *d, struct vfabd_wire_counts *out)
{
	const struct vfabd_wire *w = d->wire;

	memset(out, 0, sizeof(*out));
	if (!w)
		return;
	out->open = true;
	out->binds = atomic_load_explicit(&w->binds, memory_order_relaxed);
	out->refused = atomic_load_explicit(&w->refused, memory_order_relaxed);
	out->sent = atomic_load_explicit(&w->sent, memory_order_relaxed);
	out->received = atomic_load_explicit(&w->received, memory_order_relaxed);
	out->delivered = atomic_load_explicit(&w->delivered, memory_order_relaxed);
	for (int i = 0; i < VFABD_WIRE_DROP_REASONS; i++)
		out->dropped[i] = atomic_load_explicit(&w->dropped[i], memory_order_relaxed);
}

/* What the wire did since vfabd started, in one log line (the thread has stopped). */
static void log_counts(const struct vfabd *d)
{
	struct vfabd_wire_counts n;
	char drops[256] = "";
	size_t at = 0;

	vfabd_wire_counts(d, &n);
	for (int i = VFABD_WIRE_PASS + 1; i < VFABD_WIRE_DROP_REASONS && at < sizeof(drops); i++)
		if (n.dropped[i])
			at += (size_t)snprintf(drops + at, sizeof(drops) - at, " %s=%llu",
					       vfabd_wire_drop_name((enum vfabd_wire_drop)i),
					       (unsigned long long)n.dropped[i]);
	vfabd_log("wire: %llu QP(s) bound, %llu refused; %llu packet(s) sent, %llu received, "
		  "%llu delivered; dropped:%s",
		  (unsigned long long)n.binds, (unsigned long long)n.refused,
		  (unsigned long long)n.sent, (unsigned long long)n.received,
		  (unsigned long long)n.delivered, at ? drops : " none");
}

void vfabd_wire_free(struct vfabd *d)
{
	struct vfabd_wire *w = d->wire;
	uint64_t one = 1;

	if (!w)
		return;
	if (w->started && write(w->stop_fd, &one, sizeof(one)) == sizeof(one))
		pthread_join(w->thread, NULL);
	if (w->started)
		log_counts(d);
	for (size_t i = 0; i < MAX_CONNS; i++)
		if (w->conns[i].fd >= 0)
			conn_close(w, &w->conns[i]);
	for (size_t h = 0; h < VFAB_MAX_HCAS; h++)
		for (size_t p = 0; p < VFAB_MAX_PORTS; p++)
			if (w->ep[h][p]) {
				vfabd_wire_ep_close(w->ep[h][p]);
				free(w->ep[h][p]);
			}
	if (w->listen_fd >= 0) {
		close(w->listen_fd);
		unlink(w->path);
	}
	if (w->stop_fd >= 0)
		close(w->stop_fd);
	if (w->epfd >= 0)
		close(w->epfd);
	free(w);
	d->wire = NULL;
}
