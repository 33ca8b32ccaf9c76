/* SPDX-License-Identifier: MIT */
/*
 * Replies are queued per connection and sent by the loop as the peer reads
 * them (vfabd_conn_flush): a REPORT can be megabytes, and a slow reader must
 * not stall the loop.
 */

#include "vfabd_conn.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define OUT_MAX (64u << 20)	   /* a client that reads nothing loses its connection */
#define OUT_TOTAL_MAX (256u << 20) /* all connections: many such clients cannot grow vfabd */

static size_t out_total; /* bytes held in every connection's out buffer */

bool vfabd_uid_privileged(uid_t uid)
{
	return uid == 0 || uid == geteuid();
}

size_t vfabd_conn_out_total(void)
{
	return out_total;
}

/* Queues bytes for the peer; a connection past OUT_MAX (or all past
 * OUT_TOTAL_MAX) is shut down. */
static void queue_out(struct vfabd_conn *c, const char *data, size_t n)
{
	size_t pending = c->out_len - c->out_off;
	char *out;

	if (pending + n > OUT_MAX || out_total + n > OUT_TOTAL_MAX) {
		shutdown(c->fd, SHUT_RDWR);
		return;
	}
	if (c->out_off) { /* compact: what was sent is gone */
		memmove(c->out, c->out + c->out_off, pending);
		out_total -= c->out_off;
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
	out_total += n;
}

static void drop_out(struct vfabd_conn *c)
{
	out_total -= c->out_len;
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
}

bool vfabd_conn_flush(struct vfabd_conn *c)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EINTR;
		c->out_off += (size_t)n;
	}
	drop_out(c);
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

void vfabd_conn_close(struct vfabd_conn *c)
{
	close(c->fd);
	if (c->pidfd >= 0)
		close(c->pidfd);
	free(c->async);
	drop_out(c);
}

bool vfabd_conn_peer_gone(const struct vfabd_conn *c)
{
	struct pollfd p = {.fd = c->pidfd, .events = POLLIN};

	/* A pidfd polls readable once its process has exited. */
	return c->pidfd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

unsigned vfabd_conn_clients(const struct vfabd_conn *v, size_t n)
{
	unsigned clients = 0;

	for (size_t i = 0; i < n; i++)
		clients += v[i].pid && !v[i].bye;
	return clients;
}
