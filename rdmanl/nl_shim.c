/* SPDX-License-Identifier: MIT */
#include "rdmanl/nl_shim.h"

#include <dlfcn.h>
#include <errno.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "provider/vfab_preload.h"
#include "rdmanl/nl_msg.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FD 65536

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

typedef int (*answer_fn)(const void *, size_t, uint32_t, struct vfab_nl_out *);

/* One socket: the far end of its socketpair (holds a byte while replies wait) and the replies. */
struct nl_sock {
	int fd, peer;
	uint32_t portid;
	struct vfab_nl_out q;
	struct nl_sock *next;
};

/* Which fds are ours: one bit each, tested on every call interposed here. */
static uint64_t nl_bits[MAX_FD / 64];
static struct nl_sock *socks;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static answer_fn answer;
static uint32_t next_portid;

static struct {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	int (*close)(int);
} libc;

/* libc's own name (resolved on first use: a constructor may call before ours runs). */
static void *next_sym(void **slot, const char *name)
{
	void *f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);

	if (!f) {
		f = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, f, __ATOMIC_RELEASE);
	}
	return f;
}
#define NEXT(name) ((__typeof__(libc.name))next_sym((void **)&libc.name, #name))

static void load(void)
{
	void *h = vfab_preload_sibling(VFAB_NL_LIB);

	if (h)
		answer = (answer_fn)dlsym(h, VFAB_NL_LIB_ANSWER);
}

static int is_nl(int fd)
{
	return fd >= 0 && fd < MAX_FD && (nl_bits[fd / 64] >> (fd % 64) & 1);
}

/* The socket of fd, under lock. */
static struct nl_sock *find(int fd)
{
	for (struct nl_sock *s = socks; s; s = s->next)
		if (s->fd == fd)
			return s;
	return NULL;
}

/* Port ids as the kernel's autobind gives them: the pid first, then negative numbers. */
static uint32_t autobind(void)
{
	return next_portid++ ? (uint32_t)(-4096 - (int32_t)next_portid) : (uint32_t)getpid();
}

EXPORT int socket(int domain, int type, int protocol)
{
	struct nl_sock *s;
	int sv[2];

	if (domain != AF_NETLINK || protocol != NETLINK_RDMA)
		return NEXT(socket)(domain, type, protocol);
	pthread_once(&once, load);
	if (!answer)
		return NEXT(socket)(domain, type, protocol);
	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_DGRAM | (type & (SOCK_CLOEXEC | SOCK_NONBLOCK)), 0, sv)) {
		free(s);
		return -1;
	}
	if (sv[0] >= MAX_FD) {
		NEXT(close)(sv[0]);
		NEXT(close)(sv[1]);
		free(s);
		errno = EMFILE;
		return -1;
	}
	s->fd = sv[0];
	s->peer = sv[1];
	pthread_mutex_lock(&lock);
	s->next = socks;
	socks = s;
	__atomic_fetch_or(&nl_bits[s->fd / 64], 1ull << (s->fd % 64), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	return s->fd;
}

EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	const struct sockaddr_nl *nl = (const struct sockaddr_nl *)addr;
	struct nl_sock *s;

	if (!is_nl(fd))
		return NEXT(bind)(fd, addr, len);
	if (!addr || len < sizeof(*nl) || nl->nl_family != AF_NETLINK) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&lock);
	s = find(fd);
	if (s && !s->portid)
		s->portid = nl->nl_pid ? nl->nl_pid : autobind();
	pthread_mutex_unlock(&lock);
	return 0;
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
	struct nl_sock *s;

	if (!is_nl(fd))
		return NEXT(getsockname)(fd, addr, len);
	pthread_mutex_lock(&lock);
	s = find(fd);
	if (s && !s->portid)
		s->portid = autobind();
	nl.nl_pid = s ? s->portid : 0;
	pthread_mutex_unlock(&lock);
	memcpy(addr, &nl, *len < sizeof(nl) ? *len : sizeof(nl));
	*len = sizeof(nl);
	return 0;
}

/* Netlink's own options (NETLINK_EXT_ACK, NETLINK_CAP_ACK, ...) are taken and have no effect. */
EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (is_nl(fd) && level == SOL_NETLINK)
		return 0;
	return NEXT(setsockopt)(fd, level, name, val, len);
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	if (is_nl(fd) && level == SOL_NETLINK) {
		memset(val, 0, *len);
		return 0;
	}
	return NEXT(getsockopt)(fd, level, name, val, len);
}

