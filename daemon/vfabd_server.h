/* SPDX-License-Identifier: MIT */
/*
 * vfabd's event loop: the control socket, signals, the tick and the
 * deadlines of timed faults on one poll(), dispatching to the modules.
 */
#ifndef VFAB_DAEMON_VFABD_SERVER_H
#define VFAB_DAEMON_VFABD_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#define VFABD_TICK_MS 250  /* sysfs counters are refreshed at this period */
#define VFABD_REAP_TICKS 2 /* the reaper runs every 2nd tick (500 ms) */

struct vfabd;
struct vfabd_conn;

/* The loop's state (fds are opened by vfabd.c, which owns the run dir). */
struct vfabd_server {
	int listen_fd;
	int signal_fd;
	int timer_fd;
	struct vfabd_conn *conns;
	size_t nconns, cap;
	size_t max_conns; /* then new clients are told so and closed */
	bool stop;
	bool accept_paused; /* out of fds: the listening socket rests until the next tick */
	unsigned ticks;
};

/* Runs until SIGTERM/SIGINT or SHUTDOWN. 0, or -errno on a fatal error. */
int vfabd_serve(struct vfabd *d);
/* Sends what is queued (best effort) and closes every connection. */
void vfabd_close_all(struct vfabd *d);

#endif /* VFAB_DAEMON_VFABD_SERVER_H */
