/* SPDX-License-Identifier: MIT */
/*
 * The delay line (vfabd_delay.h): taps, the thread that holds frames, and
 * the frames' sources.
 *
 * The thread sleeps in epoll on the taps (a frame came), a timerfd (the
 * next release) and an eventfd (stop). A timer fires SPIN_NS before a
 * release and the thread spins the rest, reading the taps meanwhile: a
 * timer's wake-up is late by tens of microseconds on a busy or virtual
 * machine, which would add up on every hop of a round trip.
 */
#include "vfabd_delay.h"
#include "vfabd_frame.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "base/clock.h"
#include "fabric/ipnet.h"
#include "netns/ip_shape.h"
#include "netns/netns_file.h"

#define READ_MAX (65536u + 512u) /* a GSO frame, its headers, the virtio-net header */
#define READ_BATCH 64		 /* frames read from one tap per turn */
#define SPIN_NS 100000ull

struct frame {
	uint64_t release_ns;
	uint32_t off, len;
};

/* The thread's, under mu (fd and ifindex are set once, by vfabd_delay_tap). */
struct line {
	int fd; /* -1: no tap yet */
	int ifindex;
	uint8_t *arena;
	struct frame *q;
	uint32_t head, n; /* q[head] is the oldest of n frames */
	uint32_t wpos;	  /* where the next frame goes in arena */
	uint64_t last_release_ns;
	_Atomic uint64_t drops;
};

/* A wire's latencies and identity as a sender: under mu. */
struct source {
	struct vfabd_delay_lat lat;
	bool has_mac;
	uint8_t mac[6];
	uint32_t naddr;
	struct vfabd_delay_addr addr[VFABD_DELAY_ADDRS];
};

struct vfabd_delay {
	uint32_t n;
	struct line *l;
	/* n wires, then at n the senders on other machines (remote[], by prefix): under mu. */
	struct source *s;
	uint32_t nremote;
	struct vfabd_delay_prefix remote[VFABD_DELAY_PREFIXES];
	pthread_mutex_t mu;
	int epfd, evfd, tfd;
	bool started;
	pthread_t th;
	_Atomic bool stop;
	uint8_t scratch[READ_MAX]; /* a frame read only to be dropped */
};

/* ---- sources ---- */

static bool addr_is(const struct source *s, int family, const uint8_t *a)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (uint32_t i = 0; i < s->naddr; i++)
		if (s->addr[i].family == family && !memcmp(s->addr[i].a, a, len))
			return true;
	return false;
}

static const struct vfabd_delay_prefix *remote_of(const struct vfabd_delay *dl, int family,
						  const uint8_t *a)
{
	size_t len = family == AF_INET ? 4 : 16;

	for (uint32_t i = 0; i < dl->nremote; i++)
		if (dl->remote[i].family == family &&
		    vfab_ipnet_contains(dl->remote[i].a, dl->remote[i].len, a, len))
			return &dl->remote[i];
	return NULL;
}

/*
 * The source of a frame towards wire dst: a wire, dl->n for a sender on
 * another machine (*leaf: the leaf of this machine it is on, or UINT32_MAX),
 * dl->n + 1 if none is known (mu held).
 */
static uint32_t sender(const struct vfabd_delay *dl, uint32_t dst, const uint8_t *f, size_t len,
		       uint32_t *leaf)
{
	const struct vfabd_delay_prefix *p;
	const uint8_t *a;
	int family;
	uint32_t w;

	if (len < 14)
		return dl->n + 1;
	for (w = 0; w < dl->n; w++)
		if (w != dst && dl->s[w].has_mac && !memcmp(dl->s[w].mac, f + 6, 6))
			return w;
	if (!vfabd_frame_source(f, len, &family, &a))
		return dl->n + 1;
	for (w = 0; w < dl->n; w++)
		if (w != dst && addr_is(&dl->s[w], family, a))
			return w;
	p = remote_of(dl, family, a);
	if (!p)
		return dl->n + 1;
	*leaf = p->leaf;
	return dl->n;
}

/* ---- one line's queue ---- */

/* Where a frame of up to READ_MAX bytes can go, or -1: the line is full. */
static int64_t room(const struct line *l)
{
	uint32_t tail;

	if (!l->n)
		return 0;
	if (l->n == VFABD_DELAY_FRAMES)
		return -1;
	tail = l->q[l->head].off;
	if (l->wpos > tail) {
		if (VFABD_DELAY_BYTES - l->wpos >= READ_MAX)
			return (int64_t)l->wpos;
		return tail >= READ_MAX ? 0 : -1; /* wrap to the start */
	}
	return tail - l->wpos >= READ_MAX ? (int64_t)l->wpos : -1;
}