/* A request: its answers are queued, and the socket made readable. */
static ssize_t request(int fd, const struct iovec *iov, size_t iovcnt)
{
	struct vfab_nl_out out = {0};
	size_t len = 0, at = 0;
	struct nl_sock *s;
	uint8_t *buf;
	int ret;

	for (size_t i = 0; i < iovcnt; i++)
		len += iov[i].iov_len;
	buf = malloc(len ? len : 1);
	if (!buf) {
		errno = ENOBUFS;
		return -1;
	}
	for (size_t i = 0; i < iovcnt; i++) {
		memcpy(buf + at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	pthread_mutex_lock(&lock);
	s = find(fd);
	if (s && !s->portid)
		s->portid = autobind();
	ret = s ? answer(buf, len, s->portid, &out) : -EBADF;
	if (s && out.head) {
		int was_empty = !s->q.head;

		if (s->q.tail)
			s->q.tail->next = out.head;
		else
			s->q.head = out.head;
		s->q.tail = out.tail;
		out.head = NULL;
		if (was_empty)
			NEXT(send)(s->peer, "", 1, MSG_DONTWAIT);
	}
	pthread_mutex_unlock(&lock);
	while (out.head) {
		struct vfab_nl_dgram *d = out.head;

		out.head = d->next;
		free(d);
	}
	free(buf);
	if (ret < 0) {
		errno = ret == -ENOMEM ? ENOBUFS : -ret;
		return -1;
	}
	return (ssize_t)len;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
	if (!is_nl(fd))
		return NEXT(sendmsg)(fd, msg, flags);
	return request(fd, msg->msg_iov, msg->msg_iovlen);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags, const struct sockaddr *to,
		      socklen_t tolen)
{
	struct iovec iov = {(void *)buf, len};

	if (!is_nl(fd))
		return NEXT(sendto)(fd, buf, len, flags, to, tolen);
	return request(fd, &iov, 1);
}

EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
	struct iovec iov = {(void *)buf, len};

	if (!is_nl(fd))
		return NEXT(send)(fd, buf, len, flags);
	return request(fd, &iov, 1);
}

/*
 * The next answer into msg, as a netlink socket gives a datagram: cut to
 * the buffer (MSG_TRUNC in msg_flags; its whole length returned if asked
 * with MSG_TRUNC), left queued under MSG_PEEK, from the kernel (port 0).
 * Nothing queued: the socket's own recvmsg, which blocks or says EAGAIN.
 */
static ssize_t reply(int fd, struct msghdr *msg, int flags)
{
	struct sockaddr_nl from = {.nl_family = AF_NETLINK};
	struct vfab_nl_dgram *d;
	struct nl_sock *s;
	size_t at = 0;

	pthread_mutex_lock(&lock);
	s = find(fd);
	d = s ? s->q.head : NULL;
	if (!d) {
		pthread_mutex_unlock(&lock);
		return NEXT(recvmsg)(fd, msg, flags);
	}
	msg->msg_flags = 0;
	for (size_t i = 0; i < msg->msg_iovlen && at < d->len; i++) {
		size_t n =
		    d->len - at < msg->msg_iov[i].iov_len ? d->len - at : msg->msg_iov[i].iov_len;

		memcpy(msg->msg_iov[i].iov_base, d->data + at, n);
		at += n;
	}
	if (at < d->len)
		msg->msg_flags |= MSG_TRUNC;
	if (msg->msg_name) {
		memcpy(msg->msg_name, &from,
		       msg->msg_namelen < sizeof(from) ? msg->msg_namelen : sizeof(from));
		msg->msg_namelen = sizeof(from);
	}
	msg->msg_controllen = 0;
	if (flags & MSG_TRUNC)
		at = d->len;
	if (!(flags & MSG_PEEK)) {
		s->q.head = d->next;
		if (!s->q.head) {
			char byte;

			s->q.tail = NULL;
			NEXT(recv)(fd, &byte, 1, MSG_DONTWAIT);
		}
		free(d);
	}
	pthread_mutex_unlock(&lock);
	return (ssize_t)at;
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	if (!is_nl(fd))
		return NEXT(recvmsg)(fd, msg, flags);
	return reply(fd, msg, flags);
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *from,
			socklen_t *fromlen)
{
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (!is_nl(fd))
		return NEXT(recvfrom)(fd, buf, len, flags, from, fromlen);
	if (from && fromlen) {
		msg.msg_name = from;
		msg.msg_namelen = *fromlen;
	}
	n = reply(fd, &msg, flags);
	if (n >= 0 && from && fromlen)
		*fromlen = msg.msg_namelen;
	return n;
}

EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
	struct iovec iov = {buf, len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (!is_nl(fd))
		return NEXT(recv)(fd, buf, len, flags);
	return reply(fd, &msg, flags);
}

void vfab_nl_shim_close(int fd)
{
	struct nl_sock **p, *s = NULL;

	if (!is_nl(fd))
		return;
	pthread_mutex_lock(&lock);
	for (p = &socks; *p; p = &(*p)->next)
		if ((*p)->fd == fd) {
			s = *p;
			*p = s->next;
			break;
		}
	__atomic_fetch_and(&nl_bits[fd / 64], ~(1ull << (fd % 64)), __ATOMIC_RELEASE);
	pthread_mutex_unlock(&lock);
	if (!s)
		return;
	NEXT(close)(s->peer);
	while (s->q.head) {
		struct vfab_nl_dgram *d = s->q.head;

		s->q.head = d->next;
		free(d);
	}
	free(s);
}
