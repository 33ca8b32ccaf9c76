/* SPDX-License-Identifier: MIT */
/*
 * A client connection of the control socket and the replies queued on it
 * (line protocol of docs/DESIGN.md). Below every request module: they reply
 * through here, the server loop sends what is queued.
 */
#ifndef VFAB_DAEMON_VFABD_CONN_H
#define VFAB_DAEMON_VFABD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define VFABD_LINE_MAX 1024 /* HELLO carries a FIFO path under the run dir */

/*
 * Connections one user who is neither root nor vfabd's own user may hold,
 * on the control socket and on the wire each (a quarter of either table):
 * one user's processes cannot take every slot from the others', as
 * RLIMIT_NPROC keeps one user from taking every process.
 */
#define VFABD_CONNS_PER_USER 1024

/* Root or vfabd's own user: may change the fabric, and has no quota. */
bool vfabd_uid_privileged(uid_t uid);

struct vfabd_conn {
	int fd;
	pid_t pid;	/* from HELLO (the kernel's peer pid, never a claim); 0 before */
	pid_t peer_pid; /* SO_PEERCRED at accept: who connected */
	uid_t peer_uid;
	gid_t peer_gid;
	unsigned long long peer_start; /* its start time (/proc), 0 unknown */
	int pidfd;	 /* the connecting process (SO_PEERPIDFD or pidfd_open), -1 none */
	bool bye;	 /* closed cleanly: its objects were freed by their owner */
	bool privileged; /* peer is root or vfabd's own user: may change the fabric */
	int32_t hca;	 /* HELLO hca=: the context's HCA (region index), -1 none */
	char *async;	 /* HELLO async=: the context's async event FIFO, NULL none */
	dev_t async_dev; /* ... and its inode when registered (owned by peer_uid) */
	ino_t async_ino;
	char *out; /* reply bytes not yet sent (large REPORTs) */
	size_t out_len, out_off;
	size_t len;
	char buf[VFABD_LINE_MAX];
};

/* Replies. Queued: a reply never blocks the loop. */
void vfabd_reply(struct vfabd_conn *c, const char *text);
void vfabd_replyf(struct vfabd_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "ERR <ENAME> message": the errno name lets clients tell usage from failure. */
void vfabd_reply_err(struct vfabd_conn *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* "OK <n>\n" and then n bytes of body; takes ownership of body (malloc'd). */
void vfabd_reply_body(struct vfabd_conn *c, char *body, size_t n);

/* Sends what the socket takes now; false when the connection is broken. */
bool vfabd_conn_flush(struct vfabd_conn *c);
/* Closes the socket and frees what the connection holds. */
void vfabd_conn_close(struct vfabd_conn *c);
/*
 * Whether the connecting process has exited. Told by its pidfd, which names
 * that process and no later one with the same pid; without a pidfd, never
 * (the reaper's look at /proc decides later).
 */
bool vfabd_conn_peer_gone(const struct vfabd_conn *c);
/* Reply bytes queued on all connections together (capped, see vfabd_conn.c). */
size_t vfabd_conn_out_total(void);
/* Connections that said HELLO and not BYE: the client contexts. */
unsigned vfabd_conn_clients(const struct vfabd_conn *v, size_t n);

#endif /* VFAB_DAEMON_VFABD_CONN_H */