static void release_due(struct line *l, uint64_t now)
{
	while (l->n && l->q[l->head].release_ns <= now) {
		const struct frame *f = &l->q[l->head];

		/* A frame the tap refuses (the host end went away) is gone, as on a wire. */
		if (write(l->fd, l->arena + f->off, f->len) < 0 && errno == EAGAIN)
			return;
		l->head = (l->head + 1) % VFABD_DELAY_FRAMES;
		l->n--;
	}
}

static void read_line(struct vfabd_delay *dl, uint32_t w, uint64_t now)
{
	struct line *l = &dl->l[w];

	for (int i = 0; i < READ_BATCH; i++) {
		int64_t at = room(l);
		uint8_t *buf = at < 0 ? dl->scratch : l->arena + at;
		ssize_t got = read(l->fd, buf, READ_MAX);
		struct frame *f;
		struct vfabd_delay_lat from;
		uint64_t release;
		size_t len;
		uint32_t src;

		if (got <= (ssize_t)VFABD_FRAME_VNET_HDR)
			return; /* EAGAIN: nothing more (a runt is not a frame) */
		if (at < 0) {
			atomic_fetch_add(&l->drops, 1);
			continue;
		}
		len = (size_t)got;
		release = vfabd_frame_unstamp(&buf, &len, now);
		src = sender(dl, w, buf + VFABD_FRAME_VNET_HDR, len - VFABD_FRAME_VNET_HDR,
			     &from.leaf);
		if (src <= dl->n) {
			uint32_t leaf = from.leaf;

			from = dl->s[src].lat;
			if (src == dl->n)
				from.leaf = leaf;
		}
		release += vfabd_frame_path_ns(src <= dl->n ? &from : NULL, &dl->s[w].lat);
		if (release < l->last_release_ns)
			release = l->last_release_ns;
		l->last_release_ns = release;
		f = &l->q[(l->head + l->n) % VFABD_DELAY_FRAMES];
		*f = (struct frame){release, (uint32_t)(buf - l->arena), (uint32_t)len};
		l->n++;
		l->wpos = (uint32_t)at + (((uint32_t)got + 63) & ~63u);
	}
}

/* ---- the thread ---- */

static void arm(int tfd, uint64_t at_ns)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(at_ns / 1000000000ull),
					      .tv_nsec = (long)(at_ns % 1000000000ull)}};

	timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void *run(void *arg)
{
	struct vfabd_delay *dl = arg;

	prctl(PR_SET_TIMERSLACK, 1UL); /* the default 50 us slack would be the error */
	while (!atomic_load(&dl->stop)) {
		uint64_t now = vfab_mono_ns(), next = UINT64_MAX;
		struct epoll_event ev[8];
		uint64_t drain;

		pthread_mutex_lock(&dl->mu);
		for (uint32_t w = 0; w < dl->n; w++)
			if (dl->l[w].fd >= 0)
				read_line(dl, w, now);
		now = vfab_mono_ns();
		for (uint32_t w = 0; w < dl->n; w++) {
			struct line *l = &dl->l[w];

			if (l->fd < 0)
				continue;
			release_due(l, now);
			if (l->n && l->q[l->head].release_ns < next)
				next = l->q[l->head].release_ns;
		}
		pthread_mutex_unlock(&dl->mu);
		if (next != UINT64_MAX && next <= now + SPIN_NS)
			continue;
		if (next != UINT64_MAX)
			arm(dl->tfd, next - SPIN_NS);
		if (epoll_wait(dl->epfd, ev, 8, -1) < 0 && errno != EINTR)
			break;
		if (read(dl->tfd, &drain, sizeof(drain)) < 0) { /* not fired: nothing to clear */
		}
	}
	return NULL;
}

/* ---- set-up ---- */

int vfabd_delay_init(struct vfabd_delay **out, uint32_t nwires)
{
	struct vfabd_delay *dl = calloc(1, sizeof(*dl));
	struct epoll_event ev = {.events = EPOLLIN};

	if (!dl)
		return -ENOMEM;
	dl->n = nwires;
	dl->l = calloc(nwires ? nwires : 1, sizeof(*dl->l));
	dl->s = calloc(nwires + 1, sizeof(*dl->s));
	dl->epfd = epoll_create1(EPOLL_CLOEXEC);
	dl->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	dl->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	pthread_mutex_init(&dl->mu, NULL);
	for (uint32_t w = 0; dl->l && w < nwires; w++)
		dl->l[w].fd = -1;
	if (!dl->l || !dl->s || dl->epfd < 0 || dl->evfd < 0 || dl->tfd < 0 ||
	    epoll_ctl(dl->epfd, EPOLL_CTL_ADD, dl->evfd, &ev) ||
	    epoll_ctl(dl->epfd, EPOLL_CTL_ADD, dl->tfd, &ev)) {
		vfabd_delay_free(dl);
		return -ENOMEM;
	}
	*out = dl;
	return 0;
}

void vfabd_delay_free(struct vfabd_delay *dl)
{
	if (!dl)
		return;
	if (dl->started) {
		uint64_t one = 1;

		atomic_store(&dl->stop, true);
		if (write(dl->evfd, &one, sizeof(one)) < 0) { /* the counter cannot overflow here */
		}
		pthread_join(dl->th, NULL);
	}
	for (uint32_t w = 0; dl->l && w < dl->n; w++) {
		struct line *l = &dl->l[w];

		if (l->fd >= 0)
			close(l->fd);
		if (l->arena)
			munmap(l->arena, VFABD_DELAY_BYTES);
		free(l->q);
	}
	if (dl->epfd >= 0)
		close(dl->epfd);
	if (dl->evfd >= 0)
		close(dl->evfd);
	if (dl->tfd >= 0)
		close(dl->tfd);
	pthread_mutex_destroy(&dl->mu);
	free(dl->l);
	free(dl->s);
	free(dl);
}

struct tap_req {
	uint32_t wire;
	int fd, ifindex;
};

static int make_tap(void *arg)
{
	struct tap_req *t = arg;

	t->fd = vfab_ip_delay_tap(t->wire, &t->ifindex);
	return t->fd < 0 ? t->fd : 0;
}

int vfabd_delay_tap(struct vfabd_delay *dl, uint32_t wire, int nsfd)
{
	struct tap_req t = {.wire = wire, .fd = -1};
	struct epoll_event ev = {.events = EPOLLIN};
	struct line *l;
	int rc;

	if (wire >= dl->n)
		return -EINVAL;
	l = &dl->l[wire];
	if (l->fd >= 0)
		return l->ifindex;
	l->arena = mmap(NULL, VFABD_DELAY_BYTES, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	l->q = calloc(VFABD_DELAY_FRAMES, sizeof(*l->q));
	if (l->arena == MAP_FAILED || !l->q) {
		if (l->arena != MAP_FAILED)
			munmap(l->arena, VFABD_DELAY_BYTES);
		l->arena = NULL;
		free(l->q);
		l->q = NULL;
		return -ENOMEM;
	}
	rc = vfab_netns_run(nsfd, make_tap, &t);
	if (rc)
		return rc;
	pthread_mutex_lock(&dl->mu);
	l->fd = t.fd;
	l->ifindex = t.ifindex;
	pthread_mutex_unlock(&dl->mu);
	ev.data.u32 = wire;
	if (epoll_ctl(dl->epfd, EPOLL_CTL_ADD, l->fd, &ev))
		return -errno;
	if (!dl->started) {
		rc = pthread_create(&dl->th, NULL, run, dl);
		if (rc)
			return -rc;
		dl->started = true;
	}
	return t.ifindex;
}

void vfabd_delay_set(struct vfabd_delay *dl, uint32_t wire, const struct vfabd_delay_lat *lat)
{
	if (wire >= dl->n)
		return;
	pthread_mutex_lock(&dl->mu);
	dl->s[wire].lat = *lat;
	pthread_mutex_unlock(&dl->mu);
}

void vfabd_delay_source(struct vfabd_delay *dl, uint32_t wire, const uint8_t mac[6],
			const struct vfabd_delay_addr *addrs, uint32_t n)
{
	struct source *s;

	if (wire >= dl->n)
		return;
	s = &dl->s[wire];
	pthread_mutex_lock(&dl->mu);
	s->has_mac = mac != NULL;
	if (mac)
		memcpy(s->mac, mac, 6);
	s->naddr = n < VFABD_DELAY_ADDRS ? n : VFABD_DELAY_ADDRS;
	memcpy(s->addr, addrs, s->naddr * sizeof(*addrs));
	pthread_mutex_unlock(&dl->mu);
}

void vfabd_delay_remote(struct vfabd_delay *dl, const struct vfabd_delay_prefix *p, uint32_t n,
			const struct vfabd_delay_lat *lat)
{
	pthread_mutex_lock(&dl->mu);
	dl->nremote = n < VFABD_DELAY_PREFIXES ? n : VFABD_DELAY_PREFIXES;
	if (dl->nremote)
		memcpy(dl->remote, p, dl->nremote * sizeof(*p));
	dl->s[dl->n].lat = *lat;
	dl->s[dl->n].lat.leaf = UINT32_MAX; /* no leaf of this machine */
	pthread_mutex_unlock(&dl->mu);
}

uint64_t vfabd_delay_drops(const struct vfabd_delay *dl, uint32_t wire)
{
	return wire < dl->n ? atomic_load(&dl->l[wire].drops) : 0;
}
